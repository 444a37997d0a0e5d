// SPDX-License-Identifier: Apache-2.0
// Conversation inputs as vLLM takes them (issue 14, part 2): every Responses `input` item type
// and chat's tool messages are accepted and counted in the prompt; a malformed one of each is
// vLLM's schema error (400, type "Bad Request", the field in `param`).
//
// Shapes from vLLM's source: vllm/entrypoints/openai/protocol.py (ResponsesRequest.input:
// ResponseInputOutputItem = the openai SDK's ResponseInputItemParam | ResponseReasoningItem |
// ResponseFunctionToolCall), vllm/entrypoints/openai/responses/utils.py (construct_input_messages:
// function_call → assistant tool_calls, function_call_output → tool message, reasoning →
// assistant reasoning) at vllm-project/vllm main (d0ac5791), and serving_responses.py of the
// 0.11 line (commit 00b6063f: ResponsesResponse.from_request echoes tools, tool_choice,
// reasoning, parallel_tool_calls). Codex's items (function_call / function_call_output without
// `role`, reasoning with `encrypted_content`) are what the real CLI sends after a tool call.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>

#include "core/openai_error.hpp"
#include "core/tokenizer.hpp"
#include "sim/api.hpp"

namespace llmux::sim {
namespace {

namespace json = boost::json;

ApiContext ctx() {
  ApiContext c;
  c.served_model_name = "Qwen3.6-35B-A3B";
  c.max_model_len = 262144;
  return c;
}

GenRequest ok(Endpoint ep, const std::string& body) {
  auto r = parse_request(ep, body, ctx());
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << body << " -> " << e->message;
    return {};
  }
  return std::get<GenRequest>(std::move(r));
}

// A malformed request: vLLM's 400 body, {"error": {message, type "Bad Request", param, code}}.
void expect_400(Endpoint ep, const std::string& body, const std::string& param,
                const std::string& says) {
  auto r = parse_request(ep, body, ctx());
  auto* e = std::get_if<ApiError>(&r);
  ASSERT_NE(e, nullptr) << "accepted: " << body;
  EXPECT_EQ(e->status, 400);
  EXPECT_NE(e->message.find(says), std::string::npos) << e->message;
  std::optional<std::string_view> p;
  if (e->param) p = *e->param;
  const auto doc = json::parse(openai_error_json(e->status, e->message, e->type, p));
  const auto& err = doc.at("error").as_object();
  EXPECT_EQ(err.at("type"), "Bad Request");
  EXPECT_EQ(err.at("param"), json::value(param));
  EXPECT_EQ(err.at("code"), 400);
  EXPECT_EQ(err.at("message"), json::value(e->message));
}

std::string responses(const std::string& input, const std::string& extra = "") {
  return R"({"model":"Qwen3.6-35B-A3B","input":)" + input + extra + "}";
}
std::size_t prompt_len(const std::string& input) {
  return ok(Endpoint::Responses, responses(input)).prompt_ids.size();
}

constexpr const char* kUser = R"({"role":"user","content":"list the files"})";
constexpr const char* kCall =
    R"({"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"command\": [\"ls\"]}"})";
constexpr const char* kOutput =
    R"({"type":"function_call_output","call_id":"call_1","output":"README.md\nsrc"})";

TEST(InputItems, MessageItemsWithStringOrPartsAndNoType) {
  // EasyInputMessage (no type), a typed message, content parts input_text / output_text.
  const auto a = prompt_len(R"([{"role":"user","content":"hello there"}])");
  const auto b = prompt_len(
      R"([{"type":"message","role":"user","content":[{"type":"input_text","text":"hello there"}]}])");
  EXPECT_EQ(a, b);
  const auto c = prompt_len(
      R"([{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello"}]}])");
  EXPECT_GT(c, prompt_len(R"([{"role":"user","content":"hi"}])"));
}

TEST(InputItems, InputImageIsAcceptedAndNotCounted) {
  const auto with_image = prompt_len(
      R"([{"role":"user","content":[{"type":"input_text","text":"what is this"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}])");
  EXPECT_EQ(with_image, prompt_len(R"([{"role":"user","content":"what is this"}])"));
}

