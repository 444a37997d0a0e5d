// SPDX-License-Identifier: Apache-2.0
#pragma once
// round_robin: smooth weighted round robin, as nginx does it (ngx_http_upstream_round_robin.c's
// "smooth" selection). Each backend keeps a current weight; per pick, every available backend's
// current weight grows by its weight, the one with the largest is chosen (the first in route
// order on a tie) and its current weight drops by the sum of the weights that took part. Over a
// cycle each backend gets `weight` turns, spread out (3:1 gives a a b a, never a a a b), with
// equal weights it alternates exactly, and a tried or saturated backend's turns go to the others
// by weight (it takes no part in that pick, so it banks nothing). O(n) per pick, no list built.
//
// The current weights are atomics indexed by Backend::index, in the policy's own object (made
// anew with each configuration, which is when weights and membership change). Workers picking at
// once may both see the same largest current weight; every addition and subtraction is one atomic
// step, so the weights still sum to zero after every pick and the shares stay as configured.
#include <array>
#include <atomic>
#include <cstdint>

#include "policy/policy.hpp"

namespace llmux::policy {

class RoundRobin final : public Policy {
 public:
  std::string_view name() const override { return "round_robin"; }
  Backend* select(const PickContext&, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;

 private:
  /// One backend's current weight, on a cache line of its own (workers add to all of them).
  struct alignas(64) CurrentWeight {
    std::atomic<std::int64_t> value{0};
  };
  std::array<CurrentWeight, 64> current_{};  // by Backend::index (a validated config: < 64)
};

}  // namespace llmux::policy
