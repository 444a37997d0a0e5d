// SPDX-License-Identifier: Apache-2.0
// Anthropic's Messages API over real HTTP (issue 39, item 2): `llmux sim` serves POST
// /v1/messages and /v1/messages/count_tokens as vLLM does (vllm/entrypoints/anthropic/
// serving.py and api_router.py at vLLM main commit 0001948b; shapes field by field in
// tests/unit/sim/messages_*_test.cpp). A scripted tool turn as Claude Code sends it (?beta=true,
// its headers and extra fields, an inline system message), streaming and not; the prompt counted
// and prefix-cached as chat's; count_tokens; the statistical tool mode; vLLM's statuses and
// bodies for malformed requests and its serving errors.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/sim_suite.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;

constexpr const char* kScript = R"(
- match: "list the files"
  reasoning: "The user wants the files; I will run ls."
  tool_calls:
    - name: Bash
      arguments: {command: "ls -la"}
- match: "README.md"
  text: "There are two entries: README.md and src."
)";
constexpr const char* kReasoning = "The user wants the files; I will run ls.";
constexpr const char* kArguments = R"({"command": "ls -la"})";
constexpr const char* kAnswer = "There are two entries: README.md and src.";
constexpr const char* kModel = "Qwen3.6-35B-A3B";

// Claude Code's headers (it authenticates with x-api-key or a bearer token).
const Headers kClaudeHeaders = {
    {"anthropic-version", "2023-06-01"},
    {"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"},
    {"x-api-key", "sk-test"},
    {"X-Claude-Code-Session-Id", "session-1"}};

// Claude Code's fields beside the conversation: thinking, context_management, output_config,
// metadata, a billing header block, and an inline system message after the user's turn.
std::string claude_request(const std::string& messages, bool stream) {
  return std::string(R"({"model":")") + kModel + R"(","max_tokens":32000,"stream":)" +
         (stream ? "true" : "false") +
         R"(,"temperature":1,"thinking":{"type":"enabled","budget_tokens":31999},
    "context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
    "output_config":{"effort":"high"},"metadata":{"user_id":"user_1_session_1"},
    "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.332; cch=1a2b3;"},
              {"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
    "tools":[{"name":"Bash","description":"Runs a shell command","input_schema":{"type":"object",
              "properties":{"command":{"type":"string"}},"required":["command"]}},
             {"name":"Read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}],
    "messages":)" +
         messages + "}";
}

std::string turn1_messages() {
  return R"([{"role":"user","content":[{"type":"text","text":"please list the files"}]},
             {"role":"system","content":"Available agent types: none."}])";
}

std::string turn2_messages(const std::string& tool_use_id) {
  return R"([{"role":"user","content":[{"type":"text","text":"please list the files"}]},
             {"role":"assistant","content":[{"type":"thinking","thinking":"The user wants the files; I will run ls.","signature":"s"},
               {"type":"tool_use","id":")" +
         tool_use_id + R"(","name":"Bash","input":{"command":"ls -la"}}]},
             {"role":"user","content":[{"type":"tool_result","tool_use_id":")" +
         tool_use_id + R"(","content":"README.md\nsrc\n"}]},
             {"role":"system","content":"Available agent types: none."}])";
}

std::vector<SseEvent> stream_events(int port, const std::string& body) {
  auto stream =
      StreamingResponse::open(port, "POST", "/v1/messages?beta=true", body, kClaudeHeaders);
  EXPECT_EQ(stream->status(), 200);
  EXPECT_EQ(stream->header("content-type"), "text/event-stream; charset=utf-8");
  SseResult result = read_sse(*stream);
  EXPECT_EQ(result.end, ReadStatus::End) << to_string(result.end);
  return result.events;
}

json::object post_message(int port, const std::string& body, int status = 200) {
  HttpClient client(port);
  Response response = client.post("/v1/messages?beta=true", body, kClaudeHeaders);
  EXPECT_EQ(response.status, status) << body << " -> " << response.body;
  const json::value parsed = parse_json(response.body);
  return parsed.is_object() ? parsed.get_object() : json::object{};
}

class SimMessages : public SimSuite {
 protected:
  static void SetUpTestSuite() {
    directory_ = std::make_unique<TempDir>();
    start({"--time-scale", "50", "--script", directory_->write("agent.yaml", kScript)});
  }
  static inline std::unique_ptr<TempDir> directory_;
};

