// SPDX-License-Identifier: Apache-2.0
// Passive ejection and active-check bookkeeping (upstream/health.hpp), on explicit clocks.
#include "upstream/health.hpp"

#include <gtest/gtest.h>

#include "core/clock.hpp"

namespace llmux::upstream {
namespace {

Outcome failed(Outcome::Kind k = Outcome::Kind::connect_failed) {
  Outcome o;
  o.kind = k;
  o.message = "b: connection refused";
  return o;
}
Outcome answered(int status) {
  Outcome o;
  o.status = status;
  return o;
}

OutlierSettings settings() {
  OutlierSettings s;
  s.consecutive_failures = 3;
  s.base_ejection = std::chrono::seconds(5);
  s.max_ejection = std::chrono::seconds(30);
  return s;
}

TEST(Judge, FailuresSuccessesAndNeither) {
  EXPECT_EQ(judge(answered(200)), Verdict::success);
  EXPECT_EQ(judge(answered(429)), Verdict::success) << "the backend answered: not its fault";
  EXPECT_EQ(judge(answered(503)), Verdict::failure);
  EXPECT_EQ(judge(failed(Outcome::Kind::timeout)), Verdict::failure);
  EXPECT_EQ(judge(failed(Outcome::Kind::broken_mid_stream)), Verdict::failure);
  EXPECT_EQ(judge(failed(Outcome::Kind::client_left)), Verdict::neutral);
}

TEST(Outlier, EjectsAfterFailuresInARowThenBackOffDoubles) {
  Backend b;
  b.name = "b";
  const auto s = settings();
  std::int64_t t = 100 * kNanosecondsPerSecond;
  EXPECT_FALSE(record_outcome(b, failed(), t, s));
  EXPECT_FALSE(record_outcome(b, failed(), t, s));
  auto ev = record_outcome(b, failed(), t, s);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, HealthEvent::Kind::ejected);
  EXPECT_NE(ev->message.find("ejected for 5s"), std::string::npos) << ev->message;
  EXPECT_NE(ev->message.find("connection refused"), std::string::npos) << ev->message;
  EXPECT_FALSE(b.usable(t + 5 * kNanosecondsPerSecond - 1));
  EXPECT_EQ(state_name(b, t + kNanosecondsPerSecond), "ejected");
  // Late failures of requests sent before the ejection do not extend it.
  EXPECT_FALSE(record_outcome(b, failed(), t + kNanosecondsPerSecond, s));
  EXPECT_EQ(b.ejected_until_ns.load(), t + 5 * kNanosecondsPerSecond);

  // Back after the back-off, on trial: the trial failing ejects again at once, for twice as long.
  t += 5 * kNanosecondsPerSecond;
  EXPECT_TRUE(b.usable(t));
  EXPECT_TRUE(b.on_trial());
  EXPECT_EQ(state_name(b, t), "trial");
  ev = record_outcome(b, failed(Outcome::Kind::timeout), t, s);
  ASSERT_TRUE(ev);
  EXPECT_NE(ev->message.find("ejected for 10s"), std::string::npos) << ev->message;
  EXPECT_NE(ev->message.find("trial"), std::string::npos) << ev->message;
  t += 10 * kNanosecondsPerSecond;
  ev = record_outcome(b, failed(), t, s);
  ASSERT_TRUE(ev);
  EXPECT_NE(ev->message.find("ejected for 20s"), std::string::npos) << ev->message;
  t += 20 * kNanosecondsPerSecond;
  ev = record_outcome(b, failed(), t, s);
  ASSERT_TRUE(ev);
  EXPECT_NE(ev->message.find("ejected for 30s"), std::string::npos) << "capped: " << ev->message;

  // A success readmits it fully and resets the back-off.
  t += 30 * kNanosecondsPerSecond;
  ev = record_outcome(b, answered(200), t, s);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, HealthEvent::Kind::readmitted);
  EXPECT_FALSE(b.on_trial());
  EXPECT_EQ(state_name(b, t), "up");
  EXPECT_EQ(next_ejection(b, s), std::chrono::seconds(5));
}

TEST(Outlier, ASuccessBreaksTheRun) {
  Backend b;
  const auto s = settings();
  record_outcome(b, failed(), kNanosecondsPerSecond, s);
  record_outcome(b, failed(), kNanosecondsPerSecond, s);
  record_outcome(b, answered(200), kNanosecondsPerSecond, s);
  EXPECT_FALSE(record_outcome(b, failed(), kNanosecondsPerSecond, s));
  EXPECT_FALSE(record_outcome(b, failed(), kNanosecondsPerSecond, s));
  EXPECT_TRUE(b.usable(kNanosecondsPerSecond));
  EXPECT_TRUE(record_outcome(b, failed(), kNanosecondsPerSecond, s));
}

TEST(Outlier, ClientsLeavingAndDisabledDetectionEjectNothing) {
  Backend b;
  auto s = settings();
  for (int i = 0; i < 10; ++i)
    EXPECT_FALSE(record_outcome(b, failed(Outcome::Kind::client_left), kNanosecondsPerSecond, s));
  EXPECT_TRUE(b.usable(kNanosecondsPerSecond));
  s.enabled = false;
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(record_outcome(b, failed(), kNanosecondsPerSecond, s));
  EXPECT_TRUE(b.usable(kNanosecondsPerSecond));
  EXPECT_EQ(b.last_failure_ns.load(), kNanosecondsPerSecond)
      << "failures are still recorded for the last resort";
}

TEST(Checks, ThresholdsInARow) {
  Backend b;
  b.name = "b";
  CheckCounts c;
  EXPECT_FALSE(record_check(b, c, false, "refused", 2, 3));
  EXPECT_FALSE(record_check(b, c, false, "refused", 2, 3));
  EXPECT_FALSE(record_check(b, c, true, "", 2, 3)) << "a pass breaks the run of failures";
  EXPECT_FALSE(record_check(b, c, false, "refused", 2, 3));
  EXPECT_FALSE(record_check(b, c, false, "refused", 2, 3));
  auto ev = record_check(b, c, false, "timeout", 2, 3);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, HealthEvent::Kind::unhealthy);
  EXPECT_NE(ev->message.find("timeout"), std::string::npos) << ev->message;
  EXPECT_FALSE(b.usable(kNanosecondsPerSecond));
  EXPECT_EQ(state_name(b, kNanosecondsPerSecond), "unhealthy");
  EXPECT_FALSE(record_check(b, c, false, "timeout", 2, 3)) << "one line per change";
  EXPECT_FALSE(record_check(b, c, true, "", 2, 3));
  ev = record_check(b, c, true, "", 2, 3);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, HealthEvent::Kind::healthy);
  EXPECT_TRUE(b.usable(kNanosecondsPerSecond));
}

}  // namespace
}  // namespace llmux::upstream
