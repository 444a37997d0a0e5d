// SPDX-License-Identifier: Apache-2.0
// A scripted tool turn over real HTTP (issue 14): turn 1 offers tools and gets a function call,
// turn 2 sends the call and its output back the way the Codex CLI does (input items without
// `role`, `store: false`, no `previous_response_id`, a reasoning item with encrypted_content the
// server never issued) and gets the scripted answer — Responses and chat, streaming and not.
// Shapes follow vLLM (vllm/entrypoints/openai/responses/simple_streaming_events.py and
// tool_parsers/qwen3coder_tool_parser.py; field by field in tests/unit/sim/turn_events_test.cpp).
// Also the statistical mode (--tool-call-share) and a bad --script.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <string>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/sim_suite.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;

constexpr const char* kScript = R"(# a scripted agent turn
- match: "list the files"
  reasoning: "The user wants the files; I will run ls."
  tool_calls:
    - name: shell
      arguments: {command: ["ls", "-la"]}
- match: "README.md"
  text: "There are two entries: README.md and src."
)";
constexpr const char* kReasoning = "The user wants the files; I will run ls.";
constexpr const char* kArgs = R"({"command": ["ls", "-la"]})";
constexpr const char* kAnswer = "There are two entries: README.md and src.";

constexpr const char* kResponsesTools =
    R"([{"type":"function","name":"shell","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}},{"type":"web_search"}])";
constexpr const char* kChatTools =
    R"([{"type":"function","function":{"name":"shell","description":"Runs a command","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}}}])";

std::string responses_turn1(bool stream) {
  return std::string(
             R"({"model":"Qwen3.6-35B-A3B","instructions":"You are a coding agent.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"please list the files"}]}],"tools":)") +
         kResponsesTools +
         R"(,"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"k1","stream":)" +
         (stream ? "true" : "false") + "}";
}

// Turn 2 as Codex sends it: the whole history again, the call and its output as items.
std::string responses_turn2(const std::string& call_id, bool stream) {
  return std::string(
             R"({"model":"Qwen3.6-35B-A3B","instructions":"You are a coding agent.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"please list the files"}]},{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"The user wants the files; I will run ls."}],"encrypted_content":"gAAAAA-issued-by-someone-else"},{"type":"function_call","name":"shell","arguments":"{\"command\": [\"ls\", \"-la\"]}","call_id":")") +
         call_id + R"("},{"type":"function_call_output","call_id":")" + call_id +
         R"(","output":"README.md\nsrc\n"}],"tools":)" + kResponsesTools +
         R"(,"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"k1","stream":)" +
         (stream ? "true" : "false") + "}";
}

std::string chat_turn1(bool stream) {
  return std::string(
             R"({"model":"Qwen3.6-35B-A3B","messages":[{"role":"user","content":"please list the files"}],"tools":)") +
         kChatTools + R"(,"stream":)" + (stream ? "true" : "false") + "}";
}
std::string chat_turn2(const std::string& call_id, bool stream) {
  return std::string(
             R"({"model":"Qwen3.6-35B-A3B","messages":[{"role":"user","content":"please list the files"},{"role":"assistant","content":null,"tool_calls":[{"id":")") +
         call_id +
         R"(","type":"function","function":{"name":"shell","arguments":"{\"command\": [\"ls\", \"-la\"]}"}}]},{"role":"tool","tool_call_id":")" +
         call_id + R"(","content":"README.md\nsrc\n"}],"tools":)" + kChatTools + R"(,"stream":)" +
         (stream ? "true" : "false") + "}";
}

json::object post_json(int port, const std::string& target, const std::string& body) {
  HttpClient c(port);
  Response r = c.post(target, body);
  EXPECT_EQ(r.status, 200) << body << " -> " << r.body;
  auto v = parse_json(r.body);
  return v.is_object() ? v.get_object() : json::object{};
}

std::vector<SseEvent> stream_events(int port, const std::string& target, const std::string& body) {
  auto s = StreamingResponse::open(port, "POST", target, body);
  EXPECT_EQ(s->status(), 200);
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::End) << to_string(r.end);
  return r.events;
}

class SimScripted : public SimSuite {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    start({"--time-scale", "50", "--script", dir_->write("agent.yaml", kScript)});
  }
  static inline std::unique_ptr<TempDir> dir_;
};

