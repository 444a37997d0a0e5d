// SPDX-License-Identifier: Apache-2.0
// Anthropic's Messages API out (issue 39, item 2): the events of a /v1/messages stream and the
// non-streaming body, byte for byte where vLLM's serialisation fixes them.
//
// Sources (vllm-project/vllm, main at commit 0001948b):
// - vllm/entrypoints/anthropic/serving.py message_stream_converter: message_start from the chat
//   stream's first chunk (id, model, usage.input_tokens = prompt tokens, output_tokens 0),
//   content_block_start / content_block_delta (thinking_delta, text_delta, input_json_delta) /
//   content_block_stop per block, a signature_delta before a thinking block stops
//   (stop_active_block), message_delta {stop_reason, usage} from the usage chunk, message_stop
//   for [DONE]; every event `event: <type>\ndata: <json>\n\n`, written with
//   model_dump_json(exclude_unset=True), so fields come in the models' declaration order
//   (protocol.py at 00589e56: AnthropicStreamEvent type, message, delta, content_block, index…)
//   and the message_start message has no "type"/"role".
// - messages_full_converter: content thinking (signature uuid4().hex), text, tool_use (input =
//   json.loads(arguments)); stop_reason map stop → end_turn, length → max_tokens, tool_calls →
//   tool_use; api_router.py writes it with model_dump(exclude_none=True): no stop_sequence.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <string>
#include <vector>

#include "sim/frames.hpp"
#include "sim/job.hpp"
#include "sim/messages_frames.hpp"
#include "sim/textgen.hpp"
#include "sim/turn.hpp"

namespace llmux::sim {
namespace {

namespace json = boost::json;

struct Event {
  std::string type;  // the `event:` line
  std::string data;  // the `data:` line as sent
};

std::vector<Event> parse_events(const std::string& raw) {
  std::vector<Event> events;
  std::size_t position = 0;
  while (position < raw.size()) {
    const auto end = raw.find("\n\n", position);
    EXPECT_NE(end, std::string::npos) << "an event without its blank line";
    if (end == std::string::npos) break;
    const std::string block = raw.substr(position, end - position);
    position = end + 2;
    const auto newline = block.find('\n');
    EXPECT_TRUE(block.starts_with("event: ")) << block;
    EXPECT_EQ(block.substr(newline + 1, 6), "data: ") << block;
    events.push_back(Event{block.substr(7, newline - 7), block.substr(newline + 7)});
    EXPECT_EQ(json::parse(events.back().data).at("type"), json::value(events.back().type));
  }
  return events;
}

// Runs a job through the frame writers as the engine driver does, token by token.
struct Streamed {
  boost::asio::io_context io_context;
  Job job{io_context.get_executor()};
  std::vector<Event> events;

