// SPDX-License-Identifier: Apache-2.0
// The retry decision and the error answered when no attempt produced a response: pure.
#include <gtest/gtest.h>

#include "upstream/outcome.hpp"

namespace llmux::upstream {
namespace {

using Kind = Outcome::Kind;

Outcome of(Kind k, std::string message = "m") {
  Outcome o;
  o.kind = k;
  o.message = std::move(message);
  return o;
}

TEST(RetryDecision, OnlyWhatNeverReachedABackendIsRetried) {
  EXPECT_EQ(decide_retry(of(Kind::connect_failed), 1), RetryDecision::try_another_backend);
  EXPECT_EQ(decide_retry(of(Kind::reset_before_send), 1), RetryDecision::try_another_backend);
  for (Kind k :
       {Kind::timeout, Kind::broken, Kind::bad_response, Kind::broken_mid_stream, Kind::ok})
    EXPECT_EQ(decide_retry(of(k), 1), RetryDecision::answer_error) << to_string(k);
}

TEST(RetryDecision, AGenerationRequestLeftUnansweredIsSentAgain) {
  // Closed or timed out after the request was written, before any response: a generation
  // request may run twice (issue 37); a broken response or a broken stream is not resent here.
  EXPECT_EQ(decide_retry(of(Kind::broken), 1, 2, true), RetryDecision::try_another_backend);
  EXPECT_EQ(decide_retry(of(Kind::timeout), 1, 2, true), RetryDecision::try_another_backend);
  for (Kind k : {Kind::bad_response, Kind::broken_mid_stream, Kind::ok})
    EXPECT_EQ(decide_retry(of(k), 1, 2, true), RetryDecision::answer_error) << to_string(k);
  EXPECT_EQ(decide_retry(of(Kind::broken), 2, 2, true), RetryDecision::answer_error);
  EXPECT_EQ(decide_retry(of(Kind::client_left), 1, 2, true), RetryDecision::give_up_silently);
}

TEST(RetryDecision, BoundedAndNeverAfterTheClientLeft) {
  EXPECT_EQ(decide_retry(of(Kind::connect_failed), 2), RetryDecision::answer_error);
  EXPECT_EQ(decide_retry(of(Kind::connect_failed), 2, 3), RetryDecision::try_another_backend);
  EXPECT_EQ(decide_retry(of(Kind::client_left), 1), RetryDecision::give_up_silently);
}

TEST(ErrorAnswer, StatusByHowTheLastAttemptEnded) {
  EXPECT_EQ(error_answer(of(Kind::connect_failed)).status, 503);
  EXPECT_EQ(error_answer(of(Kind::reset_before_send)).status, 503);
  EXPECT_EQ(error_answer(of(Kind::timeout)).status, 504);
  EXPECT_EQ(error_answer(of(Kind::broken)).status, 502);
  EXPECT_EQ(error_answer(of(Kind::bad_response)).status, 502);
  const auto a = error_answer(of(Kind::timeout, "server2 sent no response within 300 ms"));
  EXPECT_NE(a.message.find("server2 sent no response within 300 ms"), std::string::npos);
}

TEST(Outcome, NeverReachedBackend) {
  EXPECT_TRUE(of(Kind::connect_failed).never_reached_backend());
  EXPECT_TRUE(of(Kind::reset_before_send).never_reached_backend());
  EXPECT_FALSE(of(Kind::broken).never_reached_backend());
  EXPECT_FALSE(of(Kind::timeout).never_reached_backend());
}

}  // namespace
}  // namespace llmux::upstream