TEST(InputItems, FunctionCallAndOutputWithoutRoleAreCountedAndMatched) {
  // Codex's second turn: user, function_call, function_call_output — no `role` on the last two
  // (today's regression: 400 "input[1].role is required").
  const std::string input = std::string("[") + kUser + "," + kCall + "," + kOutput + "]";
  GenRequest r = ok(Endpoint::Responses, responses(input, R"(,"store":false)"));
  const auto only_user = prompt_len(std::string("[") + kUser + "]");
  // The call and its output are in the prompt: at least the tokens of their texts more.
  EXPECT_GE(r.prompt_ids.size(), only_user + Tokenizer::count(R"({"command": ["ls"]})") +
                                     Tokenizer::count("README.md\nsrc"));
  EXPECT_EQ(r.last_input, "README.md\nsrc");  // what a script turn's `match` reads
  EXPECT_FALSE(r.store);
}

TEST(InputItems, FunctionCallOutputAsListOfParts) {
  const std::string list =
      R"({"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"README.md\nsrc"}]})";
  GenRequest r =
      ok(Endpoint::Responses, responses(std::string("[") + kUser + "," + kCall + "," + list + "]"));
  EXPECT_EQ(r.last_input, "README.md\nsrc");
  EXPECT_EQ(r.prompt_ids.size(),
            prompt_len(std::string("[") + kUser + "," + kCall + "," + kOutput + "]"));
}

TEST(InputItems, ReasoningWithForeignEncryptedContentIsAccepted) {
  const auto base = prompt_len(std::string("[") + kUser + "]");
  // encrypted_content this server never issued: accepted and ignored.
  EXPECT_EQ(
      prompt_len(
          std::string("[") + kUser +
          R"(,{"type":"reasoning","summary":[],"encrypted_content":"gAAAAB-not-ours","content":null}])"),
      base);
  // Its reasoning_text content (what vLLM returned) is counted.
  EXPECT_GT(
      prompt_len(
          std::string("[") + kUser +
          R"(,{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"content":[{"type":"reasoning_text","text":"I should run ls first"}]}])"),
      base);
}

TEST(InputItems, CustomToolCallAndOutput) {
  const std::string input =
      std::string("[") + kUser +
      R"(,{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"},{"type":"custom_tool_call_output","call_id":"c2","output":"Done!"}])";
  GenRequest r = ok(Endpoint::Responses, responses(input));
  EXPECT_EQ(r.last_input, "Done!");
  EXPECT_GT(r.prompt_ids.size(), prompt_len(std::string("[") + kUser + "]"));
}

TEST(InputItems, ItemReferenceIsAccepted) {
  EXPECT_EQ(prompt_len(std::string("[") + kUser + R"(,{"type":"item_reference","id":"msg_1"}])"),
            prompt_len(std::string("[") + kUser + "]"));
}

TEST(InputItems, MalformedItemsAre400NamingInput) {
  const auto E = Endpoint::Responses;
  expect_400(E, responses(R"([{"type":"message","content":"no role"}])"), "input",
             "input[0] (message): needs a string 'role'");
  expect_400(E, responses(R"([{"content":"neither type nor role"}])"), "input", "input[0]");
  expect_400(E, responses(R"([{"type":"function_call","name":"shell","arguments":"{}"}])"), "input",
             "input[0] (function_call): needs string 'call_id', 'name' and 'arguments'");
  expect_400(E, responses(R"([{"type":"function_call_output","call_id":"c","output":7}])"), "input",
             "input[0] (function_call_output): needs an 'output'");
  expect_400(E, responses(R"([{"type":"function_call_output","output":"x"}])"), "input",
             "needs a string 'call_id'");
  expect_400(E, responses(R"([{"type":"reasoning","summary":"not a list"}])"), "input",
             "'summary' must be an array");
  expect_400(E, responses(R"([{"type":"reasoning","summary":[],"encrypted_content":5}])"), "input",
             "'encrypted_content' must be a string");
  expect_400(E, responses(R"([{"type":"custom_tool_call","call_id":"c","name":"x"}])"), "input",
             "needs string 'call_id', 'name' and 'input'");
  expect_400(E, responses(R"([{"type":"custom_tool_call_output","call_id":"c"}])"), "input",
             "needs an 'output'");
  expect_400(E, responses(R"([{"type":"item_reference"}])"), "input", "needs a string 'id'");
  expect_400(E, responses(R"([{"role":"user","content":[{"type":"input_video"}]}])"), "input",
             "content part type 'input_video' is not supported");
  expect_400(E, responses(R"([{"type":"teleport"}])"), "input",
             "item type 'teleport' is not supported");
}

