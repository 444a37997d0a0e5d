// SPDX-License-Identifier: Apache-2.0
// What the gateway reads of an Anthropic Messages request and how it answers one: the prompt in
// the order vLLM renders it, the session's user, the error dialect of its path, and the error
// event that ends a stream cut mid-way.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "gateway/client_connection.hpp"
#include "gateway/relay.hpp"
#include "gateway/request_view.hpp"
#include "gateway/taps.hpp"

namespace llmux::gateway {
namespace {

std::string messages_prompt(std::string body) {
  std::string out;
  read_prompt_text(body, out, PromptOrder::messages_api);
  return out;
}

TEST(MessagesRequest, PromptIsSystemThenInlineSystemThenTheConversation) {
  // Claude Code's shape: system blocks (the first its per-request billing line), a user turn, an
  // assistant tool_use, the user's tool_result, and a system message after the user's.
  const std::string body =
      R"({"model":"m","max_tokens":64,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1; cch=4f1"},)"
      R"({"type":"text","text":"You are Claude Code."}],)"
      R"("messages":[{"role":"user","content":"list files"},)"
      R"({"role":"assistant","content":[{"type":"thinking","thinking":"Use Bash.","signature":"s"},)"
      R"({"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.txt"}]}]},)"
      R"({"role":"system","content":"Reminder: be brief."}]})";
  EXPECT_EQ(messages_prompt(body),
            "system: You are Claude Code.\n"
            "system: Reminder: be brief.\n"
            "user: list files\n"
            "assistant: Use Bash.{\"command\":\"ls\"}\n"
            "user: a.txt\n");
}

TEST(MessagesRequest, BillingLineDoesNotSplitTwoTurnsOfOneSession) {
  // Two requests of one session differ only in the billing line: their prompts are the same
  // text, so prefix_aware sends them where the first one's cache is.
  auto body = [](std::string_view hash) {
    return std::string(R"({"system":[{"type":"text","text":"x-anthropic-billing-header: cch=)") +
           std::string(hash) +
           R"("},{"type":"text","text":"Stable."}],"messages":[{"role":"user","content":"hi"}]})";
  };
  EXPECT_EQ(messages_prompt(body("aaa")), messages_prompt(body("bbb")));
  EXPECT_NE(messages_prompt(body("aaa")).find("Stable."), std::string::npos);
}

TEST(MessagesRequest, SystemStringCountsForEveryOrder) {
  // estimate_cost reads prompts as written: the system field is part of them too.
  std::string body = R"({"system":"Be terse.","messages":[{"role":"user","content":"Q"}]})";
  std::string as_written;
  read_prompt_text(body, as_written);
  EXPECT_EQ(as_written, "system: Be terse.\nuser: Q\n");
}

TEST(MessagesRequest, MetadataUserIdIsTheUserWhenNoUserField) {
  std::string body =
      R"({"model":"m","max_tokens":8,"stream":true,"metadata":{"user_id":"user_ab_session_1"},"messages":[]})";
  const BodyFields fields = read_body_fields(body);
  EXPECT_TRUE(fields.parsed);
  EXPECT_TRUE(fields.stream);
  EXPECT_EQ(fields.max_tokens, 8);
  EXPECT_EQ(fields.user, "user_ab_session_1");
  std::string both = R"({"user":"u1","metadata":{"user_id":"other"}})";
  EXPECT_EQ(read_body_fields(both).user, "u1");
}

TEST(MessagesRequest, PathsOfTheDialect) {
  EXPECT_EQ(error_dialect_for("/v1/messages"), ErrorDialect::anthropic);
  EXPECT_EQ(error_dialect_for("/v1/messages/count_tokens"), ErrorDialect::anthropic);
  EXPECT_EQ(error_dialect_for("/v1/messagesx"), ErrorDialect::openai);
  EXPECT_EQ(error_dialect_for("/v1/chat/completions"), ErrorDialect::openai);
  EXPECT_EQ(dialect_of("/v1/messages"), openai::Dialect::messages);
  EXPECT_EQ(dialect_of("/v1/chat/completions"), openai::Dialect::chat);
}

TEST(MessagesRequest, MidStreamErrorIsAnthropicsErrorEvent) {
  const std::string tail =
      mid_stream_error_tail(openai::Dialect::messages, 0, "The upstream server failed.");
  const std::string prefix = "event: error\ndata: ";
  ASSERT_TRUE(tail.starts_with(prefix)) << tail;
  ASSERT_TRUE(tail.ends_with("\n\n")) << tail;
  const auto event =
      boost::json::parse(tail.substr(prefix.size(), tail.size() - prefix.size() - 2)).as_object();
  EXPECT_EQ(event.at("type").as_string(), "error");
  EXPECT_EQ(event.at("error").at("type").as_string(), "api_error");
  EXPECT_EQ(event.at("error").at("message").as_string(), "The upstream server failed.");
  // No [DONE]: that is the OpenAI dialects' end.
  EXPECT_EQ(tail.find("[DONE]"), std::string::npos);
}

}  // namespace
}  // namespace llmux::gateway
