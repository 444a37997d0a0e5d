// SPDX-License-Identifier: Apache-2.0
#include "policy/least_inflight.hpp"

namespace llmux::policy {

int compare_load(const Backend& left, const Backend& right) {
  const std::int64_t wa = weight_of(left), wb = weight_of(right);
  // left.inflight / wa against right.inflight / wb, without division.
  const std::int64_t ia = left.inflight.load(std::memory_order_relaxed) * wb;
  const std::int64_t ib = right.inflight.load(std::memory_order_relaxed) * wa;
  if (ia != ib) return ia < ib ? -1 : 1;
  const std::int64_t ta = left.outstanding_tokens.load(std::memory_order_relaxed) * wb;
  const std::int64_t tb = right.outstanding_tokens.load(std::memory_order_relaxed) * wa;
  if (ta != tb) return ta < tb ? -1 : 1;
  return 0;
}

Backend* LeastInflight::select(const PickContext&, std::span<Backend* const> candidates,
                               FunctionRef<bool(const Backend&)> accept) {
  const std::size_t n = candidates.size();
  if (n == 0) return nullptr;
  // Ties go to the first one met, starting from a rotating position.
  const std::size_t start = rotate_.fetch_add(1, std::memory_order_relaxed) % n;
  Backend* best = nullptr;
  for (std::size_t k = 0; k < n; ++k) {
    Backend* backend = candidates[(start + k) % n];
    if (!accept(*backend)) continue;
    if (!best || compare_load(*backend, *best) < 0) best = backend;
  }
  return best;
}

}  // namespace llmux::policy
