// SPDX-License-Identifier: Apache-2.0
#include "core/openai_error.hpp"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace llmux {
namespace {

TEST(OpenAIError, NestedShapeWithStatusCode) {
  auto v = boost::json::parse(openai_error_json(404, "The model `x` does not exist."));
  const auto& e = v.at("error");
  EXPECT_EQ(e.at("message").as_string(), "The model `x` does not exist.");
  EXPECT_EQ(e.at("type").as_string(), "NotFoundError");
  EXPECT_TRUE(e.at("param").is_null());
  EXPECT_EQ(e.at("code").as_int64(), 404);
}

TEST(OpenAIError, ExplicitTypeAndParamAndEscaping) {
  auto v = boost::json::parse(
      openai_error_json(400, "bad \"quote\"\n", "invalid_request_error", "response_id"));
  const auto& e = v.at("error");
  EXPECT_EQ(e.at("message").as_string(), "bad \"quote\"\n");
  EXPECT_EQ(e.at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(e.at("param").as_string(), "response_id");
}

TEST(OpenAIError, StringCode) {
  auto v = boost::json::parse(openai_error_json(401, "Incorrect API key provided.",
                                                "invalid_request_error", std::nullopt,
                                                "invalid_api_key"));
  const auto& e = v.at("error");
  EXPECT_EQ(e.at("code").as_string(), "invalid_api_key");
  EXPECT_TRUE(e.at("param").is_null());
  // An empty code keeps the status, as the four-argument form does.
  v = boost::json::parse(openai_error_json(429, "slow down", {}, std::nullopt, {}));
  EXPECT_EQ(v.at("error").at("code").as_int64(), 429);
  EXPECT_EQ(v.at("error").at("type").as_string(), "RateLimitError");
}

TEST(OpenAIError, TypesByStatus) {
  EXPECT_EQ(error_type_for_status(429), "RateLimitError");
  EXPECT_EQ(error_type_for_status(503), "ServiceUnavailableError");
  EXPECT_EQ(error_type_for_status(599), "InternalServerError");
}

}  // namespace
}  // namespace llmux
