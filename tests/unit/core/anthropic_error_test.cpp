// SPDX-License-Identifier: Apache-2.0
// Anthropic's error body and types (core/anthropic_error.hpp), as Anthropic's API reference
// ("Errors") lists them.
#include "core/anthropic_error.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace llmux {
namespace {

TEST(AnthropicError, ShapeIsTypeErrorWithNestedTypeAndMessage) {
  const auto body = boost::json::parse(anthropic_error_json(400, "bad \"quote\"\n")).as_object();
  EXPECT_EQ(body.at("type").as_string(), "error");
  const auto& error = body.at("error").as_object();
  EXPECT_EQ(error.at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(error.at("message").as_string(), "bad \"quote\"\n");
  EXPECT_EQ(error.size(), 2u);
}

TEST(AnthropicError, TypesByStatus) {
  EXPECT_EQ(anthropic_error_type(400), "invalid_request_error");
  EXPECT_EQ(anthropic_error_type(408), "invalid_request_error");
  EXPECT_EQ(anthropic_error_type(401), "authentication_error");
  EXPECT_EQ(anthropic_error_type(403), "permission_error");
  EXPECT_EQ(anthropic_error_type(404), "not_found_error");
  EXPECT_EQ(anthropic_error_type(413), "request_too_large");
  EXPECT_EQ(anthropic_error_type(429), "rate_limit_error");
  EXPECT_EQ(anthropic_error_type(500), "api_error");
  EXPECT_EQ(anthropic_error_type(502), "api_error");
  EXPECT_EQ(anthropic_error_type(504), "timeout_error");
  EXPECT_EQ(anthropic_error_type(529), "overloaded_error");
}

TEST(AnthropicError, ServiceUnavailableIsOverloaded529) {
  EXPECT_EQ(anthropic_status(503), 529);
  EXPECT_EQ(anthropic_status(502), 502);
  EXPECT_EQ(anthropic_status(429), 429);
  EXPECT_EQ(anthropic_error_type(anthropic_status(503)), "overloaded_error");
}

}  // namespace
}  // namespace llmux