// Turn 1 streams a thinking block and a tool_use block and stops with tool_use; turn 2 sends the
// tool_result back and streams the scripted answer as a text block ending the turn.
TEST_F(SimMessages, StreamingToolTurnThenAnswer) {
  const auto events = stream_events(port(), claude_request(turn1_messages(), true));
  ASSERT_GE(events.size(), 6u);
  EXPECT_EQ(events.front().event, "message_start");
  EXPECT_EQ(events.back().event, "message_stop");
  const json::value start = parse_json(events.front().data);
  EXPECT_TRUE(str(start.at("message").at("id")).starts_with("chatcmpl-"));
  EXPECT_EQ(start.at("message").at("model"), kModel);
  const std::int64_t input_tokens = i64(start.at("message").at("usage").at("input_tokens"));
  EXPECT_GT(input_tokens, 0);
  std::string thinking, arguments, tool_use_id;
  std::vector<std::string> blocks;
  for (const auto& event : events) {
    const json::value data = parse_json(event.data);
    EXPECT_EQ(data.at("type"), json::value(event.event));
    EXPECT_NE(event.event, "ping");
    if (event.event == "content_block_start") {
      blocks.push_back(str(data.at("content_block").at("type")));
      if (blocks.back() == "tool_use") {
        tool_use_id = str(data.at("content_block").at("id"));
        EXPECT_EQ(data.at("content_block").at("name"), "Bash");
      }
    }
    if (event.event == "content_block_delta") {
      const auto& delta = data.at("delta");
      if (delta.at("type") == "thinking_delta") thinking += str(delta.at("thinking"));
      if (delta.at("type") == "input_json_delta") arguments += str(delta.at("partial_json"));
    }
  }
  EXPECT_EQ(blocks, (std::vector<std::string>{"thinking", "tool_use"}));
  EXPECT_EQ(thinking, kReasoning);
  EXPECT_EQ(arguments, kArguments);
  const json::value delta = parse_json(events[events.size() - 2].data);
  EXPECT_EQ(delta.at("delta").at("stop_reason"), "tool_use");
  EXPECT_EQ(i64(delta.at("usage").at("input_tokens")), input_tokens);
  EXPECT_EQ(i64(delta.at("usage").at("output_tokens")),
            static_cast<std::int64_t>(count_tokens(kReasoning) + 1 + count_tokens(kArguments)));

  const auto answer = stream_events(port(), claude_request(turn2_messages(tool_use_id), true));
  std::string text;
  blocks.clear();
  for (const auto& event : answer) {
    const json::value data = parse_json(event.data);
    if (event.event == "content_block_start")
      blocks.push_back(str(data.at("content_block").at("type")));
    if (event.event == "content_block_delta") text += str(data.at("delta").at("text"));
  }
  EXPECT_EQ(blocks, (std::vector<std::string>{"text"}));
  EXPECT_EQ(text, kAnswer);
  ASSERT_GE(answer.size(), 2u);
  EXPECT_EQ(parse_json(answer[answer.size() - 2].data).at("delta").at("stop_reason"), "end_turn");
}

TEST_F(SimMessages, NonStreamingToolTurnThenAnswer) {
  const json::object first = post_message(port(), claude_request(turn1_messages(), false));
  EXPECT_EQ(first.at("type"), "message");
  EXPECT_EQ(first.at("role"), "assistant");
  EXPECT_EQ(first.at("stop_reason"), "tool_use");
  EXPECT_FALSE(first.contains("stop_sequence"));  // exclude_none drops it
  const auto& content = first.at("content").as_array();
  ASSERT_EQ(content.size(), 2u) << json::serialize(first);
  EXPECT_EQ(content[0].at("type"), "thinking");
  EXPECT_EQ(content[0].at("thinking"), kReasoning);
  EXPECT_EQ(content[1].at("type"), "tool_use");
  EXPECT_EQ(content[1].at("name"), "Bash");
  EXPECT_EQ(content[1].at("input"), json::parse(kArguments));
  // A chat body's tool call id (vLLM's ToolCall default).
  EXPECT_TRUE(str(content[1].at("id")).starts_with("chatcmpl-tool-"));

  const json::object second =
      post_message(port(), claude_request(turn2_messages(str(content[1].at("id"))), false));
  EXPECT_EQ(second.at("stop_reason"), "end_turn");
  EXPECT_EQ(second.at("content"),
            json::parse(std::string(R"([{"type":"text","text":")") + kAnswer + R"("}])"));
  EXPECT_GT(i64(second.at("usage").at("input_tokens")), i64(first.at("usage").at("input_tokens")));
  EXPECT_EQ(i64(second.at("usage").at("output_tokens")),
            static_cast<std::int64_t>(count_tokens(kAnswer)));
}

// count_tokens answers the prompt /v1/messages is charged for, without max_tokens.
TEST_F(SimMessages, CountTokensIsThePromptOfTheMessage) {
  const std::string body = claude_request(turn1_messages(), false);
  const json::object message = post_message(port(), body);
  HttpClient client(port());
  const std::string count_body =
      R"({"model":")" + std::string(kModel) + R"(","system":"You are Claude Code.","messages":)" +
      turn1_messages() +
      R"(,"tools":[{"name":"Bash","description":"Runs a shell command","input_schema":{"type":"object",
              "properties":{"command":{"type":"string"}},"required":["command"]}},
             {"name":"Read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}]})";
  const Response counted =
      client.post("/v1/messages/count_tokens?beta=true", count_body, kClaudeHeaders);
  ASSERT_EQ(counted.status, 200) << counted.body;
  const std::int64_t input_tokens = i64(message.at("usage").at("input_tokens"));
  EXPECT_EQ(parse_json(counted.body),
            json::parse(R"({"input_tokens":)" + std::to_string(input_tokens) +
                        R"(,"context_management":{"original_input_tokens":)" +
                        std::to_string(input_tokens) + "}}"));
}