TEST_F(SimScripted, ResponsesToolTurnThenAnswer) {
  const json::object r1 = post_json(port(), "/v1/responses", responses_turn1(false));
  const auto& out = r1.at("output").as_array();
  ASSERT_EQ(out.size(), 2u) << json::serialize(r1);
  EXPECT_EQ(out[0].at("type"), "reasoning");
  EXPECT_EQ(out[0].at("content").at(0).at("text"), kReasoning);
  const auto& fc = out[1].as_object();
  EXPECT_EQ(fc.at("type"), "function_call");
  EXPECT_EQ(fc.at("name"), "shell");
  EXPECT_EQ(fc.at("arguments"), kArgs);
  EXPECT_EQ(fc.at("status"), "completed");
  EXPECT_TRUE(str(fc.at("call_id")).starts_with("call_"));
  EXPECT_TRUE(str(fc.at("id")).starts_with("fc_"));
  // Usage counts reasoning and arguments as generated tokens; the request's fields are echoed.
  const auto& u = r1.at("usage").as_object();
  EXPECT_EQ(i64(u.at("output_tokens")),
            static_cast<std::int64_t>(count_tokens(kReasoning) + 1 + count_tokens(kArgs)));
  EXPECT_EQ(i64(u.at("output_tokens_details").at("reasoning_tokens")),
            static_cast<std::int64_t>(count_tokens(kReasoning)));
  EXPECT_EQ(r1.at("tools").as_array().size(), 2u);
  EXPECT_EQ(r1.at("parallel_tool_calls"), false);
  EXPECT_EQ(r1.at("store"), false);
  EXPECT_EQ(r1.at("reasoning").at("effort"), "medium");
  EXPECT_EQ(r1.at("instructions"), "You are a coding agent.");

  const json::object r2 =
      post_json(port(), "/v1/responses", responses_turn2(str(fc.at("call_id")), false));
  const auto& out2 = r2.at("output").as_array();
  ASSERT_EQ(out2.size(), 1u) << json::serialize(r2);
  EXPECT_EQ(out2[0].at("type"), "message");
  EXPECT_EQ(out2[0].at("content").at(0).at("text"), kAnswer);
  EXPECT_EQ(r2.at("status"), "completed");
  EXPECT_GT(i64(r2.at("usage").at("input_tokens")), i64(u.at("input_tokens")));
  EXPECT_EQ(i64(r2.at("usage").at("output_tokens")),
            static_cast<std::int64_t>(count_tokens(kAnswer)));
}

TEST_F(SimScripted, ResponsesToolTurnThenAnswerStreaming) {
  auto ev = stream_events(port(), "/v1/responses", responses_turn1(true));
  ASSERT_GE(ev.size(), 4u);
  std::string args, reasoning, call_id;
  bool added = false, args_done = false;
  for (const auto& e : ev) {
    const auto d = parse_json(e.data).as_object();
    EXPECT_EQ(d.at("type"), json::value(e.event));
    if (e.event == "response.reasoning_text.delta") reasoning += str(d.at("delta"));
    if (e.event == "response.function_call_arguments.delta") args += str(d.at("delta"));
    if (e.event == "response.output_item.added" && d.at("item").at("type") == "function_call") {
      added = true;
      call_id = str(d.at("item").at("call_id"));
      EXPECT_EQ(d.at("item").at("name"), "shell");
    }
    if (e.event == "response.function_call_arguments.done") {
      args_done = true;
      EXPECT_EQ(d.at("arguments"), kArgs);
    }
  }
  EXPECT_TRUE(added);
  EXPECT_TRUE(args_done);
  EXPECT_EQ(reasoning, kReasoning);
  EXPECT_EQ(args, kArgs);
  EXPECT_EQ(ev.back().event, "response.completed");
  const auto done = parse_json(ev.back().data);
  EXPECT_EQ(done.at("response").at("output").at(1).at("call_id"), json::value(call_id));

  auto ev2 = stream_events(port(), "/v1/responses", responses_turn2(call_id, true));
  std::string text;
  for (const auto& e : ev2) {
    EXPECT_NE(e.event, "response.function_call_arguments.delta");
    if (e.event == "response.output_text.delta") text += str(parse_json(e.data).at("delta"));
  }
  EXPECT_EQ(text, kAnswer);
  ASSERT_FALSE(ev2.empty());
  EXPECT_EQ(
      parse_json(ev2.back().data).at("response").at("output").at(0).at("content").at(0).at("text"),
      kAnswer);
}

