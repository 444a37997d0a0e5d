// SPDX-License-Identifier: Apache-2.0
// PowerOfTwo: the less loaded of two random available backends; with two backends it is
// least_inflight; the most loaded of three is never taken.
#include "policy/power_of_two.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

TEST(PowerOfTwo, OfTwoBackendsTakesTheLessLoaded) {
  Pool pool({1, 1});
  pool[0].inflight = 4;
  pool[1].inflight = 1;
  PowerOfTwo p;
  for (int i = 0; i < 200; ++i) EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[1]);
}

TEST(PowerOfTwo, NeverTakesTheMostLoadedOfThreeAndSplitsTheRestByChance) {
  Pool pool({1, 1, 1});
  pool[0].inflight = 2;
  pool[1].inflight = 2;
  pool[2].inflight = 9;
  PowerOfTwo p;
  std::vector<int> n(3, 0);
  const int picks = 30000;
  for (int i = 0; i < picks; ++i)
    ++n[static_cast<std::size_t>(p.pick(request(), pool.all(), {})->index)];
  EXPECT_EQ(n[2], 0);
  // Each pair is drawn with probability 1/3; the tie between 0 and 1 goes to the first drawn:
  // 0 is taken with probability 1/3 (pair 0,2) + 1/6 (pair 0,1) = 1/2.
  EXPECT_NEAR(static_cast<double>(n[0]) / picks, 0.5, 0.02);
}

TEST(PowerOfTwo, OneAvailableOrNone) {
  Pool pool({1, 1});
  PowerOfTwo p;
  TriedSet tried;
  tried.add(pool[0]);
  EXPECT_EQ(p.pick(request(), pool.all(), tried), &pool[1]);
  tried.add(pool[1]);
  EXPECT_EQ(p.pick(request(), pool.all(), tried), nullptr);
}

}  // namespace
}  // namespace llmux::policy
