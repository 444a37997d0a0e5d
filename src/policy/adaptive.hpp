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
//
// It learns the curves itself: each attempt it dispatches gets a DecodeRateSampler
// (on_dispatch), which turns every second of the stream's decoding into a sample of the
// backend's curve. Routes with other policies sample nothing (and pay nothing per stream).
#include <atomic>
#include <cstdint>
#include <memory>

#include "policy/policy.hpp"

namespace llmux::policy {

/// One event stream's sampler: every `window` of decoding, the tokens it got per second and the
/// backend's in-flight count (the mean of the window's two ends) go to the backend's curve.
class DecodeRateSampler final : public AttemptObserver {
 public:
  explicit DecodeRateSampler(Backend& backend, std::int64_t window_ns = 1'000'000'000)
      : backend_(backend), window_ns_(window_ns) {}
  /// Decoding begins with the first token (prefill is not decode): the first window starts.
  void on_first_token(std::uint64_t tokens, std::int64_t now_ns) override;
  /// `tokens`: content tokens the stream has carried so far (a running count).
  void on_tokens(std::uint64_t tokens, std::int64_t now_ns) override;

 private:
  void start_window(std::uint64_t tokens, std::int64_t now_ns, int inflight);
  Backend& backend_;
  std::int64_t window_ns_;
  std::int64_t start_ns_ = 0;
  std::uint64_t start_tokens_ = 0;
  int start_inflight_ = 0;
  bool started_ = false;
};

class Adaptive final : public Policy {
 public:
  std::string_view name() const override { return "adaptive"; }
  Backend* select(const PickContext& ctx, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;
  /// The attempt's stream teaches `backend`'s curve.
  std::unique_ptr<AttemptObserver> on_dispatch(Backend& backend) override;

  /// Tokens per second the backend's total would grow by with one more request in flight.
  static double marginal_gain(const Backend& backend, double prior_single);

 private:
  std::atomic<std::uint64_t> rotate_{0};
};

}  // namespace llmux::policy
