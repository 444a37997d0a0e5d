// SPDX-License-Identifier: Apache-2.0
// In-flight slots: max_inflight is a hard limit even when workers race for the last slot.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "policy/first.hpp"
#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

/// A policy that, like another worker running between pick() and the slot, fills the backend it
/// is about to return (or leaves it alone), then returns it.
class RacedPolicy : public Policy {
 public:
  explicit RacedPolicy(bool fill) : fill_(fill) {}
  std::string_view name() const override { return "raced"; }
  Backend* select(const PickContext& r, std::span<Backend* const> c,
                  FunctionRef<bool(const Backend&)> accept) override {
    Backend* b = first_.select(r, c, accept);
    if (b && fill_ && b->max_inflight > 0) b->inflight.store(b->max_inflight);
    ++picks;
    return b;
  }
  int picks = 0;

 private:
  First first_;
  bool fill_;
};

TEST(Slot, BackendFilledBetweenPickAndSlotIsSkipped) {
  Pool pool({1, 1});
  pool[0].max_inflight = 2;
  RacedPolicy raced(/*fill=*/true);
  TriedSet tried;
  upstream::Slot s = pick_and_acquire(raced, request(), pool.all(), tried);
  // pool[0] was free when the policy looked but full when the slot was taken: the slot comes
  // from pool[1], and pool[0] stays exactly at its limit.
  ASSERT_TRUE(s);
  EXPECT_EQ(s.backend(), &pool[1]);
  EXPECT_EQ(pool[0].inflight.load(), 2);
  EXPECT_EQ(pool[1].inflight.load(), 1);
  EXPECT_TRUE(tried.contains(pool[0]));
  EXPECT_EQ(raced.picks, 2);
}

TEST(Slot, EmptyWhenEveryBackendIsFull) {
  Pool pool({1, 1});
  pool[0].max_inflight = 1;
  pool[1].max_inflight = 1;
  First first;
  TriedSet t1, t2, t3;
  upstream::Slot a = pick_and_acquire(first, request(), pool.all(), t1);
  upstream::Slot b = pick_and_acquire(first, request(), pool.all(), t2);
  upstream::Slot c = pick_and_acquire(first, request(), pool.all(), t3);
  EXPECT_EQ(a.backend(), &pool[0]);
  EXPECT_EQ(b.backend(), &pool[1]);
  EXPECT_FALSE(c);
  a.reset();
  EXPECT_EQ(pool[0].inflight.load(), 0);
  TriedSet t4;
  EXPECT_EQ(pick_and_acquire(first, request(), pool.all(), t4).backend(), &pool[0]);
}

TEST(Slot, GivesItsCountBackOnceWhenMovedAndDestroyed) {
  Pool pool({1});
  {
    First first;
    TriedSet tried;
    upstream::Slot a = pick_and_acquire(first, request(), pool.all(), tried);
    EXPECT_EQ(pool[0].inflight.load(), 1);
    upstream::Slot b = std::move(a);
    upstream::Slot c;
    c = std::move(b);
    EXPECT_EQ(pool[0].inflight.load(), 1);
  }
  EXPECT_EQ(pool[0].inflight.load(), 0);
}

TEST(Slot, RacingThreadsNeverExceedTheLimit) {
  Pool pool({1});
  pool[0].max_inflight = 3;
  std::atomic<int> holding{0}, max_seen{0}, granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      First first;
      for (int i = 0; i < 20000; ++i) {
        TriedSet tried;
        upstream::Slot s = pick_and_acquire(first, request(), pool.all(), tried);
        if (!s) continue;
        ++granted;
        const int now = ++holding;
        int prev = max_seen.load();
        while (now > prev && !max_seen.compare_exchange_weak(prev, now)) {
        }
        --holding;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(max_seen.load(), 3);
  EXPECT_GT(granted.load(), 0);
  EXPECT_EQ(pool[0].inflight.load(), 0);
}

// A priority class capped at half of max_inflight (config `priorities`): it holds at most its
// share, the other classes may fill the rest, and a slot given back frees the class's count.
TEST(Slot, ACappedClassHoldsAtMostItsShareAndOthersFillTheRest) {
  Pool pool({1});
  pool[0].max_inflight = 4;
  First policy;
  PickContext batch = request();
  batch.class_cap = {0.5, 2};
  std::vector<upstream::Slot> held;
  for (int i = 0; i < 2; ++i) {
    TriedSet tried;
    held.push_back(pick_and_acquire(policy, batch, pool.all(), tried));
    ASSERT_TRUE(held.back()) << "batch request " << i;
  }
  TriedSet tried;
  EXPECT_FALSE(pick_and_acquire(policy, batch, pool.all(), tried)) << "a third batch request";
  const PickContext interactive = request();
  for (int i = 0; i < 2; ++i) {
    TriedSet other;
    held.push_back(pick_and_acquire(policy, interactive, pool.all(), other));
    ASSERT_TRUE(held.back()) << "other class " << i;
  }
  EXPECT_EQ(pool[0].inflight.load(), 4);
  held.erase(held.begin());  // a batch request ends
  held.pop_back();           // and another class's
  TriedSet again;
  held.push_back(pick_and_acquire(policy, batch, pool.all(), again));
  EXPECT_TRUE(held.back()) << "the class's count came back";
  EXPECT_EQ(pool[0].held_by_class[2].load(), 2);
}

}  // namespace
}  // namespace llmux::policy