TEST_F(SimScripted, ChatToolTurnThenAnswer) {
  const json::object r1 = post_json(port(), "/v1/chat/completions", chat_turn1(false));
  const auto& choice = r1.at("choices").at(0).as_object();
  EXPECT_EQ(choice.at("finish_reason"), "tool_calls");
  const auto& msg = choice.at("message").as_object();
  EXPECT_EQ(msg.at("reasoning"), kReasoning);
  EXPECT_TRUE(msg.at("content").is_null());
  const auto& tc = msg.at("tool_calls").at(0).as_object();
  EXPECT_EQ(tc.at("type"), "function");
  EXPECT_TRUE(str(tc.at("id")).starts_with("chatcmpl-tool-"));  // vLLM's ToolCall default id
  EXPECT_EQ(tc.at("function").at("name"), "shell");
  EXPECT_EQ(tc.at("function").at("arguments"), kArgs);
  EXPECT_EQ(i64(r1.at("usage").at("completion_tokens")),
            static_cast<std::int64_t>(count_tokens(kReasoning) + 1 + count_tokens(kArgs)));

  const json::object r2 =
      post_json(port(), "/v1/chat/completions", chat_turn2(str(tc.at("id")), false));
  const auto& c2 = r2.at("choices").at(0).as_object();
  EXPECT_EQ(c2.at("finish_reason"), "stop");
  EXPECT_EQ(c2.at("message").at("content"), kAnswer);
  EXPECT_EQ(c2.at("message").at("tool_calls"), json::array{});
  EXPECT_GT(i64(r2.at("usage").at("prompt_tokens")), i64(r1.at("usage").at("prompt_tokens")));
}

TEST_F(SimScripted, ChatToolTurnThenAnswerStreaming) {
  auto ev = stream_events(port(), "/v1/chat/completions", chat_turn1(true));
  std::string reasoning, args, id, finish;
  for (const auto& e : ev) {
    if (e.data == "[DONE]") continue;
    const auto c = parse_json(e.data).at("choices").at(0).as_object();
    const auto& d = c.at("delta").as_object();
    if (d.contains("reasoning")) reasoning += str(d.at("reasoning"));
    if (d.contains("tool_calls")) {
      const auto& tc = d.at("tool_calls").at(0).as_object();
      if (tc.contains("id")) {
        id = str(tc.at("id"));
        EXPECT_EQ(tc.at("function").at("name"), "shell");
      } else {
        args += str(tc.at("function").at("arguments"));
      }
    }
    if (!c.at("finish_reason").is_null()) finish = str(c.at("finish_reason"));
  }
  EXPECT_EQ(reasoning, kReasoning);
  EXPECT_EQ(args, kArgs);
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_TRUE(id.starts_with("call_"));
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().data, "[DONE]");

  auto ev2 = stream_events(port(), "/v1/chat/completions", chat_turn2(id, true));
  std::string text;
  for (const auto& e : ev2) {
    if (e.data == "[DONE]") continue;
    const auto c = parse_json(e.data).at("choices").at(0).as_object();
    EXPECT_FALSE(c.at("delta").as_object().contains("tool_calls"));
    if (c.at("delta").as_object().contains("content")) text += str(c.at("delta").at("content"));
    if (!c.at("finish_reason").is_null()) finish = str(c.at("finish_reason"));
  }
  EXPECT_EQ(text, kAnswer);
  EXPECT_EQ(finish, "stop");
}

TEST_F(SimScripted, CompletionsKeepGeneratedWords) {
  // The script speaks to chat and Responses only; /v1/completions stays as before.
  const json::object r =
      post_json(port(), "/v1/completions",
                R"({"model":"Qwen3.6-35B-A3B","prompt":"please list the files","max_tokens":5})");
  EXPECT_EQ(i64(r.at("usage").at("completion_tokens")), 5);
}

class SimToolShare : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50", "--tool-call-share", "1"}); }
};

TEST_F(SimToolShare, RequestsWithToolsGetSchemaValidCalls) {
  const json::object r = post_json(port(), "/v1/chat/completions", chat_turn1(false));
  const auto& choice = r.at("choices").at(0).as_object();
  EXPECT_EQ(choice.at("finish_reason"), "tool_calls");
  const auto& tc = choice.at("message").at("tool_calls").at(0);
  EXPECT_EQ(tc.at("function").at("name"), "shell");
  // Valid for the schema: an object whose required `command` is an array of strings.
  const auto args = parse_json(str(tc.at("function").at("arguments")));
  ASSERT_TRUE(args.is_object());
  ASSERT_TRUE(args.at("command").is_array());

  const json::object resp = post_json(port(), "/v1/responses", responses_turn1(false));
  const auto& out = resp.at("output").as_array();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].at("type"), "function_call");

  // Without tools: generated words, as before.
  const json::object plain = post_json(
      port(), "/v1/chat/completions",
      R"({"model":"Qwen3.6-35B-A3B","messages":[{"role":"user","content":"hi"}],"max_tokens":4})");
  EXPECT_EQ(plain.at("choices").at(0).at("finish_reason"), "length");
  EXPECT_EQ(plain.at("choices").at(0).at("message").at("tool_calls"), json::array{});
}

TEST(SimScriptFile, ABadScriptStopsTheSimulatorWithItsReason) {
  TempDir dir;
  const std::string path = dir.write("bad.yaml", "- {text: hi, colour: red}\n");
  EXPECT_THROW(SimServer({"--script", path}), std::exception);
}

}  // namespace
}  // namespace llmux::test
