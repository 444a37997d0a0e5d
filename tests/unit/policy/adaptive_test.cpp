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

TEST(Adaptive, AFastMachineTakesRequestsUntilTheSlowOneWouldFinishFirst) {
  Pool pool({1, 1});
  learn(pool[0], 60.0);  // fast
  learn(pool[1], 20.0);  // three times slower
  Adaptive p;
  // Idle: the fast one.
  EXPECT_EQ(p.pick(request(), pool.all(), {}), &pool[0]);
  // The fast one with n in flight gives 60·shape(n+1) a stream; the slow one idle 20. The fast
  // one stays ahead while 60·shape(n+1) > 20, i.e. while 1+β·n < 3.
  for (int n = 1; n <= 60; ++n) {
    pool[0].inflight = n;
    const bool fast_ahead = 60.0 * upstream::CapacityCurve::shape(n + 1) > 20.0 * 1.01;
    const bool slow_ahead = 60.0 * upstream::CapacityCurve::shape(n + 1) * 1.01 < 20.0;
    Backend* got = p.pick(request(), pool.all(), {});
    if (fast_ahead) EXPECT_EQ(got, &pool[0]) << n;
    if (slow_ahead) EXPECT_EQ(got, &pool[1]) << n;
  }
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