TEST(InputItems, CodexRequestFieldsAreAcceptedAndEchoed) {
  // What Codex sends (store false, reasoning, include, prompt_cache_key, parallel_tool_calls,
  // function / namespace / custom / web_search tools).
  const std::string body = responses(
      R"("hi")",
      R"(,"instructions":"be brief","store":false,"stream":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"abc","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"tool_choice":"auto","tools":[{"type":"function","name":"shell","description":"run","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}},{"type":"namespace","name":"mcp__srv","tools":[]},{"type":"custom","name":"apply_patch","format":{"type":"grammar"}},{"type":"web_search"}])");
  GenRequest r = ok(Endpoint::Responses, body);
  ASSERT_EQ(r.function_tools.size(), 1u);
  EXPECT_EQ(r.function_tools[0].name, "shell");
  // The tool definitions are in the prompt (Qwen's template puts them in the system message).
  GenRequest bare = ok(Endpoint::Responses, responses(R"("hi")", R"(,"instructions":"be brief")"));
  EXPECT_GT(r.prompt_ids.size(), bare.prompt_ids.size() + 40);

  ResponseMeta m;
  m.endpoint = Endpoint::Responses;
  m.id = "resp_1";
  m.item_id = "msg_1";
  m.model = r.model;
  const json::object o = response_object(m, r, "completed", "ok", Usage{});
  EXPECT_EQ(o.at("tools"), r.tools);
  EXPECT_EQ(o.at("tools").as_array().size(), 4u);
  EXPECT_EQ(o.at("tool_choice"), "auto");
  EXPECT_EQ(o.at("parallel_tool_calls"), false);
  EXPECT_EQ(o.at("store"), false);
  EXPECT_EQ(o.at("instructions"), "be brief");
  // vLLM echoes the parsed Reasoning model: every field, null when not sent.
  EXPECT_EQ(o.at("reasoning"),
            json::parse(R"({"effort":"medium","generate_summary":null,"summary":"auto"})"));

  // Without them: vLLM's defaults, as before.
  const json::object d = response_object(m, bare, "completed", "ok", Usage{});
  EXPECT_EQ(d.at("tools"), json::array{});
  EXPECT_EQ(d.at("tool_choice"), "auto");
  EXPECT_EQ(d.at("parallel_tool_calls"), true);
  EXPECT_TRUE(d.at("reasoning").is_null());
}

TEST(InputItems, MalformedToolsAre400) {
  const auto E = Endpoint::Responses;
  expect_400(E, responses(R"("hi")", R"(,"tools":{"type":"function"})"), "tools",
             "'tools' must be an array");
  expect_400(E, responses(R"("hi")", R"(,"tools":[{"type":"function"}])"), "tools",
             "a function tool needs a string 'name'");
  expect_400(E, responses(R"("hi")", R"(,"reasoning":"high")"), "reasoning",
             "'reasoning' must be an object");
  expect_400(E, responses(R"("hi")", R"(,"parallel_tool_calls":"yes")"), "parallel_tool_calls",
             "must be a boolean");
  expect_400(
      Endpoint::Chat,
      R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","name":"flat"}]})",
      "tools", "a function tool needs a string 'name' in 'function'");
}

TEST(ChatMessages, AssistantToolCallsAndToolResultsAreCounted) {
  const std::string user = R"({"role":"user","content":"list the files"})";
  const std::string call =
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"command\": [\"ls\"]}"}}]})";
  const std::string result = R"({"role":"tool","tool_call_id":"call_1","content":"README.md"})";
  GenRequest r = ok(Endpoint::Chat, R"({"messages":[)" + user + "," + call + "," + result + "]}");
  GenRequest base = ok(Endpoint::Chat, R"({"messages":[)" + user + "]}");
  EXPECT_GE(r.prompt_ids.size(), base.prompt_ids.size() +
                                     Tokenizer::count(R"({"command": ["ls"]})") +
                                     Tokenizer::count("README.md"));
  EXPECT_EQ(r.last_input, "README.md");
  // An assistant message with vLLM's `reasoning` field is accepted too.
  ok(Endpoint::Chat,
     R"({"messages":[{"role":"assistant","content":"x","reasoning":"hmm"},{"role":"user","content":"y"}]})");
}

TEST(ChatMessages, MalformedToolMessagesAre400) {
  const auto E = Endpoint::Chat;
  expect_400(E, R"({"messages":[{"role":"assistant","tool_calls":{"id":"x"}}]})", "messages",
             "'tool_calls' must be an array");
  expect_400(
      E,
      R"({"messages":[{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"f"}}]}]})",
      "messages", "tool_calls[0] needs a 'function' object");
  expect_400(E, R"({"messages":[{"role":"tool","tool_call_id":5,"content":"x"}]})", "messages",
             "tool_call_id must be a string");
}

}  // namespace
}  // namespace llmux::sim
