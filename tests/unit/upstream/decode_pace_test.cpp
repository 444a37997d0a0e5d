// SPDX-License-Identifier: Apache-2.0
// A backend's decode pace (upstream/decode_pace.hpp), which the routes that hedge compare: the
// average gap between its streams' tokens follows a slowdown and a recovery within a few events,
// and says nothing once no event came lately.
#include <gtest/gtest.h>

#include "upstream/decode_pace.hpp"

namespace llmux::upstream {
namespace {

constexpr std::int64_t kMillisecondNs = 1'000'000;
constexpr std::int64_t kStart = 1'000'000 * kMillisecondNs;

TEST(DecodePace, NothingBeforeTheFirstEvent) {
  const DecodePace pace;
  EXPECT_FALSE(pace.gap(kStart));
}

TEST(DecodePace, FollowsASlowdownAndARecoveryWithinAFewEvents) {
  DecodePace pace;
  std::int64_t now = kStart;
  // Eight streams, a token each every 20 ms.
  for (int event = 0; event < 80; ++event)
    pace.record(20 * kMillisecondNs, 1, now += 20 * kMillisecondNs / 8);
  ASSERT_EQ(*pace.gap(now), 20 * kMillisecondNs);
  // Ten times slower: one step of the batch (eight events) brings the average past 4x.
  for (int event = 0; event < 8; ++event)
    pace.record(200 * kMillisecondNs, 1, now += 200 * kMillisecondNs / 8);
  EXPECT_GT(*pace.gap(now), 4 * 20 * kMillisecondNs);
  EXPECT_LT(*pace.gap(now), 200 * kMillisecondNs);
  // Back to full speed: two steps bring it under twice the old gap.
  for (int event = 0; event < 16; ++event)
    pace.record(20 * kMillisecondNs, 1, now += 20 * kMillisecondNs / 8);
  EXPECT_LT(*pace.gap(now), 2 * 20 * kMillisecondNs);
}

TEST(DecodePace, SeveralEventsInOneReadWeighAsMany) {
  DecodePace one_by_one;
  DecodePace together;
  one_by_one.record(10 * kMillisecondNs, 1, kStart);
  together.record(10 * kMillisecondNs, 1, kStart);
  for (int event = 0; event < 4; ++event)
    one_by_one.record(50 * kMillisecondNs, 1, kStart + kMillisecondNs);
  together.record(50 * kMillisecondNs, 4, kStart + kMillisecondNs);
  EXPECT_NEAR(static_cast<double>(*together.gap(kStart + kMillisecondNs)),
              static_cast<double>(*one_by_one.gap(kStart + kMillisecondNs)), 1e3);
}

TEST(DecodePace, SaysNothingOnceNoEventCameLately) {
  DecodePace pace;
  pace.record(30 * kMillisecondNs, 1, kStart);
  EXPECT_TRUE(pace.gap(kStart + DecodePace::kFreshNs - 1));
  EXPECT_FALSE(pace.gap(kStart + DecodePace::kFreshNs));
  // A stale average is not carried on: the next gap starts it again.
  pace.record(90 * kMillisecondNs, 1, kStart + 3 * DecodePace::kFreshNs);
  EXPECT_EQ(*pace.gap(kStart + 3 * DecodePace::kFreshNs), 90 * kMillisecondNs);
}

}  // namespace
}  // namespace llmux::upstream
