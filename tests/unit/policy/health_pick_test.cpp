// SPDX-License-Identifier: Apache-2.0
// pick_and_acquire and backend health: ejected and unhealthy backends get no requests, a backend
// on trial one at a time, and when every backend is out the least recently failed is tried.
#include <gtest/gtest.h>

#include "policy/first.hpp"
#include "policy/round_robin.hpp"
#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

constexpr std::int64_t kNow = 1'000'000'000'000;

TEST(HealthPick, EjectedAndUnhealthyBackendsAreSkipped) {
  Pool pool({1, 1, 1});
  pool[0].ejected_until_ns = kNow + 1;
  pool[1].checks_ok = false;
  First first;
  for (int i = 0; i < 3; ++i) {
    TriedSet tried;
    upstream::Slot s = pick_and_acquire(first, request(), pool.all(), tried, kNow);
    ASSERT_TRUE(s);
    EXPECT_EQ(s.backend(), &pool[2]);
  }
  // The ejection ends on time.
  TriedSet tried;
  EXPECT_EQ(pick_and_acquire(first, request(), pool.all(), tried, kNow + 1).backend(), &pool[0]);
}

TEST(HealthPick, DrainedBackendsTakeOnlyRequestsPinnedToThem) {
  Pool pool({1, 1});
  pool[0].draining = true;
  First first;
  for (int i = 0; i < 3; ++i) {
    TriedSet tried;
    EXPECT_EQ(pick_and_acquire(first, request(), pool.all(), tried, kNow).backend(), &pool[1]);
  }
  // A request naming a response the drained backend holds (affinity) still goes there.
  PickContext pinned = request();
  pinned.pinned = true;
  Backend* only[] = {&pool[0]};
  TriedSet tried;
  EXPECT_EQ(pick_and_acquire(first, pinned, only, tried, kNow).backend(), &pool[0]);
  // Not as a last resort for others: with the other backend out, nothing.
  pool[1].checks_ok = false;
  TriedSet t2;
  EXPECT_EQ(pick_and_acquire(first, request(), pool.all(), t2, kNow).backend(), nullptr);
}

TEST(HealthPick, OneTrialRequestAtATime) {
  Pool pool({1, 1});
  pool[0].ejections_in_a_row = 1;  // back from an ejection, not yet proven
  First first;
  TriedSet t1, t2;
  upstream::Slot trial = pick_and_acquire(first, request(), pool.all(), t1, kNow);
  ASSERT_EQ(trial.backend(), &pool[0]);
  EXPECT_TRUE(trial.trial());
  upstream::Slot next = pick_and_acquire(first, request(), pool.all(), t2, kNow);
  EXPECT_EQ(next.backend(), &pool[1]) << "the trial is taken: others go elsewhere";
  EXPECT_EQ(pool[0].inflight.load(), 1) << "the refused trial gave its slot back";
  trial.reset();
  EXPECT_FALSE(pool[0].trial_taken.load());
  TriedSet t3;
  EXPECT_EQ(pick_and_acquire(first, request(), pool.all(), t3, kNow).backend(), &pool[0]);
}

TEST(HealthPick, EveryBackendOutTriesTheLeastRecentlyFailed) {
  Pool pool({1, 1, 1});
  for (std::size_t i = 0; i < 3; ++i) pool[i].ejected_until_ns = kNow + 1;
  pool[0].last_failure_ns = kNow - 10;
  pool[1].last_failure_ns = kNow - 30;  // failed longest ago
  pool[2].last_failure_ns = kNow - 20;
  RoundRobin rr;
  TriedSet tried;
  upstream::Slot s = pick_and_acquire(rr, request(), pool.all(), tried, kNow);
  ASSERT_TRUE(s) << "never refuse while a backend exists";
  EXPECT_EQ(s.backend(), &pool[1]);
  // A retry of the same request goes to the next least recently failed.
  tried.add(pool[1]);
  EXPECT_EQ(pick_and_acquire(rr, request(), pool.all(), tried, kNow).backend(), &pool[2]);
}

TEST(HealthPick, NoLastResortWhileABackendIsUp) {
  Pool pool({1, 1});
  pool[0].ejected_until_ns = kNow + 1;
  pool[1].max_inflight = 1;
  First first;
  TriedSet t1, t2;
  upstream::Slot a = pick_and_acquire(first, request(), pool.all(), t1, kNow);
  EXPECT_EQ(a.backend(), &pool[1]);
  EXPECT_FALSE(pick_and_acquire(first, request(), pool.all(), t2, kNow))
      << "pool[1] is up but full: that is not every backend being out";
}

}  // namespace
}  // namespace llmux::policy
