// SPDX-License-Identifier: Apache-2.0
// The route's learned times to first token (upstream/first_token_times.hpp), which `hedge:
// {after: Nx}` multiplies: a quantile within a bucket's width of the true one, none before
// enough samples, and an estimate that follows a change of the times, by count and by time.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "upstream/first_token_times.hpp"

namespace llmux::upstream {
namespace {

using namespace std::chrono_literals;
using Times = FirstTokenTimes;
// A clock reading (core/clock.hpp's nanoseconds); the samples of one test all come at it unless
// the test is about time.
constexpr std::int64_t kNow = 1'000'000'000'000;
constexpr std::int64_t kSecondNs = 1'000'000'000;

TEST(FirstTokenTimes, NoEstimateBeforeEnoughSamples) {
  Times times;
  for (std::uint32_t i = 0; i + 1 < Times::kMinSamples; ++i) times.record(100ms, kNow);
  EXPECT_FALSE(times.quantile(0.99));
  times.record(100ms, kNow);
  ASSERT_TRUE(times.quantile(0.99));
}

TEST(FirstTokenTimes, QuantileIsWithinOneBucketAboveTheTrueOne) {
  Times times;
  // 1..900 ms, once each (fewer than a halving's worth): the p99 is 891 ms, the median 450 ms.
  static_assert(900 < Times::kHalveEvery);
  for (int ms = 1; ms <= 900; ++ms) times.record(std::chrono::milliseconds(ms), kNow);
  for (const auto& [quantile, truth] : {std::pair{0.99, 891ms}, {0.5, 450ms}, {0.9, 810ms}}) {
    const auto estimate = times.quantile(quantile);
    ASSERT_TRUE(estimate);
    EXPECT_GE(*estimate, truth) << quantile;
    // A bucket is 2^(1/8) wide: the bound is at most 9.1% above the truth.
    EXPECT_LE(estimate->count(), std::chrono::nanoseconds(truth).count() * 1091 / 1000) << quantile;
  }
}

TEST(FirstTokenTimes, BucketsCoverTheirTimes) {
  for (const std::chrono::nanoseconds time :
       {std::chrono::nanoseconds(0), std::chrono::nanoseconds(999us), std::chrono::nanoseconds(1ms),
        std::chrono::nanoseconds(3ms), std::chrono::nanoseconds(250ms),
        std::chrono::nanoseconds(7s), std::chrono::nanoseconds(100s),
        std::chrono::nanoseconds(1h)}) {
    const int bucket = Times::bucket_of(time);
    ASSERT_GE(bucket, 0);
    ASSERT_LT(bucket, Times::kBuckets);
    if (bucket < Times::kBuckets - 1) {
      EXPECT_LT(time, Times::bucket_bound(bucket)) << time.count();
    }
    if (bucket > 0) {
      EXPECT_GE(time, Times::bucket_bound(bucket - 1)) << time.count();
    }
  }
}

TEST(FirstTokenTimes, FollowsTheRecentPast) {
  Times times;
  for (int i = 0; i < 3000; ++i) times.record(2s, kNow);
  ASSERT_GE(*times.quantile(0.5), 2s);
  // The times fall tenfold: after a few halvings the old ones no longer hold the median.
  for (std::uint64_t i = 0; i < 4 * Times::kHalveEvery; ++i) times.record(200ms, kNow);
  EXPECT_LT(*times.quantile(0.5), 250ms);
  EXPECT_GE(*times.quantile(0.5), 200ms);
}

TEST(FirstTokenTimes, ABurstOfSlowFirstTokensFadesWithTime) {
  Times times;
  // Every client at once on a cold fleet: 16 first tokens at 250 ms, then steady traffic of 5
  // requests a second at 50 ms.
  for (int i = 0; i < 16; ++i) times.record(250ms, kNow);
  std::int64_t now = kNow;
  auto steady = [&](int seconds) {
    for (int i = 0; i < 5 * seconds; ++i) {
      now += kSecondNs / 5;
      times.record(50ms, now);
    }
  };
  steady(10);
  // 16 of 66 samples (fewer than a halving's count): the burst holds the p99 ...
  EXPECT_GE(*times.quantile(0.99), 250ms);
  // ... until halvings by time leave less than 1% of it.
  steady(60);
  EXPECT_LT(*times.quantile(0.99), 55ms);
  EXPECT_GE(*times.quantile(0.99), 50ms);
}

TEST(FirstTokenTimes, ARouteWithFewRequestsKeepsItsEstimate) {
  Times times;
  std::int64_t now = kNow;
  // One request a minute for an hour: halving each time would leave too few for an estimate.
  for (int minute = 0; minute < 60; ++minute) {
    now += 60 * kSecondNs;
    times.record(80ms, now);
  }
  const auto p99 = times.quantile(0.99);
  ASSERT_TRUE(p99);
  EXPECT_GE(*p99, 80ms);
}

TEST(FirstTokenTimes, WorkersRecordTogether) {
  Times times;
  std::vector<std::thread> workers;
  for (int worker = 0; worker < 4; ++worker)
    workers.emplace_back([&times, worker] {
      for (int i = 0; i < 200; ++i)
        times.record(std::chrono::milliseconds(10 * (worker + 1)), kNow);
    });
  for (auto& worker : workers) worker.join();
  // 800 samples of 10, 20, 30 and 40 ms: the p99 is 40 ms's bucket.
  const auto p99 = times.quantile(0.99);
  ASSERT_TRUE(p99);
  EXPECT_GE(*p99, 40ms);
  EXPECT_LT(*p99, 44ms);
}

}  // namespace
}  // namespace llmux::upstream
