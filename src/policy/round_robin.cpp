// SPDX-License-Identifier: Apache-2.0
#include "policy/round_robin.hpp"

namespace llmux::policy {

Backend* RoundRobin::select(const PickContext&, std::span<Backend* const> candidates,
                            FunctionRef<bool(const Backend&)> accept) {
  Backend* chosen = nullptr;
  std::int64_t chosen_current = 0;
  std::int64_t total = 0;
  for (Backend* backend : candidates) {
    if (!accept(*backend)) continue;
    const std::int64_t weight = weight_of(*backend);
    auto& current = current_[static_cast<std::size_t>(backend->index) % current_.size()].value;
    const std::int64_t grown = current.fetch_add(weight, std::memory_order_relaxed) + weight;
    total += weight;
    if (!chosen || grown > chosen_current) {
      chosen = backend;
      chosen_current = grown;
    }
  }
  if (chosen)
    current_[static_cast<std::size_t>(chosen->index) % current_.size()].value.fetch_sub(
        total, std::memory_order_relaxed);
  return chosen;
}

}  // namespace llmux::policy
