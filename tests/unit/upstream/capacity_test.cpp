// SPDX-License-Identifier: Apache-2.0
// CapacityCurve: a backend's decode rate per stream by in-flight count, learned from samples
// (policy/adaptive.hpp's sampler); levels without samples follow the nearest one by vLLM's shape.
#include "upstream/capacity.hpp"

#include <gtest/gtest.h>

namespace llmux::upstream {
namespace {

TEST(CapacityCurve, EmptyFollowsThePrior) {
  CapacityCurve c;
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.single_rate(), 0.0);
  EXPECT_DOUBLE_EQ(c.rate(1, 40.0), 40.0);
  EXPECT_DOUBLE_EQ(c.rate(8, 40.0), 40.0 * CapacityCurve::shape(8));
  EXPECT_NEAR(8 * CapacityCurve::shape(8), 6.0, 1e-9) << "eight streams give six times one";
}

TEST(CapacityCurve, ALevelAveragesItsSamplesAndOthersScaleFromTheNearest) {
  CapacityCurve c;
  c.add_sample(4, 30.0);
  c.add_sample(4, 40.0);
  EXPECT_DOUBLE_EQ(c.rate(4, 999), 35.0);
  // Level 5 has none: from level 4 by the shape; level 1 likewise.
  EXPECT_NEAR(c.rate(5, 999), 35.0 * CapacityCurve::shape(5) / CapacityCurve::shape(4), 1e-4);
  EXPECT_NEAR(c.single_rate(), 35.0 / CapacityCurve::shape(4), 1e-4);
  c.add_sample(1, 20.0);  // a level of its own now
  EXPECT_DOUBLE_EQ(c.rate(1, 999), 20.0);
  EXPECT_NEAR(c.rate(2, 999), 20.0 * CapacityCurve::shape(2), 1e-4) << "nearest: level 1";
  const auto levels = c.levels();
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[0].inflight, 1);
  EXPECT_EQ(levels[1].inflight, 4);
  EXPECT_EQ(levels[1].samples, 2u);
}

TEST(CapacityCurve, FollowsAMachineThatChanges) {
  CapacityCurve c;
  for (int i = 0; i < 50; ++i) c.add_sample(2, 40.0);
  for (int i = 0; i < 40; ++i) c.add_sample(2, 10.0);
  EXPECT_LT(c.rate(2, 0), 11.0);
  c.add_sample(3, -1.0);  // nonsense is ignored
  c.add_sample(3, 0.0);
  EXPECT_EQ(c.levels().size(), 1u);
}

}  // namespace
}  // namespace llmux::upstream
