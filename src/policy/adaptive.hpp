// SPDX-License-Identifier: Apache-2.0
#pragma once
// adaptive: each request goes where it adds the most to what the fleet produces — the backend
// whose total decode rate grows most with one more request in flight (n+1 streams at its
// per-stream rate for n+1, minus n at the rate for n), read from the backend's learned capacity
// curve (upstream/capacity.hpp). Allocating each request by its marginal gain is what maximises
// the throughput of machines whose curves flatten as they fill (continuous batching), so a mixed
// fleet is used in proportion to what each machine can do, with no weights to tune: a machine
// three times slower gets requests once the fast one is full enough that one more stream there
// adds less than one stream on the slow one. (Placing each request where it alone would finish
// soonest instead piles everything on the fastest machine and ignores how each new stream slows
// the others there.) Before any sample a backend is assumed to be like the fleet's others (the
// mean single-stream rate of those with samples, else 50 tokens/s), so a new fleet starts as
// least_inflight. Ties (within 1%) go as least_inflight's. Lock-free; no allocation.
#include <atomic>
#include <cstdint>

#include "policy/policy.hpp"

namespace llmux::policy {

class Adaptive final : public Policy {
 public:
  std::string_view name() const override { return "adaptive"; }
  Backend* select(const PickContext& ctx, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;

  /// Tokens per second the backend's total would grow by with one more request in flight.
  static double marginal_gain(const Backend& backend, double prior_single);

 private:
  std::atomic<std::uint64_t> rotate_{0};
};

}  // namespace llmux::policy
