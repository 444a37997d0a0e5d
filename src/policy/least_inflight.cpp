// SPDX-License-Identifier: Apache-2.0
#include "policy/least_inflight.hpp"

namespace llmux::policy {

int compare_load(const Backend& left, const Backend& right) {
  const std::int64_t left_weight = weight_of(left), right_weight = weight_of(right);
  // left.inflight / left_weight against right.inflight / right_weight, without division.
  const std::int64_t left_inflight = left.inflight.load(std::memory_order_relaxed) * right_weight;
  const std::int64_t right_inflight = right.inflight.load(std::memory_order_relaxed) * left_weight;
  if (left_inflight != right_inflight) return left_inflight < right_inflight ? -1 : 1;
  const std::int64_t left_tokens =
      left.outstanding_tokens.load(std::memory_order_relaxed) * right_weight;
  const std::int64_t right_tokens =
      right.outstanding_tokens.load(std::memory_order_relaxed) * left_weight;
  if (left_tokens != right_tokens) return left_tokens < right_tokens ? -1 : 1;
  return 0;
}

Backend* LeastInflight::select(const PickContext&, std::span<Backend* const> candidates,
                               FunctionRef<bool(const Backend&)> accept) {
  const std::size_t count = candidates.size();
  if (count == 0) return nullptr;
  // Ties go to the first one met, starting from a rotating position.
  const std::size_t start = rotate_.fetch_add(1, std::memory_order_relaxed) % count;
  Backend* best = nullptr;
  for (std::size_t k = 0; k < count; ++k) {
    Backend* backend = candidates[(start + k) % count];
    if (!accept(*backend)) continue;
    if (!best || compare_load(*backend, *best) < 0) best = backend;
  }
  return best;
}

}  // namespace llmux::policy