  void start(std::size_t tokens, bool natural_end) {
    job.req.endpoint = Endpoint::Chat;
    job.req.messages_api = true;
    job.req.stream = true;
    job.meta.endpoint = Endpoint::Chat;
    job.meta.id = "chatcmpl-abc";
    job.meta.model = "Qwen3.6-35B-A3B";
    job.meta.finish_reason = natural_end ? "stop" : "length";
    job.usage.prompt_tokens = 17;
    append_opening_frames(job);
    EXPECT_TRUE(job.out.empty()) << "nothing before the first token, as vLLM";
    for (std::size_t i = 0; i < tokens; ++i) {
      job.emitted = static_cast<int>(i + 1);
      job.usage.completion_tokens = job.emitted;
      append_token_frame(job, static_cast<int>(i), i + 1 == tokens);
    }
    append_done_frames(job);
    events = parse_events(job.out);
  }
  Streamed(TurnPlan plan, std::size_t max_tokens = SIZE_MAX) {
    const std::size_t tokens = std::min(plan.pieces.size(), max_tokens);
    const bool natural_end = tokens == plan.pieces.size();
    job.turn_plan = std::make_shared<TurnPlan>(std::move(plan));
    start(tokens, natural_end);
  }
  Streamed(std::size_t words, bool natural_end) {
    job.words = generate_words(7, words);
    start(words, natural_end);
  }
  std::vector<std::string> types() const {
    std::vector<std::string> result;
    for (const auto& event : events) result.push_back(event.type);
    return result;
  }
};

TurnPlan scripted_turn() {
  return make_plan("I should run ls.", "Listing now.", {{"Bash", R"({"command": "ls -la"})"}});
}

TEST(MessagesEvents, GeneratedWordsAreOneTextBlock) {
  Streamed streamed(3, true);
  ASSERT_EQ(streamed.types(),
            (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                      "content_block_delta", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"}));
  const auto& events = streamed.events;
  EXPECT_EQ(
      events[0].data,
      R"({"type":"message_start","message":{"id":"chatcmpl-abc","content":[],"model":"Qwen3.6-35B-A3B","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":17,"output_tokens":0}}})");
  EXPECT_EQ(
      events[1].data,
      R"({"type":"content_block_start","content_block":{"type":"text","text":""},"index":0})");
  std::string text;
  for (std::size_t i = 2; i < 5; ++i) {
    const auto delta = json::parse(events[i].data).as_object();
    EXPECT_EQ(delta.at("index"), 0);
    EXPECT_EQ(delta.at("delta").at("type"), "text_delta");
    text += delta.at("delta").at("text").as_string();
  }
  EXPECT_EQ(text, streamed.job.text());
  EXPECT_EQ(events[5].data, R"({"type":"content_block_stop","index":0})");
  EXPECT_EQ(
      events[6].data,
      R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":17,"output_tokens":3}})");
  EXPECT_EQ(events[7].data, R"({"type":"message_stop"})");
}

TEST(MessagesEvents, CutByMaxTokensStopsWithMaxTokens) {
  Streamed streamed(2, false);
  EXPECT_EQ(json::parse(streamed.events[streamed.events.size() - 2].data).at("delta"),
            json::parse(R"({"stop_reason":"max_tokens"})"));
}

// Thinking, text and a tool call: three blocks, the thinking one signed before it stops.
TEST(MessagesEvents, ScriptedTurnStreamsThinkingTextAndToolUseBlocks) {
  Streamed streamed(scripted_turn());
  const TurnPlan& plan = *streamed.job.turn_plan;
  const OutputCall& call = plan.full.calls[0];
  const auto& events = streamed.events;
  std::string thinking, text, arguments, signature;
  std::vector<std::string> sequence;  // the block events, deltas collapsed
  for (const auto& event : events) {
    const auto data = json::parse(event.data).as_object();
    if (event.type != "content_block_delta") {
      sequence.push_back(event.type);
      continue;
    }
    const auto& delta = data.at("delta").as_object();
    const std::string type(delta.at("type").as_string());
    if (sequence.back() != type) sequence.push_back(type);
    if (type == "thinking_delta") thinking += delta.at("thinking").as_string();
    if (type == "text_delta") text += delta.at("text").as_string();
    if (type == "input_json_delta") arguments += delta.at("partial_json").as_string();
    if (type == "signature_delta") signature = delta.at("signature").as_string();
    const int expected_index = type == "thinking_delta" || type == "signature_delta" ? 0
                               : type == "text_delta"                                ? 1
                                                                                     : 2;
    EXPECT_EQ(data.at("index"), expected_index) << event.data;
  }
  EXPECT_EQ(sequence,
            (std::vector<std::string>{"message_start", "content_block_start", "thinking_delta",
                                      "signature_delta", "content_block_stop",
                                      "content_block_start", "text_delta", "content_block_stop",
                                      "content_block_start", "input_json_delta",
                                      "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(thinking, plan.full.reasoning);
  EXPECT_EQ(text, plan.full.text);
  EXPECT_EQ(arguments, call.arguments);
  EXPECT_EQ(signature.size(), 32u);
  // The block starts, byte for byte.
  std::vector<std::string> starts;
  for (const auto& event : events)
    if (event.type == "content_block_start") starts.push_back(event.data);
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(
      starts[0],
      R"({"type":"content_block_start","content_block":{"type":"thinking","thinking":""},"index":0})");
  EXPECT_EQ(
      starts[1],
      R"({"type":"content_block_start","content_block":{"type":"text","text":""},"index":1})");
  EXPECT_EQ(starts[2],
            R"({"type":"content_block_start","content_block":{"type":"tool_use","id":")" +
                call.call_id + R"(","name":"Bash","input":{}},"index":2})");
  EXPECT_EQ(
      events[events.size() - 2].data,
      R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":17,"output_tokens":)" +
          std::to_string(plan.pieces.size()) + "}}");
}

// A call cut by max_tokens: the tool_use block stops where it was, stop_reason max_tokens.
TEST(MessagesEvents, CallCutByMaxTokens) {
  TurnPlan plan = scripted_turn();
  const std::size_t tokens = plan.pieces.size() - 2;
  Streamed streamed(std::move(plan), tokens);
  const auto& events = streamed.events;
  EXPECT_EQ(events[events.size() - 3].data, R"({"type":"content_block_stop","index":2})");
  EXPECT_EQ(json::parse(events[events.size() - 2].data).at("delta").at("stop_reason"),
            "max_tokens");
}

ResponseMeta body_meta(std::string finish_reason) {
  ResponseMeta meta;
  meta.endpoint = Endpoint::Chat;
  meta.id = "chatcmpl-abc";
  meta.model = "Qwen3.6-35B-A3B";
  meta.finish_reason = std::move(finish_reason);
  return meta;
}

TEST(MessagesBody, ThinkingTextAndToolUseWithVllmsFields) {
  const TurnPlan plan = scripted_turn();
  auto answer = messages_body(body_meta("stop"), plan.full, Usage{17, 30});
  ASSERT_TRUE(std::holds_alternative<std::string>(answer));
  const std::string& body = std::get<std::string>(answer);
  const auto parsed = json::parse(body).as_object();
  const auto& content = parsed.at("content").as_array();
  ASSERT_EQ(content.size(), 3u);
  const std::string signature(content[0].at("signature").as_string());
  EXPECT_EQ(signature.size(), 32u);
  EXPECT_EQ(
      body,
      R"({"id":"chatcmpl-abc","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"I should run ls.","signature":")" +
          signature + R"("},{"type":"text","text":"Listing now."},{"type":"tool_use","id":")" +
          plan.full.calls[0].call_id +
          R"(","name":"Bash","input":{"command":"ls -la"}}],"model":"Qwen3.6-35B-A3B","stop_reason":"tool_use","usage":{"input_tokens":17,"output_tokens":30}})");
}

TEST(MessagesBody, PlainTextEndsTheTurnOrHitsMaxTokens) {
  TurnOutput words;
  words.text = " the word";
  EXPECT_EQ(
      std::get<std::string>(messages_body(body_meta("stop"), words, Usage{5, 2})),
      R"({"id":"chatcmpl-abc","type":"message","role":"assistant","content":[{"type":"text","text":" the word"}],"model":"Qwen3.6-35B-A3B","stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}})");
  const auto cut =
      json::parse(std::get<std::string>(messages_body(body_meta("length"), words, {})));
  EXPECT_EQ(cut.at("stop_reason"), "max_tokens");
}

// vLLM's json.loads of a call cut mid-arguments raises: api_router answers 500 internal_error.
TEST(MessagesBody, CallCutMidArgumentsIsAnInternalError) {
  const TurnPlan plan = scripted_turn();
  auto answer = messages_body(body_meta("length"), plan.emitted(plan.pieces.size() - 2), {});
  ASSERT_TRUE(std::holds_alternative<ApiError>(answer));
  const ApiError& error = std::get<ApiError>(answer);
  EXPECT_EQ(error.status, 500);
  EXPECT_EQ(error.type, "internal_error");
  EXPECT_TRUE(error.anthropic);
}

TEST(MessagesBody, StopReasonsAndErrorShape) {
  EXPECT_EQ(messages_stop_reason("stop"), "end_turn");
  EXPECT_EQ(messages_stop_reason("length"), "max_tokens");
  EXPECT_EQ(messages_stop_reason("tool_calls"), "tool_use");
  EXPECT_EQ(messages_stop_reason("abort"), "");
  EXPECT_EQ(
      anthropic_error_json("NotFoundError", "The model `x` does not exist."),
      R"({"type":"error","error":{"type":"NotFoundError","message":"The model `x` does not exist."}})");
}

}  // namespace
}  // namespace llmux::sim