// The prompt is chat's: the same tokens as the chat request vLLM converts it to, and the second
// request with the same prefix hits the prefix cache (the sim's ground truth records it).
TEST_F(SimMessages, PromptIsChatsAndIsPrefixCached) {
  const std::string messages_body =
      std::string(R"({"model":")") + kModel +
      R"(","max_tokens":4,"system":"Be brief.","messages":[{"role":"user","content":"say something about the weather today"}]})";
  const json::object first = post_message(port(), messages_body);
  const json::object second = post_message(port(), messages_body);
  HttpClient client(port());
  const Response chat = client.post(
      "/v1/chat/completions",
      std::string(R"({"model":")") + kModel +
          R"(","max_tokens":4,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"say something about the weather today"}]})");
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(i64(first.at("usage").at("input_tokens")),
            i64(parse_json(chat.body).at("usage").at("prompt_tokens")));
  const Response timing = client.get("/debug/requests/" + str(second.at("id")));
  ASSERT_EQ(timing.status, 200) << timing.body;
  EXPECT_GT(i64(parse_json(timing.body).at("cached_tokens")), 0) << timing.body;
}

// No script turn matches: generated words, cut by max_tokens.
TEST_F(SimMessages, MaxTokensCutsGeneratedWords) {
  const json::object body = post_message(
      port(),
      std::string(R"({"model":")") + kModel +
          R"(","max_tokens":3,"messages":[{"role":"user","content":"tell me a long story"}]})");
  EXPECT_EQ(body.at("stop_reason"), "max_tokens");
  EXPECT_EQ(i64(body.at("usage").at("output_tokens")), 3);
  EXPECT_EQ(count_tokens(str(body.at("content").at(0).at("text"))), 3u);
}

// Malformed requests: vLLM's schema errors keep its OpenAI shape (400 "Bad Request"); its serving
// errors come in Anthropic's shape with vLLM's own types.
TEST_F(SimMessages, MalformedRequestsGetVllmsAnswers) {
  HttpClient client(port());
  const auto check_schema_error = [&](const std::string& body, const std::string& wanted) {
    const Response response = client.post("/v1/messages", body, kClaudeHeaders);
    EXPECT_EQ(response.status, 400) << body;
    std::string why;
    EXPECT_TRUE(is_openai_error(response.body, 400, &why)) << why << ": " << response.body;
    EXPECT_EQ(error_type(response.body), "Bad Request");
    EXPECT_NE(error_message(response.body).find(wanted), std::string::npos) << response.body;
  };
  check_schema_error("{not json", "'type': 'json_invalid'");
  check_schema_error(R"({"model":"Qwen3.6-35B-A3B","messages":[{"role":"user","content":"x"}]})",
                     "'loc': ('body', 'max_tokens'), 'msg': 'Field required'");
  check_schema_error(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5})",
                     "'loc': ('body', 'messages'), 'msg': 'Field required'");
  check_schema_error(
      R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document"}]}]})",
      "'loc': ('body', 'messages', 0, 'content', 'list[AnthropicContentBlock]', 0, 'type')");

  const Response wrong_model = client.post(
      "/v1/messages",
      R"({"model":"claude-opus-4","max_tokens":5,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(wrong_model.status, 404);
  EXPECT_EQ(
      parse_json(wrong_model.body),
      json::parse(
          R"({"type":"error","error":{"type":"NotFoundError","message":"The model `claude-opus-4` does not exist."}})"));
  const Response too_long = client.post(
      "/v1/messages",
      R"({"model":"Qwen3.6-35B-A3B","max_tokens":900000,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(parse_json(too_long.body).at("error").at("type"), "BadRequestError") << too_long.body;
  const Response count_missing =
      client.post("/v1/messages/count_tokens", R"({"model":"Qwen3.6-35B-A3B"})");
  EXPECT_EQ(count_missing.status, 400);
  EXPECT_NE(error_message(count_missing.body).find("('body', 'messages')"), std::string::npos);
  // A GET is Starlette's 405; the server keeps serving.
  const Response get = client.get("/v1/messages");
  EXPECT_EQ(get.status, 405);
  EXPECT_EQ(get.header("allow"), "POST");
  EXPECT_EQ(client.get("/health").status, 200);
}

// Fault injection applies as for chat, answered in Anthropic's shape.
TEST_F(SimMessages, FaultErrorsAreAnthropicShaped) {
  HttpClient client(port());
  const Response response = client.post(
      "/v1/messages",
      R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"messages":[{"role":"user","content":"x"}]})",
      {{"X-Llmux-Fault", "error=503"}});
  EXPECT_EQ(response.status, 503);
  const json::value body = parse_json(response.body);
  EXPECT_EQ(body.at("type"), "error");
  EXPECT_EQ(body.at("error").at("message"), "Simulated fault: the server answered 503.");
}

