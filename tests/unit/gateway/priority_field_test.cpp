// SPDX-License-Identifier: Apache-2.0
// The body a backend with send_priority gets: the client's, with vLLM's `priority` set to the
// class's value whatever the client wrote, valid JSON in every shape the client's body may have.
#include "gateway/priority_field.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace llmux::gateway {
namespace {

/// The body as sent, parsed (the parts in order).
boost::json::object sent(std::string body, int priority, bool ask_usage = false) {
  const BodyFields fields = read_body_fields(body);
  UsageRequest usage;
  if (ask_usage) usage = ask_for_usage("POST", "/v1/chat/completions", body, fields);
  PriorityBody out;
  EXPECT_TRUE(body_with_priority(body, usage, fields, priority, out)) << body;
  const std::string whole = out.prefix + std::string(out.first) + std::string(out.second);
  EXPECT_EQ(whole.size(), out.size());
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(whole, ec);
  EXPECT_FALSE(ec) << whole;
  return value.is_object() ? value.as_object() : boost::json::object();
}

TEST(PriorityField, IsAddedBeforeTheClientsFieldsWhichGoOnUnchanged) {
  const auto body = sent(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", -1);
  EXPECT_EQ(body.at("priority").as_int64(), -1);
  EXPECT_EQ(body.at("model").as_string(), "m");
  EXPECT_EQ(body.at("messages").as_array().size(), 1u);
}

TEST(PriorityField, AnEmptyObjectStaysValid) {
  EXPECT_EQ(sent("{}", 2).at("priority").as_int64(), 2);
  EXPECT_EQ(sent("  { \n }", 0).at("priority").as_int64(), 0);
}

TEST(PriorityField, GoesWithTheUsageRequest) {
  const auto body = sent(R"({"model":"m","stream":true,"messages":[]})", 1, true);
  EXPECT_EQ(body.at("priority").as_int64(), 1);
  EXPECT_TRUE(body.at("stream_options").as_object().at("include_usage").as_bool());
  // stream_options already there: the usage request rewrote the body, and so does this.
  const auto rewritten =
      sent(R"({"model":"m","stream":true,"stream_options":{},"messages":[]})", 1, true);
  EXPECT_EQ(rewritten.at("priority").as_int64(), 1);
  EXPECT_TRUE(rewritten.at("stream_options").as_object().at("include_usage").as_bool());
}

TEST(PriorityField, TheClientsOwnPriorityIsReplacedNotDuplicated) {
  const std::string text = R"({"priority":-100,"model":"m"})";
  std::string body = text;
  const BodyFields fields = read_body_fields(body);
  PriorityBody out;
  ASSERT_TRUE(body_with_priority(body, UsageRequest{}, fields, 1, out));
  const std::string whole = out.prefix + std::string(out.first) + std::string(out.second);
  EXPECT_EQ(whole.find("-100"), std::string::npos) << whole;
  EXPECT_EQ(boost::json::parse(whole).as_object().at("priority").as_int64(), 1);
}

TEST(PriorityField, ABodyThatIsNotAJsonObjectIsLeftAlone) {
  for (std::string body : {std::string("not json"), std::string("[1,2]")}) {
    const BodyFields fields = read_body_fields(body);
    PriorityBody out;
    EXPECT_FALSE(body_with_priority(body, UsageRequest{}, fields, 1, out)) << body;
  }
}

}  // namespace
}  // namespace llmux::gateway
