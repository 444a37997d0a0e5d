// SPDX-License-Identifier: Apache-2.0
// Adaptive: a request goes where it is predicted to finish soonest by the backends' learned
// curves; without samples it is least_inflight.
#include "policy/adaptive.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

/// A curve of a machine whose lone stream decodes at `single` tokens/s, sampled at 1..16.
void learn(Backend& b, double single) {
  for (int n = 1; n <= 16; ++n) b.curve.observe(n, single * upstream::CapacityCurve::shape(n));
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

}  // namespace
}  // namespace llmux::policy
