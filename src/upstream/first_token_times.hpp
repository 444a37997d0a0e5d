// SPDX-License-Identifier: Apache-2.0
#pragma once
// A route's recent times to first token, learned for hedging (gateway/hedge.hpp: `after: 2x`
// waits twice the p99 of these): a histogram of logarithmic buckets, halved every kHalveEvery
// samples so that it follows the recent past rather than the whole life of the process.
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
  /// Every this many samples the counts are halved (the older half of the past weighs less).
  static constexpr std::uint64_t kHalveEvery = 1000;

  void record(std::chrono::nanoseconds time);

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
};

}  // namespace llmux::upstream
