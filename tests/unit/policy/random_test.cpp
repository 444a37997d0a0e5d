// SPDX-License-Identifier: Apache-2.0
// Random: uniform (`random`) or by weight (`weighted`) over the available backends, in expected
// shares over many picks (simulation test).
#include "policy/random.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

std::vector<double> shares(Policy& p, Pool& pool, int picks, const TriedSet& tried = {}) {
  std::vector<double> n(pool.size(), 0);
  for (int i = 0; i < picks; ++i) {
    Backend* b = p.pick(request(), pool.all(), tried);
    EXPECT_NE(b, nullptr);
    if (b) n[static_cast<std::size_t>(b->index)] += 1.0 / picks;
  }
  return n;
}

TEST(Random, UniformIgnoresWeights) {
  Pool pool({1, 3, 6});
  Random p(/*weighted=*/false);
  EXPECT_EQ(p.name(), "random");
  for (double s : shares(p, pool, 30000)) EXPECT_NEAR(s, 1.0 / 3, 0.02);
}

TEST(Random, WeightedFollowsWeights) {
  Pool pool({1, 3, 6});
  Random p(/*weighted=*/true);
  EXPECT_EQ(p.name(), "weighted");
  const auto s = shares(p, pool, 50000);
  EXPECT_NEAR(s[0], 0.1, 0.01);
  EXPECT_NEAR(s[1], 0.3, 0.015);
  EXPECT_NEAR(s[2], 0.6, 0.015);
}

TEST(Random, OnlyAvailableBackendsAreDrawn) {
  Pool pool({1, 3, 6});
  Random p(/*weighted=*/true);
  TriedSet tried;
  tried.add(pool[2]);
  const auto s = shares(p, pool, 20000, tried);
  EXPECT_EQ(s[2], 0.0);
  EXPECT_NEAR(s[1], 0.75, 0.02);
  tried.add(pool[0]);
  tried.add(pool[1]);
  EXPECT_EQ(p.pick(request(), pool.all(), tried), nullptr);
}

}  // namespace
}  // namespace llmux::policy
