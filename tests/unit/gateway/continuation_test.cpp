// SPDX-License-Identifier: Apache-2.0
// StreamContinuation (gateway/continuation.hpp): what a cut stream keeps, the request the next
// leg sends (chat: the final assistant message continued; completions: the prompt and the text
// so far; replay: the client's request again), and the next leg's events rewritten to read as
// the first leg's stream.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>
#include <vector>

#include "gateway/continuation.hpp"
#include "openai/stream.hpp"

namespace llmux::gateway {
namespace {

namespace json = boost::json;

/// Feeds `datas` (each one event's data) to an interpreter keeping what the stream generates in
/// `continuation`, as the relay's tap does.
void stream(StreamContinuation& continuation, const std::vector<std::string>& datas) {
  openai::StreamInterpreter reader(continuation.dialect());
  reader.keep_generated(&continuation.generated());
  for (const auto& data : datas) reader.on_event("", data);
}

std::string chat_chunk(const std::string& id, const std::string& delta,
                       const std::string& finish = "null") {
  return R"({"id":")" + id +
         R"(","object":"chat.completion.chunk","created":111,"model":"m1","system_fingerprint":"fp1","choices":[{"index":0,"delta":)" +
         delta + R"(,"logprobs":null,"finish_reason":)" + finish + "}]}";
}

constexpr const char* kChatBody =
    R"({"model":"m1","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":50,"min_tokens":5,"temperature":0})";

json::object parsed(const std::string& text) {
  return json::parse(text).as_object();
}

/// The data of each event in `events` (SSE text).
std::vector<std::string> datas_of(const std::string& events) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = events.find("data: ", at)) != std::string::npos) {
    const std::size_t end = events.find("\n\n", at);
    out.push_back(events.substr(at + 6, end - at - 6));
    at = end;
  }
  return out;
}

TEST(StreamContinuation, ChatContinuesTheFinalAssistantMessage) {
  StreamContinuation continuation(openai::Dialect::chat, 1 << 16);
  stream(continuation, {chat_chunk("chatcmpl-1", R"({"role":"assistant","content":""})"),
                        chat_chunk("chatcmpl-1", R"({"content":" the"})"),
                        chat_chunk("chatcmpl-1", R"({"content":" sea"})")});
  EXPECT_EQ(continuation.why_not_continuable(), nullptr);
  continuation.cut(2, CutReason::broken);
  EXPECT_EQ(continuation.way(), ContinuationWay::continue_output);
  const auto body = continuation.next_leg_body(kChatBody);
  ASSERT_TRUE(body);
  const json::object next = parsed(*body);
  const auto& messages = next.at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].at("role"), "assistant");
  EXPECT_EQ(messages[1].at("content"), " the sea");
  EXPECT_FALSE(messages[1].as_object().contains("reasoning"));
  EXPECT_EQ(next.at("continue_final_message"), true);
  EXPECT_EQ(next.at("add_generation_prompt"), false);
  EXPECT_EQ(next.at("max_tokens"), 48);
  EXPECT_EQ(next.at("min_tokens"), 3);
  EXPECT_EQ(next.at("stream_options").at("include_usage"), true);
  EXPECT_EQ(next.at("temperature"), 0);
}

TEST(StreamContinuation, ReasoningGoesBackWholeUnderBothNames) {
  StreamContinuation continuation(openai::Dialect::chat, 1 << 16);
  stream(continuation, {chat_chunk("chatcmpl-1", R"({"role":"assistant","content":""})"),
                        chat_chunk("chatcmpl-1", R"({"reasoning":"Think"})"),
                        chat_chunk("chatcmpl-1", R"({"reasoning":" hard."})"),
                        chat_chunk("chatcmpl-1", R"({"content":"Yes"})")});
  continuation.cut(4, CutReason::stalled);
  ASSERT_EQ(continuation.way(), ContinuationWay::continue_output);
  const json::object next = parsed(*continuation.next_leg_body(kChatBody));
  const auto& answer = next.at("messages").as_array().back().as_object();
  EXPECT_EQ(answer.at("reasoning"), "Think hard.");
  EXPECT_EQ(answer.at("reasoning_content"), "Think hard.");
  EXPECT_EQ(answer.at("content"), "Yes");
  EXPECT_EQ(continuation.last_cut_reason(), CutReason::stalled);
}

