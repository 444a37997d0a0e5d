// SPDX-License-Identifier: Apache-2.0
#pragma once
// A route's recent times to first token, learned for hedging (gateway/hedge.hpp: `after: 2x`
// waits twice the p99 of these): a histogram of logarithmic buckets, halved every kHalveEvery
// samples and at most every kHalveAfter of time, so that it follows the recent past rather than
// the whole life of the process: a burst of slow first tokens (every client starting at once)
// holds the p99 for tens of seconds, not for the next thousand requests.
//
// Thread-safe without locks: every worker records into the same counters (relaxed atomics; a
// count lost to a concurrent halving only blurs an estimate).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace llmux::upstream {

class FirstTokenTimes {
 public:
  /// Eight buckets per doubling from 1 ms: bucket i holds times below 2^((i+1)/8) ms, the last
  /// one everything from ~4.4 minutes on.
  static constexpr int kBucketsPerDoubling = 8;
  static constexpr int kBuckets = 18 * kBucketsPerDoubling;
  /// No estimate from fewer samples than this.
  static constexpr std::uint32_t kMinSamples = 20;
  /// Every this many samples the counts are halved (the older half of the past weighs less) ...
  static constexpr std::uint64_t kHalveEvery = 1000;
  /// ... and at the first sample this long after the last halving, when at least 4 x
  /// kMinSamples are counted (a route with few requests keeps its estimate).
  static constexpr std::chrono::seconds kHalveAfter{10};

  /// A first token `time` after its request was sent, learned at `now_ns` (core/clock.hpp).
  void record(std::chrono::nanoseconds time, std::int64_t now_ns);

  /// The `quantile` (0-1) of the recent times, as the upper bound of the bucket it falls in (at
  /// most 9% above the true value); none before kMinSamples samples.
  std::optional<std::chrono::nanoseconds> quantile(double quantile) const;

  /// The upper bound of bucket `index` (its times are below it).
  static std::chrono::nanoseconds bucket_bound(int index);
  /// The bucket a time falls in.
  static int bucket_of(std::chrono::nanoseconds time);

 private:
  std::array<std::atomic<std::uint32_t>, kBuckets> counts_{};
  std::atomic<std::uint64_t> recorded_{0};
  std::atomic<std::int64_t> halved_ns_{0};  // the last halving (or the first sample)
};

}  // namespace llmux::upstream
