// SPDX-License-Identifier: Apache-2.0
// First: the first available backend in route order (primary with failover).
#include <gtest/gtest.h>

#include <vector>

#include "policy/first.hpp"
#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

TEST(First, AlwaysThePrimaryWhileItIsAvailable) {
  Pool pool({1, 1, 1});
  First first;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(first.pick(request(), pool.all(), {}), &pool[0]);
}

TEST(First, FailsOverInOrder) {
  Pool pool({1, 1, 1});
  First first;
  TriedSet tried;
  EXPECT_EQ(first.pick(request(), pool.all(), tried), &pool[0]);
  tried.add(pool[0]);
  EXPECT_EQ(first.pick(request(), pool.all(), tried), &pool[1]);
  tried.add(pool[1]);
  EXPECT_EQ(first.pick(request(), pool.all(), tried), &pool[2]);
  tried.add(pool[2]);
  EXPECT_EQ(first.pick(request(), pool.all(), tried), nullptr);
}

TEST(First, SkipsASaturatedPrimaryAndReturnsWhenItFrees) {
  Pool pool({1, 1});
  pool[0].max_inflight = 1;
  pool[0].inflight = 1;
  First first;
  EXPECT_EQ(first.pick(request(), pool.all(), {}), &pool[1]);
  pool[0].inflight = 0;
  EXPECT_EQ(first.pick(request(), pool.all(), {}), &pool[0]);
}

TEST(First, FollowsRouteOrderNotBackendIndex) {
  Pool pool({1, 1, 1});
  std::vector<Backend*> route{&pool[2], &pool[0], &pool[1]};
  First first;
  TriedSet tried;
  EXPECT_EQ(first.pick(request(), route, tried), &pool[2]);
  tried.add(pool[2]);
  EXPECT_EQ(first.pick(request(), route, tried), &pool[0]);
}

TEST(First, NoCandidates) {
  First first;
  EXPECT_EQ(first.pick(request(), {}, {}), nullptr);
}

TEST(First, Name) {
  EXPECT_EQ(First().name(), "first");
}

}  // namespace
}  // namespace llmux::policy
