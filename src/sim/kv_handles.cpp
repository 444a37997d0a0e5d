// SPDX-License-Identifier: Apache-2.0
#include "sim/kv_handles.hpp"

namespace llmux::sim {

void KvHandles::add(HeldKv held) {
  by_expiry_.emplace(held.expires_at, held.request_id);
  std::string key = held.request_id;
  held_[std::move(key)] = std::move(held);
}

std::optional<HeldKv> KvHandles::take(std::string_view request_id,
                                      const std::vector<std::int64_t>& block_ids) {
  auto it = held_.find(std::string(request_id));
  if (it == held_.end() || it->second.block_ids != block_ids) return std::nullopt;
  HeldKv held = std::move(it->second);
  held_.erase(it);
  auto [first, last] = by_expiry_.equal_range(held.expires_at);
  for (auto entry = first; entry != last; ++entry) {
    if (entry->second == held.request_id) {
      by_expiry_.erase(entry);
      break;
    }
  }
  return held;
}

std::vector<HeldKv> KvHandles::take_expired(double now) {
  std::vector<HeldKv> expired;
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    auto it = held_.find(by_expiry_.begin()->second);
    by_expiry_.erase(by_expiry_.begin());
    if (it == held_.end()) continue;
    expired.push_back(std::move(it->second));
    held_.erase(it);
  }
  return expired;
}

std::optional<double> KvHandles::next_expiry() const {
  if (by_expiry_.empty()) return std::nullopt;
  return by_expiry_.begin()->first;
}

}  // namespace llmux::sim
