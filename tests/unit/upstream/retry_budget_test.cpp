// SPDX-License-Identifier: Apache-2.0
// The route-level retry budget (upstream/retry_budget.hpp), on an explicit clock.
#include "upstream/retry_budget.hpp"

#include <gtest/gtest.h>

#include "core/clock.hpp"

namespace llmux::upstream {
namespace {

int retries_granted(RetryBudget& b, std::int64_t now, int asked) {
  int granted = 0;
  for (int i = 0; i < asked; ++i) granted += b.try_retry(now) ? 1 : 0;
  return granted;
}

TEST(RetryBudget, AFractionOfTheRequestsWithAFloor) {
  RetryBudget b(0.2, 3);
  const std::int64_t t = 100 * kNanosecondsPerSecond;
  for (int i = 0; i < 100; ++i) b.on_request(t);
  EXPECT_EQ(retries_granted(b, t, 50), 20) << "20% of 100 requests";
  RetryBudget quiet(0.2, 3);
  quiet.on_request(t);
  EXPECT_EQ(retries_granted(quiet, t, 10), 3) << "the floor lets a quiet route retry";
}

TEST(RetryBudget, EachSecondStartsAfreshWithThePreviousSecondsLoad) {
  RetryBudget b(0.5, 0);
  std::int64_t t = 100 * kNanosecondsPerSecond;
  for (int i = 0; i < 10; ++i) b.on_request(t);
  EXPECT_EQ(retries_granted(b, t, 10), 5);
  t += kNanosecondsPerSecond;  // the next second: no request yet, the last second's 10 still count
  EXPECT_EQ(retries_granted(b, t, 10), 5);
  t += 5 * kNanosecondsPerSecond;  // long quiet: nothing carries over
  EXPECT_EQ(retries_granted(b, t, 10), 0);
}

}  // namespace
}  // namespace llmux::upstream
