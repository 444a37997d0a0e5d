// SPDX-License-Identifier: Apache-2.0
// The stream reader on Anthropic's Messages API (openai/stream_messages_events.cpp): streams and
// bodies shaped as vLLM writes them (vllm/entrypoints/anthropic/serving.py,
// message_stream_converter and messages_full_converter) and as Anthropic's API does (its cache
// counts apart from input_tokens).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai/sse.hpp"
#include "openai/stream.hpp"

namespace llmux::openai::messages_stream_test {
namespace {

// clang-format off
// vLLM's sequence: message_start (usage.input_tokens = the prompt), a thinking block closed by a
// signature_delta, a text block, a tool_use block fed by input_json_delta, message_delta with the
// stop reason and both counts, message_stop.
const char* const kVllmMessagesStream =
    "event: message_start\n"
    R"(data: {"type":"message_start","message":{"id":"chatcmpl-5e1","type":"message","role":"assistant","content":[],"model":"Qwen3.6-35B-A3B","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":31,"output_tokens":0}}})"
    "\n\n"
    "event: content_block_start\n"
    R"(data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants a listing."}})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"9f2c"}})"
    "\n\n"
    "event: content_block_stop\n"
    R"(data: {"type":"content_block_stop","index":0})"
    "\n\n"
    "event: content_block_start\n"
    R"(data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me look."}})"
    "\n\n"
    "event: content_block_stop\n"
    R"(data: {"type":"content_block_stop","index":1})"
    "\n\n"
    "event: content_block_start\n"
    R"(data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_7","name":"Bash","input":{}}})"
    "\n\n"
    "event: content_block_delta\n"
    R"(data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"ls\"}"}})"
    "\n\n"
    "event: content_block_stop\n"
    R"(data: {"type":"content_block_stop","index":2})"
    "\n\n"
    "event: message_delta\n"
    R"(data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":31,"output_tokens":17}})"
    "\n\n"
    "event: message_stop\n"
    R"(data: {"type":"message_stop"})"
    "\n\n";
// clang-format on

struct Seen {
  std::string event;
  EventInfo info;
};

std::vector<Seen> run(StreamInterpreter& reader, std::string_view stream, std::size_t step) {
  SseParser parser;
  std::vector<Seen> seen;
  for (std::size_t i = 0; i < stream.size(); i += step)
    parser.feed(stream.substr(i, step), [&](const SseEvent& event) {
      seen.push_back({std::string(event.event), reader.on_event(event)});
    });
  EXPECT_FALSE(parser.mid_event());
  return seen;
}

const Seen& named(const std::vector<Seen>& seen, std::string_view event, int occurrence = 0) {
  for (const Seen& one : seen)
    if (one.event == event && occurrence-- == 0) return one;
  ADD_FAILURE() << "no " << event;
  static const Seen kNone;
  return kNone;
}

TEST(MessagesStream, VllmSequenceGivesUsageContentAndEnd) {
  StreamInterpreter reader(Dialect::messages);
  const auto seen = run(reader, kVllmMessagesStream, 7);
  ASSERT_EQ(seen.size(), 13u);
  // Usage from message_start (the prompt) and message_delta (the output).
  EXPECT_TRUE(named(seen, "message_start").info.usage);
  EXPECT_FALSE(named(seen, "message_start").info.content);
  EXPECT_TRUE(named(seen, "message_delta").info.usage);
  EXPECT_EQ(reader.usage().prompt_tokens, 31u);
  EXPECT_EQ(reader.usage().completion_tokens, 17u);
  EXPECT_FALSE(reader.usage().cached_tokens);
  // Content: the thinking, text and tool input deltas, and the tool_use block's start (its name
  // is generated, as a chat tool call's first delta is); not the empty block starts or the
  // signature.
  EXPECT_TRUE(named(seen, "content_block_delta", 0).info.content);
  EXPECT_FALSE(named(seen, "content_block_delta", 1).info.content);  // signature_delta
  EXPECT_TRUE(named(seen, "content_block_delta", 2).info.content);
  EXPECT_TRUE(named(seen, "content_block_delta", 3).info.content);
  EXPECT_FALSE(named(seen, "content_block_start", 0).info.content);
  EXPECT_FALSE(named(seen, "content_block_start", 1).info.content);
  EXPECT_TRUE(named(seen, "content_block_start", 2).info.content);
  EXPECT_EQ(reader.content_events(), 4u);
  EXPECT_GT(reader.tokens(), 3u);
  EXPECT_TRUE(named(seen, "message_stop").info.done);
  EXPECT_FALSE(named(seen, "message_delta").info.done);
  EXPECT_TRUE(reader.done());
  EXPECT_EQ(reader.finish_reason(), "tool_use");
  EXPECT_EQ(reader.id(), "chatcmpl-5e1");
  EXPECT_FALSE(reader.error());
}

