#pragma once
// adaptive: each request goes where it is predicted to finish soonest — its output tokens over
// the per-stream rate the backend would give with one more request in flight, read from the
// backend's learned capacity curve (upstream/capacity.hpp). A mixed fleet is then used in
// proportion to what each machine can do, with no weights to tune: a machine three times slower
// gets a request only when the fast one is busy enough that the slow one would finish it first.
// Before any sample a backend is assumed to be like the fleet's others (the mean single-stream
// rate of those with samples, else 50 tokens/s), so a new fleet starts as least_inflight.
// Ties (equal predictions) go as least_inflight's. Lock-free; no allocation.
#include <atomic>
#include <cstdint>

#include "policy/policy.hpp"

namespace llmux::policy {

class Adaptive final : public Policy {
 public:
  std::string_view name() const override { return "adaptive"; }
  Backend* select(const PickContext& ctx, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;

  /// Seconds `b` would take to generate `output_tokens` with one more request in flight.
  static double predicted_seconds(const Backend& b, std::int64_t output_tokens,
                                  double prior_single);

 private:
  std::atomic<std::uint64_t> rotate_{0};
};

}  // namespace llmux::policy