TEST(StreamContinuation, CompletionsPromptTakesTheTextSoFar) {
  StreamContinuation continuation(openai::Dialect::completions, 1 << 16);
  stream(
      continuation,
      {R"({"id":"cmpl-9","object":"text_completion","created":5,"model":"m1","choices":[{"index":0,"text":" once","logprobs":null,"finish_reason":null}]})",
       R"({"id":"cmpl-9","object":"text_completion","created":5,"model":"m1","choices":[{"index":0,"text":" upon","logprobs":null,"finish_reason":null}]})"});
  continuation.cut(2, CutReason::broken);
  const json::object next = parsed(*continuation.next_leg_body(
      R"({"model":"m1","prompt":"Tell:","max_tokens":10,"stream":true,"stream_options":{"include_usage":false}})"));
  EXPECT_EQ(next.at("prompt"), "Tell: once upon");
  EXPECT_EQ(next.at("max_tokens"), 8);
  EXPECT_EQ(next.at("stream_options").at("include_usage"), true);
  EXPECT_FALSE(next.contains("continue_final_message"));
}

TEST(StreamContinuation, NextLegReadsAsTheFirstLegsStream) {
  StreamContinuation continuation(openai::Dialect::chat, 1 << 16);
  stream(continuation, {chat_chunk("chatcmpl-first", R"({"role":"assistant","content":""})"),
                        chat_chunk("chatcmpl-first", R"({"content":" a"})")});
  continuation.cut(1, CutReason::broken);
  // The next leg: its own id, a role delta, content, the finish, usage counting its prompt
  // (which holds the first leg's token) and [DONE].
  std::string leg =
      "data: " + chat_chunk("chatcmpl-second", R"({"role":"assistant","content":""})") +
      "\n\ndata: " + chat_chunk("chatcmpl-second", R"({"content":" b"})") +
      "\n\ndata: " + chat_chunk("chatcmpl-second", R"({"content":""})", R"("stop")") +
      "\n\ndata: " +
      R"({"id":"chatcmpl-second","object":"chat.completion.chunk","created":222,"model":"m1","choices":[],"usage":{"prompt_tokens":11,"total_tokens":12,"completion_tokens":1}})" +
      "\n\ndata: [DONE]\n\n";
  ASSERT_TRUE(continuation.rewrite_events(leg));
  const std::string out(continuation.rewritten());
  const auto datas = datas_of(out);
  ASSERT_EQ(datas.size(), 4u) << out;  // the role delta is gone
  for (std::size_t i = 0; i + 1 < datas.size(); ++i) {
    const json::object chunk = parsed(datas[i]);
    EXPECT_EQ(chunk.at("id"), "chatcmpl-first");
    EXPECT_EQ(chunk.at("created"), 111);
  }
  EXPECT_EQ(parsed(datas[0]).at("choices").at(0).at("delta").at("content"), " b");
  EXPECT_EQ(parsed(datas[1]).at("choices").at(0).at("finish_reason"), "stop");
  const auto usage = parsed(datas[2]).at("usage");
  EXPECT_EQ(usage.at("prompt_tokens"), 10);     // the first leg's prompt
  EXPECT_EQ(usage.at("completion_tokens"), 2);  // both legs' tokens
  EXPECT_EQ(usage.at("total_tokens"), 12);
  EXPECT_EQ(datas[3], "[DONE]");
  // The ledger: both legs' prompts (10 and 11) and completions (1 and 1).
  const LegTokens computed = continuation.computed(LegTokens{11, 1});
  EXPECT_EQ(computed.prompt, 21u);
  EXPECT_EQ(computed.completion, 2u);
  EXPECT_EQ(continuation.client_view(LegTokens{11, 1}).prompt, 10u);
}

