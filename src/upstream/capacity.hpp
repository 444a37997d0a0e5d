// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a backend can do, learned from the streams the gateway relays: its decode rate per stream
// as a function of how many requests it has in flight (vLLM's continuous batching: one stream
// alone runs fastest, and each further one slows every stream a little while the machine's total
// grows). No scraping and no config: the adaptive policy samples each event stream it sends to a
// backend every second of decoding (policy/adaptive.hpp: DecodeRateSampler) and reads the curve
// to predict where a request adds the most; GET /admin/backends shows it.
//
// Thread safety: relaxed atomics, written by every worker (a learner, not an accounting: two
// samples landing at once may lose one).
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace llmux::upstream {

class CapacityCurve {
 public:
  static constexpr int kMax = 64;  // in-flight counts above it share its bucket
  /// The shape used where no sample exists yet (the seed's Spark: 8 streams give 6x one), from
  /// the nearest level that has one.
  static double shape(int inflight);

  /// One sample: a stream decoded at `tokens_per_s` while the backend had `inflight`
  /// requests in flight.
  void add_sample(int inflight, double tokens_per_s);
  /// The expected per-stream rate with `inflight` requests in flight: the level's own
  /// average when it has samples, else the nearest level's scaled by shape(), else
  /// `prior_single` × shape(inflight).
  double rate(int inflight, double prior_single) const;
  /// The rate of one stream alone, as the curve suggests (0 when it has no sample).
  double single_rate() const;
  bool empty() const { return levels_.load(std::memory_order_relaxed) == 0; }

  struct Level {
    int inflight;
    double tokens_per_s;
    std::uint32_t samples;
  };
  /// The levels that have samples, in order.
  std::vector<Level> levels() const;

 private:
  static int clamp(int inflight) { return inflight < 1 ? 1 : (inflight > kMax ? kMax : inflight); }
  std::array<std::atomic<float>, kMax + 1> rate_{};
  std::array<std::atomic<std::uint32_t>, kMax + 1> samples_{};
  std::atomic<int> levels_{0};  // levels with samples
};

}  // namespace llmux::upstream
