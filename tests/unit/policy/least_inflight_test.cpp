// SPDX-License-Identifier: Apache-2.0
// LeastInflight: the fewest in flight per weight, ties by outstanding tokens, remaining ties
// rotating; what accept() refuses is never picked.
#include "policy/least_inflight.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

TEST(LeastInflight, PicksTheFewestInFlight) {
  Pool pool({1, 1, 1});
  pool[0].inflight = 5;
  pool[1].inflight = 2;
  pool[2].inflight = 7;
  LeastInflight p;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[1]);
}

TEST(LeastInflight, InFlightIsRelativeToWeight) {
  Pool pool({1, 3});
  pool[0].inflight = 2;  // 2 per unit of weight
  pool[1].inflight = 5;  // 1.67 per unit
  LeastInflight p;
  EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[1]);
  pool[1].inflight = 7;  // 2.33 per unit
  EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[0]);
}

TEST(LeastInflight, TiesGoToFewerOutstandingTokensThenRotate) {
  Pool pool({1, 1});
  pool[0].inflight = 3;
  pool[1].inflight = 3;
  pool[0].outstanding_tokens = 9000;  // one long generation
  pool[1].outstanding_tokens = 600;
  LeastInflight p;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[1]);
  pool[0].outstanding_tokens = 600;
  int first = 0;
  for (int i = 0; i < 100; ++i) first += p.pick(request(), pool.all(), {}) == &pool[0];
  EXPECT_EQ(first, 50) << "an exact tie alternates";
}

TEST(LeastInflight, ServesByLoadAsSlotsComeAndGo) {
  // Slots taken through pick_and_acquire move the counts the policy reads.
  Pool pool({1, 1});
  LeastInflight p;
  TriedSet none;
  auto ctx = request();
  ctx.tokens = 100;
  std::vector<upstream::Slot> held;
  for (int i = 0; i < 6; ++i) {
    TriedSet tried;
    held.push_back(pick_and_acquire(p, ctx, pool.all(), tried));
  }
  EXPECT_EQ(pool[0].inflight.load(), 3);
  EXPECT_EQ(pool[1].inflight.load(), 3);
  EXPECT_EQ(pool[0].outstanding_tokens.load(), 300);
  // Two of backend 0's requests end: the next two go there.
  int released = 0;
  for (auto& s : held)
    if (s.backend() == &pool[0] && released < 2) {
      s.reset();
      ++released;
    }
  EXPECT_EQ(pool[0].outstanding_tokens.load(), 100);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(p.pick(ctx, pool.all(), none), &pool[0]);
}

TEST(LeastInflight, SkipsWhatAcceptRefuses) {
  Pool pool({1, 1, 1});
  pool[0].inflight = 0;
  pool[1].inflight = 4;
  pool[2].inflight = 9;
  LeastInflight p;
  TriedSet tried;
  tried.add(pool[0]);
  EXPECT_EQ(p.pick(request(), pool.all(), tried), &pool[1]);
  pool[1].max_inflight = 4;  // full
  EXPECT_EQ(p.pick(request(), pool.all(), tried), &pool[2]);
  tried.add(pool[2]);
  EXPECT_EQ(p.pick(request(), pool.all(), tried), nullptr);
}

}  // namespace
}  // namespace llmux::policy
