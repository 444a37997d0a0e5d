// SPDX-License-Identifier: Apache-2.0
// Adaptive: a request goes where it is predicted to finish soonest by the backends' learned
// curves; without samples it is least_inflight. It learns the curves from the streams it
// dispatches (DecodeRateSampler, through the policy hooks); other policies learn nothing.
#include "policy/adaptive.hpp"

#include <gtest/gtest.h>

#include "policy/round_robin.hpp"
#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

/// A curve of a machine whose lone stream decodes at `single` tokens/s, sampled at 1..16.
void learn(Backend& b, double single) {
  for (int n = 1; n <= 16; ++n)
    b.observations.capacity.add_sample(n, single * upstream::CapacityCurve::shape(n));
}

TEST(Adaptive, WithoutSamplesItIsLeastInflight) {
  Pool pool({1, 1, 1});
  pool[0].inflight = 3;
  pool[1].inflight = 1;
  pool[2].inflight = 2;
  Adaptive p;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[1]);
}

TEST(Adaptive, AFastMachineTakesRequestsUntilOneMoreThereAddsLessThanOneOnTheSlowOne) {
  Pool pool({1, 1});
  learn(pool[0], 60.0);  // fast
  learn(pool[1], 20.0);  // three times slower
  Adaptive p;
  // Idle: the fast one.
  EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[0]);
  // With n in flight on the fast one, one more adds 60·((n+1)·shape(n+1) − n·shape(n)) tokens/s
  // to its total; one stream on the idle slow one adds 20. The fast one keeps taking requests
  // while it adds more, and the slow one gets the next once it adds less.
  using upstream::CapacityCurve;
  int switched_at = 0;
  for (int n = 1; n <= 60 && !switched_at; ++n) {
    pool[0].inflight = n;
    if (p.pick(request(), pool.all(), {}) == &pool[1]) switched_at = n;
  }
  ASSERT_GT(switched_at, 1);
  const auto gain = [](int n) {
    return 60.0 * ((n + 1) * CapacityCurve::shape(n + 1) - n * CapacityCurve::shape(n));
  };
  EXPECT_LT(gain(switched_at), 20.0 * 1.01) << switched_at;
  EXPECT_GT(gain(switched_at - 1), 20.0 * 0.99) << switched_at;
  // A busy slow machine is left alone again: its second stream adds less than the fast one's.
  pool[0].inflight = switched_at;
  pool[1].inflight = 1;
  EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[0]);
}

TEST(Adaptive, ABackendWithoutSamplesIsAssumedLikeTheOthers) {
  Pool pool({1, 1});
  learn(pool[0], 30.0);
  pool[0].inflight = 2;
  pool[1].inflight = 1;  // no samples: like pool[0], and less loaded
  Adaptive p;
  EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[1]);
}

TEST(DecodeRateSampler, OneSamplePerWindowOfDecodingAtTheMeanInFlight) {
  Pool pool({1});
  Backend& b = pool[0];
  DecodeRateSampler s(b, 1'000'000'000);
  const upstream::CapacityCurve& curve = b.observations.capacity;
  b.inflight = 3;
  s.on_tokens(0, 0);                 // prefill: not decoding yet
  s.on_first_token(1, 500'000'000);  // first token: the window starts
  s.on_tokens(20, 1'000'000'000);    // half a second: nothing yet
  EXPECT_TRUE(curve.empty());
  b.inflight = 5;
  s.on_tokens(41, 1'500'000'000);  // 40 tokens in 1 s, in flight 3 then 5
  ASSERT_EQ(curve.levels().size(), 1u);
  EXPECT_EQ(curve.levels()[0].inflight, 4);
  EXPECT_DOUBLE_EQ(curve.rate(4, 0), 40.0);
  b.inflight = 0;
}

// The hooks: adaptive follows every attempt it dispatches and its stream teaches the chosen
// backend's curve; a policy that learns nothing follows none.
TEST(Adaptive, LearnsThroughTheAttemptsItDispatches) {
  Pool pool({1, 1});
  Adaptive adaptive;
  auto observer = adaptive.on_dispatch(pool[1]);
  ASSERT_TRUE(observer);
  pool[1].inflight = 2;
  observer->on_first_token(1, 0);
  observer->on_tokens(61, 2'000'000'000);  // 60 tokens in 2 s at 2 in flight
  observer->on_done(upstream::Outcome{});
  EXPECT_TRUE(pool[0].observations.capacity.empty());
  ASSERT_EQ(pool[1].observations.capacity.levels().size(), 1u);
  EXPECT_EQ(pool[1].observations.capacity.levels()[0].inflight, 2);
  EXPECT_DOUBLE_EQ(pool[1].observations.capacity.rate(2, 0), 30.0);
  pool[1].inflight = 0;
  RoundRobin round_robin;
  EXPECT_EQ(round_robin.on_dispatch(pool[0]), nullptr);
}

}  // namespace
}  // namespace llmux::policy