TEST(StreamContinuation, CutInsideReasoningIsReplayedAndTheRepeatCutOff) {
  StreamContinuation continuation(openai::Dialect::chat, 1 << 16);
  stream(continuation, {chat_chunk("chatcmpl-1", R"({"role":"assistant","content":""})"),
                        chat_chunk("chatcmpl-1", R"({"reasoning":"Let me"})"),
                        chat_chunk("chatcmpl-1", R"({"reasoning":" see"})")});
  continuation.cut(2, CutReason::broken);
  ASSERT_EQ(continuation.way(), ContinuationWay::replay);
  const json::object next = parsed(*continuation.next_leg_body(kChatBody));
  EXPECT_EQ(next.at("messages").as_array().size(), 1u) << "the client's request, again";
  EXPECT_EQ(next.at("max_tokens"), 50);
  EXPECT_FALSE(next.contains("continue_final_message"));
  // The replay says "Let me" " see" again (split differently), then more: only the new part
  // reaches the client.
  const std::string leg =
      "data: " + chat_chunk("chatcmpl-2", R"({"role":"assistant","content":""})") +
      "\n\ndata: " + chat_chunk("chatcmpl-2", R"({"reasoning":"Let"})") +
      "\n\ndata: " + chat_chunk("chatcmpl-2", R"({"reasoning":" me see"})") +
      "\n\ndata: " + chat_chunk("chatcmpl-2", R"({"reasoning":" now"})") +
      "\n\ndata: " + chat_chunk("chatcmpl-2", R"({"content":"Done"})") + "\n\n";
  ASSERT_TRUE(continuation.rewrite_events(leg));
  const std::string out(continuation.rewritten());
  const auto datas = datas_of(out);
  ASSERT_EQ(datas.size(), 2u) << out;
  EXPECT_EQ(parsed(datas[0]).at("choices").at(0).at("delta").at("reasoning"), " now");
  EXPECT_EQ(parsed(datas[1]).at("choices").at(0).at("delta").at("content"), "Done");
  EXPECT_EQ(parsed(datas[1]).at("id"), "chatcmpl-1");
}

TEST(StreamContinuation, AReplayThatSaysSomethingElseCannotGoOn) {
  StreamContinuation continuation(openai::Dialect::chat, 1 << 16);
  stream(continuation, {chat_chunk("chatcmpl-1", R"({"role":"assistant","content":""})"),
                        chat_chunk("chatcmpl-1", R"({"reasoning":"Let me"})")});
  continuation.cut(1, CutReason::broken);
  const std::string leg = "data: " + chat_chunk("chatcmpl-2", R"({"reasoning":"Hmm"})") + "\n\n";
  EXPECT_FALSE(continuation.rewrite_events(leg));
  EXPECT_TRUE(continuation.rewritten().empty());
}

TEST(StreamContinuation, ShortOrBlankContentIsReplayedNotContinued) {
  // transformers cuts a rendered chat after the last occurrence of the final content: content
  // that also occurs in "<|im_end|>\n", or blank content, would be cut in the wrong place.
  for (const std::string content : {"\\n\\n", "end", "d"}) {
    StreamContinuation continuation(openai::Dialect::chat, 1 << 16);
    stream(continuation, {chat_chunk("chatcmpl-1", R"({"role":"assistant","content":""})"),
                          chat_chunk("chatcmpl-1", R"({"content":")" + content + R"("})")});
    continuation.cut(1, CutReason::broken);
    EXPECT_EQ(continuation.way(), ContinuationWay::replay) << content;
  }
}

TEST(StreamContinuation, ToolCallsAndOverflowAreNotContinued) {
  StreamContinuation tool(openai::Dialect::chat, 1 << 16);
  stream(
      tool,
      {chat_chunk("chatcmpl-1", R"({"role":"assistant","content":""})"),
       chat_chunk(
           "chatcmpl-1",
           R"({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"shell","arguments":""}}]})"),
       chat_chunk("chatcmpl-1",
                  R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"cmd\":"}}]})")});
  EXPECT_NE(tool.why_not_continuable(), nullptr);

  StreamContinuation small(openai::Dialect::chat, 8);
  stream(small, {chat_chunk("chatcmpl-1", R"({"role":"assistant","content":""})"),
                 chat_chunk("chatcmpl-1", R"({"content":" one two"})"),
                 chat_chunk("chatcmpl-1", R"({"content":" three"})")});
  EXPECT_NE(small.why_not_continuable(), nullptr);
}

}  // namespace
}  // namespace llmux::gateway