// The stream faults apply as for chat: close-after cuts the stream (no message_delta, no
// message_stop), malformed json breaks the first token's delta event and nothing else.
class SimMessagesFaults : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50"}); }
};

std::string words_request(int max_tokens) {
  return std::string(R"({"model":")") + kModel + R"(","max_tokens":)" + std::to_string(max_tokens) +
         R"(,"stream":true,"messages":[{"role":"user","content":"tell me a long story"}]})";
}

TEST_F(SimMessagesFaults, CloseAfterCutsTheStream) {
  auto stream = StreamingResponse::open(port(), "POST", "/v1/messages", words_request(8),
                                        {{"X-Llmux-Fault", "close-after=2"}});
  ASSERT_EQ(stream->status(), 200);
  const SseResult result = read_sse(*stream);
  EXPECT_EQ(result.end, ReadStatus::Closed) << to_string(result.end);
  std::vector<std::string> types;
  for (const auto& event : result.events) types.push_back(event.event);
  EXPECT_EQ(types, (std::vector<std::string>{"message_start", "content_block_start",
                                             "content_block_delta", "content_block_delta"}))
      << result.raw();
}

TEST_F(SimMessagesFaults, MalformedJsonBreaksTheFirstDelta) {
  HttpClient admin(port());
  ASSERT_EQ(admin.post("/admin/faults", R"({"malformed":"json"})").status, 200);
  auto stream = StreamingResponse::open(port(), "POST", "/v1/messages", words_request(4));
  const SseResult result = read_sse(*stream);
  ASSERT_EQ(admin.post("/admin/faults", "{}").status, 200);
  EXPECT_EQ(result.end, ReadStatus::End) << to_string(result.end);
  ASSERT_EQ(result.events.size(), 9u) << result.raw();  // start, block start, 4 deltas, stop…
  std::size_t broken = 0, broken_at = 0;
  for (std::size_t i = 0; i < result.events.size(); ++i) {
    boost::system::error_code error;
    json::parse(result.events[i].data, error);
    if (error) {
      ++broken;
      broken_at = i;
    }
  }
  EXPECT_EQ(broken, 1u) << result.raw();
  EXPECT_EQ(broken_at, 2u) << result.raw();
  EXPECT_EQ(result.events[broken_at].event, "content_block_delta");
}

class SimMessagesStatistical : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50", "--tool-call-share", "1"}); }
};

// --tool-call-share 1: a request offering tools gets a tool_use block with schema-valid input.
TEST_F(SimMessagesStatistical, ToolUseWithSchemaValidInput) {
  const json::object body = post_message(port(), claude_request(turn1_messages(), false));
  EXPECT_EQ(body.at("stop_reason"), "tool_use");
  const auto& content = body.at("content").as_array();
  ASSERT_EQ(content.size(), 1u) << json::serialize(body);
  EXPECT_EQ(content[0].at("type"), "tool_use");
  const std::string name = str(content[0].at("name"));
  if (name == "Bash") {
    EXPECT_EQ(content[0].at("input"), json::parse(R"({"command":"value"})"));
  } else {
    EXPECT_EQ(name, "Read");
    EXPECT_EQ(content[0].at("input"), json::object{});
  }
}

}  // namespace
}  // namespace llmux::test
