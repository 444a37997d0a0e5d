// SPDX-License-Identifier: Apache-2.0
#include "policy/round_robin.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace llmux::policy {

Backend* RoundRobin::select(const PickContext&, std::span<Backend* const> candidates,
                            FunctionRef<bool(const Backend&)> accept) {
  // Only the available candidates take part in the cycle, so a tried or saturated backend's
  // turns are spread over the others by weight, not all handed to the one after it (which would
  // then saturate next).
  std::array<Backend*, 64> local;
  std::vector<Backend*> spill;  // more than 64 candidates: never with a validated config
  Backend** avail = local.data();
  if (candidates.size() > local.size()) {
    spill.resize(candidates.size());
    avail = spill.data();
  }
  std::size_t n = 0;
  std::uint64_t total = 0;
  int max_weight = 0;
  for (auto* backend : candidates) {
    if (!accept(*backend)) continue;
    avail[n++] = backend;
    total += static_cast<std::uint64_t>(weight_of(*backend));
    max_weight = std::max(max_weight, weight_of(*backend));
  }
  if (n == 0) return nullptr;
  if (n == 1) return avail[0];
  // Slot s of a cycle of `total` slots: backends take slots round by round, each while it has
  // weight left, so weights 3:1 give a b a a, not a a a b.
  std::uint64_t slot = next_.fetch_add(1, std::memory_order_relaxed) % total;
  for (int round = 0; round < max_weight; ++round) {
    for (std::size_t i = 0; i < n; ++i) {
      if (weight_of(*avail[i]) <= round) continue;
      if (slot == 0) return avail[i];
      --slot;
    }
  }
  return avail[0];  // not reached: the rounds hold exactly `total` slots
}

Backend* First::select(const PickContext&, std::span<Backend* const> candidates,
                       FunctionRef<bool(const Backend&)> accept) {
  for (auto* backend : candidates)
    if (accept(*backend)) return backend;
  return nullptr;
}

}  // namespace llmux::policy