TEST(MessagesStream, KeepsWhatWasGeneratedApartByKind) {
  StreamInterpreter reader(Dialect::messages);
  GeneratedText generated;
  generated.limit = 1 << 20;
  reader.keep_generated(&generated);
  run(reader, kVllmMessagesStream, 64);
  EXPECT_EQ(generated.reasoning, "The user wants a listing.");
  EXPECT_EQ(generated.content, "Let me look.");
  EXPECT_TRUE(generated.tool_call);
  EXPECT_TRUE(generated.output_began);
}

TEST(MessagesStream, AnthropicCacheCountsAreAddedToThePrompt) {
  // Anthropic counts input_tokens apart from the cached prompt; message_delta then carries only
  // the output count, which must not erase the prompt.
  StreamInterpreter reader(Dialect::messages);
  reader.on_event(
      "message_start",
      R"({"type":"message_start","message":{"id":"msg_01","usage":{"input_tokens":4,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1}}})");
  reader.on_event(
      "message_delta",
      R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":25}})");
  EXPECT_EQ(reader.usage().prompt_tokens, 2104u);
  EXPECT_EQ(reader.usage().cached_tokens, 2000u);
  EXPECT_EQ(reader.usage().completion_tokens, 25u);
  EXPECT_EQ(reader.finish_reason(), "end_turn");
}

TEST(MessagesStream, PromptCountsThatOverflowSaturate) {
  StreamInterpreter reader(Dialect::messages);
  reader.on_event(
      "message_start",
      R"({"type":"message_start","message":{"id":"m","usage":{"input_tokens":18446744073709551615,"cache_read_input_tokens":2}}})");
  EXPECT_EQ(reader.usage().prompt_tokens, UINT64_MAX);
}

TEST(MessagesStream, ErrorEventIsAnError) {
  StreamInterpreter reader(Dialect::messages);
  const EventInfo info = reader.on_event(
      "error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  EXPECT_TRUE(info.error);
  ASSERT_TRUE(reader.error());
  EXPECT_EQ(reader.error()->type, "overloaded_error");
  EXPECT_EQ(reader.error()->message, "Overloaded");
}

TEST(MessagesStream, PingCarriesNothing) {
  StreamInterpreter reader(Dialect::messages);
  const EventInfo info = reader.on_event("ping", R"({"type":"ping"})");
  EXPECT_FALSE(info.content || info.usage || info.error || info.done || info.malformed);
}

TEST(MessagesBody, VllmBodyGivesUsageTextAndStopReason) {
  // messages_full_converter's body: thinking, text and a tool_use whose input is an object.
  StreamInterpreter reader(Dialect::messages, /*capture_text=*/true);
  const EventInfo info = reader.on_body(
      R"({"id":"chatcmpl-9","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"Think.","signature":"ab"},{"type":"text","text":"Done here."},{"type":"tool_use","id":"call_1","name":"Read","input":{"path":"/etc/hostname"}}],"model":"Qwen3.6-35B-A3B","stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":52,"output_tokens":11}})");
  EXPECT_TRUE(info.done);
  EXPECT_TRUE(info.usage);
  EXPECT_TRUE(info.tokens_exact);
  EXPECT_EQ(info.tokens, 11u);
  EXPECT_EQ(reader.usage().prompt_tokens, 52u);
  EXPECT_EQ(reader.usage().completion_tokens, 11u);
  EXPECT_EQ(reader.finish_reason(), "tool_use");
  EXPECT_EQ(reader.id(), "chatcmpl-9");
  EXPECT_NE(reader.text().find("Done here."), std::string::npos);
  EXPECT_NE(reader.text().find("/etc/hostname"), std::string::npos);
}

TEST(MessagesBody, UsageOnlyReaderReadsMessagesCounts) {
  // The gateway's tap asks for the usage alone (on_body_usage): Messages names its counts its
  // own way, cache fields included.
  StreamInterpreter reader(Dialect::messages);
  reader.on_body_usage(
      R"({"id":"msg_2","type":"message","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":3,"cache_read_input_tokens":40,"output_tokens":2}})");
  EXPECT_EQ(reader.usage().prompt_tokens, 43u);
  EXPECT_EQ(reader.usage().cached_tokens, 40u);
  EXPECT_EQ(reader.usage().completion_tokens, 2u);
}

TEST(MessagesBody, AnthropicErrorBodyIsAnError) {
  StreamInterpreter reader(Dialect::messages);
  const EventInfo info = reader.on_body(
      R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}})");
  EXPECT_TRUE(info.error);
  ASSERT_TRUE(reader.error());
  EXPECT_EQ(reader.error()->type, "invalid_request_error");
}

TEST(MessagesDialect, NamesAndPath) {
  EXPECT_EQ(parse_dialect("messages"), Dialect::messages);
  EXPECT_EQ(to_string(Dialect::messages), "messages");
  EXPECT_EQ(endpoint_path(Dialect::messages), "/v1/messages");
}

}  // namespace
}  // namespace llmux::openai::messages_stream_test
