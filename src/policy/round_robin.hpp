// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <atomic>
#include <cstdint>

#include "policy/policy.hpp"

namespace llmux::policy {

/// Weighted round robin: each backend gets `weight` turns per cycle, interleaved (3:1 gives
/// a b a a). Tried and saturated backends leave the cycle for that pick, so their turns are
/// spread over the others by weight. Lock-free (one atomic counter, no allocation with up to 64
/// candidates).
class RoundRobin final : public Policy {
 public:
  std::string_view name() const override { return "round_robin"; }
  Backend* select(const PickContext&, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;

 private:
  std::atomic<std::uint64_t> next_{0};
};

/// The first backend in route order that is available: primary with failover.
class First final : public Policy {
 public:
  std::string_view name() const override { return "first"; }
  Backend* select(const PickContext&, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;
};

}  // namespace llmux::policy
