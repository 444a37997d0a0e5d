// SPDX-License-Identifier: Apache-2.0
// Anthropic's Messages API in (issue 39, item 2): a /v1/messages body validated as vLLM's
// pydantic models do and converted to the chat request vLLM builds from it, so its prompt is the
// chat prompt of that request, token for token.
//
// Sources (vllm-project/vllm, main):
// - vllm/entrypoints/anthropic/serving.py at commit 0001948b: _convert_system_message (system
//   string or text blocks joined with "", inline `role: "system"` messages folded in, blocks
//   starting with x-anthropic-billing-header dropped), _convert_messages / _convert_block
//   (thinking → reasoning, tool_use → tool_calls with json.dumps(input), a user's tool_result →
//   a `tool` message before the user's text, a user message left without content dropped),
//   _convert_tool_choice / _convert_tools, _handle_streaming_options, count_tokens.
// - vllm/entrypoints/anthropic/protocol.py at commit 00589e56: AnthropicMessagesRequest (model,
//   messages, max_tokens required; max_tokens > 0; extra fields ignored), AnthropicMessage
//   (role user | assistant | system, "ctx" and "msg" read as user), AnthropicContentBlock (seven
//   block types), AnthropicToolChoice (name required for "tool"), AnthropicOutputConfig.
// - The schema error: FastAPI's RequestValidationError through vLLM's handler (400, OpenAI shape,
//   type "Bad Request", param null, message str(exc)), as vLLM answered Claude Code's inline
//   system message before it accepted it ("1 validation error:\n  {'type': 'literal_error',
//   'loc': ('body', 'messages', 1, 'role'), …", quoted in vllm-project/vllm issue 48874).
// - api_router.py translate_error_response: serving errors as {"type":"error","error":{type,
//   message}} with vLLM's own error type (NotFoundError), not Anthropic's not_found_error.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>

#include "sim/api.hpp"
#include "sim/chat_template.hpp"
#include "sim/messages_request.hpp"
#include "sim/messages_schema.hpp"

namespace llmux::sim {
namespace {

namespace json = boost::json;

ApiContext context() {
  ApiContext result;
  result.served_model_name = "Qwen3.6-35B-A3B";
  result.max_model_len = 262144;
  return result;
}

GenRequest accepted(const std::string& body) {
  auto parsed = parse_messages_request(body, context());
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << body << " -> " << error->status << " " << error->message;
    return {};
  }
  return std::get<GenRequest>(parsed);
}

ApiError refused(const std::string& body) {
  auto parsed = parse_messages_request(body, context());
  if (auto* error = std::get_if<ApiError>(&parsed)) return *error;
  ADD_FAILURE() << body << " was accepted";
  return {};
}

GenRequest chat(const std::string& body) {
  auto parsed = parse_request(Endpoint::Chat, body, context());
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << body << " -> " << error->message;
    return {};
  }
  return std::get<GenRequest>(parsed);
}

// serving.py _convert_system_message: the system field's text blocks and then the inline system
// messages' text, joined with nothing between them, the billing header block left out.
TEST(MessagesRequest, SystemBlocksAndInlineSystemMessagesFoldIntoOneSystemPrompt) {
  const GenRequest request = accepted(R"({
    "model": "Qwen3.6-35B-A3B", "max_tokens": 100,
    "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1; cch=ab12;"},
               {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": "hello there"},
                 {"role": "system", "content": [{"type": "text", "text": " Agents: none."}]}]})");
  EXPECT_TRUE(request.messages_api);
  EXPECT_EQ(request.endpoint, Endpoint::Chat);
  const auto expected = render_chat(
      {Message{"system", "You are Claude Code. Agents: none."}, Message{"user", "hello there"}});
  EXPECT_EQ(request.prompt_ids, expected);
  EXPECT_EQ(request.last_input, "hello there");
  EXPECT_EQ(request.max_tokens, 100);
}

// A string system and a string inline system message: concatenated; no system → no system turn.
TEST(MessagesRequest, SystemStringAndNoSystem) {
  EXPECT_EQ(accepted(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"system":"Be brief.",
                         "messages":[{"role":"user","content":"hi"}]})")
                .prompt_ids,
            render_chat({Message{"system", "Be brief."}, Message{"user", "hi"}}));
  EXPECT_EQ(accepted(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,
                         "messages":[{"role":"user","content":"hi"}]})")
                .prompt_ids,
            render_chat({Message{"user", "hi"}}));
}

// A Claude Code tool turn renders exactly as the chat request vLLM converts it to: tools in the
// system prompt, the assistant's thinking as reasoning and tool_use as a tool call with
// json.dumps arguments, the tool_result as a tool message.
TEST(MessagesRequest, ToolTurnRendersAsTheEquivalentChatRequest) {
  const GenRequest messages = accepted(R"({
    "model": "Qwen3.6-35B-A3B", "max_tokens": 32000, "stream": true, "system": "You are an agent.",
    "tools": [{"name": "Bash", "description": "Runs a command",
               "input_schema": {"properties": {"command": {"type": "string"}}, "required": ["command"]}}],
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "list the files"}]},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I will run ls.", "signature": "abc"},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -la"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "README.md"}, {"type": "text", "text": "src"}]}]}]})");
  const GenRequest equivalent = chat(R"({
    "model": "Qwen3.6-35B-A3B",
    "messages": [
      {"role": "system", "content": "You are an agent."},
      {"role": "user", "content": "list the files"},
      {"role": "assistant", "reasoning": "I will run ls.", "tool_calls": [{"id": "toolu_1", "type": "function",
        "function": {"name": "Bash", "arguments": "{\"command\": \"ls -la\"}"}}]},
      {"role": "tool", "tool_call_id": "toolu_1", "content": "README.md\nsrc"}],
    "tools": [{"type": "function", "function": {"name": "Bash", "description": "Runs a command",
               "parameters": {"properties": {"command": {"type": "string"}}, "required": ["command"], "type": "object"}}}],
    "tool_choice": "auto"})");
  EXPECT_EQ(messages.prompt_ids, equivalent.prompt_ids);
  ASSERT_EQ(messages.function_tools.size(), 1u);
  EXPECT_EQ(messages.function_tools[0].name, "Bash");
  EXPECT_EQ(messages.tool_choice, "auto");  // tools without tool_choice: "auto"
  // What a script's match reads: the tool's output.
  EXPECT_EQ(messages.last_input, "README.md\nsrc");
  // A stream asks for usage on every chunk (_handle_streaming_options).
  EXPECT_TRUE(messages.stream);
  EXPECT_TRUE(messages.include_usage);
  EXPECT_TRUE(messages.continuous_usage);
}

// The tool messages come before the user's own text; both are what `match` reads.
TEST(MessagesRequest, ToolResultWithTextReadsBothForMatch) {
  const GenRequest request = accepted(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"messages":[
    {"role":"user","content":"run it"},
    {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"total 0"},
                              {"type":"text","text":"<system-reminder>be careful</system-reminder>"}]}]})");
  EXPECT_EQ(request.last_input, "total 0\n<system-reminder>be careful</system-reminder>");
  const GenRequest equivalent = chat(R"({"model":"Qwen3.6-35B-A3B","messages":[
    {"role":"user","content":"run it"},
    {"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"Bash","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"t1","content":"total 0"},
    {"role":"user","content":"<system-reminder>be careful</system-reminder>"}]})");
  EXPECT_EQ(request.prompt_ids, equivalent.prompt_ids);
}

// Claude Code's request: the fields vLLM's model does not declare are ignored, "ctx"/"msg"
// roles read as user, output_config.effort accepted, ?beta=true is the server's business.
TEST(MessagesRequest, ClaudeCodeFieldsAreAccepted) {
  const GenRequest request = accepted(R"({
    "model": "Qwen3.6-35B-A3B", "max_tokens": 32000, "stream": true, "temperature": 1,
    "thinking": {"type": "enabled", "budget_tokens": 31999},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "output_config": {"effort": "high"}, "metadata": {"user_id": "user_abc_session_1"},
    "messages": [{"role": "ctx", "content": "ctx text"}, {"role": "msg", "content": "msg text"}]})");
  EXPECT_EQ(request.prompt_ids,
            render_chat({Message{"user", "ctx text"}, Message{"user", "msg text"}}));
  EXPECT_EQ(request.temperature, 1.0);
}

// vLLM's schema errors stay OpenAI-shaped (not Anthropic's), 400 "Bad Request", param null.
TEST(MessagesRequest, MissingMaxTokensIsPydanticsMissingError) {
  const ApiError error =
      refused(R"({"model":"Qwen3.6-35B-A3B","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.type, "Bad Request");
  EXPECT_FALSE(error.anthropic);
  EXPECT_FALSE(error.param.has_value());
  EXPECT_EQ(error.message,
            "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'max_tokens'), 'msg': "
            "'Field required'}");
}

TEST(MessagesRequest, EveryFailingFieldIsReportedInTheModelsOrder) {
  const ApiError error = refused(R"({"max_tokens":0})");
  EXPECT_EQ(error.message,
            "3 validation errors:\n"
            "  {'type': 'missing', 'loc': ('body', 'model'), 'msg': 'Field required'}\n"
            "  {'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}\n"
            "  {'type': 'value_error', 'loc': ('body', 'max_tokens'), 'msg': 'Value error, "
            "max_tokens must be positive', 'input': 0}");
}

// An unknown block type fails both branches of `str | list[AnthropicContentBlock]`.
TEST(MessagesRequest, UnknownBlockTypeIsALiteralError) {
  const ApiError error = refused(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"messages":[
    {"role":"user","content":[{"type":"text","text":"a"},{"type":"document","source":{}}]}]})");
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.message,
            "2 validation errors:\n"
            "  {'type': 'string_type', 'loc': ('body', 'messages', 0, 'content', 'str'), 'msg': "
            "'Input should be a valid string'}\n"
            "  {'type': 'literal_error', 'loc': ('body', 'messages', 0, 'content', "
            "'list[AnthropicContentBlock]', 1, 'type'), 'msg': \"Input should be 'text', 'image', "
            "'tool_use', 'tool_result', 'tool_reference', 'thinking' or 'redacted_thinking'\", "
            "'input': 'document', 'ctx': {'expected': \"'text', 'image', 'tool_use', "
            "'tool_result', 'tool_reference', 'thinking' or 'redacted_thinking'\"}}");
}

TEST(MessagesRequest, OtherSchemaErrors) {
  // A role vLLM does not know.
  EXPECT_NE(
      refused(
          R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"messages":[{"role":"tool","content":"x"}]})")
          .message.find("'loc': ('body', 'messages', 0, 'role'), 'msg': \"Input should be "
                        "'user', 'assistant' or 'system'\", 'input': 'tool'"),
      std::string::npos);
  // Not JSON: FastAPI's json_invalid.
  EXPECT_EQ(refused("{\"model\":").message,
            "1 validation error:\n  {'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON "
            "decode error'}");
  // A named tool_choice needs its name (AnthropicToolChoice's model validator).
  EXPECT_NE(refused(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"tool_choice":{"type":"tool"},
                        "messages":[{"role":"user","content":"x"}]})")
                .message.find("'type': 'value_error', 'loc': ('body', 'tool_choice'), 'msg': "
                              "\"Value error, tool_choice.name is required when type is 'tool'\""),
            std::string::npos);
  // A tool without input_schema; an effort vLLM does not know.
  EXPECT_NE(refused(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"tools":[{"name":"a"}],
                        "messages":[{"role":"user","content":"x"}]})")
                .message.find("('body', 'tools', 0, 'input_schema'), 'msg': 'Field required'"),
            std::string::npos);
  EXPECT_NE(refused(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"output_config":{"effort":"huge"},
                        "messages":[{"role":"user","content":"x"}]})")
                .message.find("('body', 'output_config', 'effort')"),
            std::string::npos);
  // A float max_tokens with a fraction; a string stream.
  EXPECT_NE(
      refused(
          R"({"model":"Qwen3.6-35B-A3B","max_tokens":5.5,"messages":[{"role":"user","content":"x"}]})")
          .message.find("'int_from_float'"),
      std::string::npos);
}

// Serving errors after validation: Anthropic's shape with vLLM's own error types.
TEST(MessagesRequest, UnknownModelIsNotFoundInAnthropicsShape) {
  const ApiError error = refused(
      R"({"model":"claude-sonnet-4","max_tokens":5,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(error.status, 404);
  EXPECT_TRUE(error.anthropic);
  EXPECT_EQ(error.type, "NotFoundError");
  EXPECT_EQ(error.message, "The model `claude-sonnet-4` does not exist.");
}

TEST(MessagesRequest, NoMessageToAnswerIsTheTemplatesError) {
  const ApiError error =
      refused(R"({"model":"Qwen3.6-35B-A3B","max_tokens":5,"system":"s","messages":[]})");
  EXPECT_EQ(error.status, 400);
  EXPECT_TRUE(error.anthropic);
  EXPECT_EQ(error.type, "BadRequestError");
}

// count_tokens renders the same prompt (no max_tokens needed) and answers vLLM's shape.
TEST(MessagesRequest, CountTokensIsThePromptOfTheSameRequest) {
  const std::string body =
      R"({"model":"Qwen3.6-35B-A3B","system":"Be brief.","messages":[{"role":"user","content":"count me"}],
          "tools":[{"name":"Bash","input_schema":{"type":"object"}}]})";
  auto counted = count_message_tokens(body, context());
  ASSERT_TRUE(std::holds_alternative<std::int64_t>(counted));
  std::string with_max = body;
  with_max.insert(1, R"("max_tokens":9,)");
  EXPECT_EQ(std::get<std::int64_t>(counted),
            static_cast<std::int64_t>(accepted(with_max).prompt_ids.size()));
  EXPECT_GT(std::get<std::int64_t>(counted),
            static_cast<std::int64_t>(
                render_chat({Message{"system", "Be brief."}, Message{"user", "count me"}})
                    .size()));  // the tools count too
  EXPECT_EQ(count_tokens_body(42),
            R"({"input_tokens":42,"context_management":{"original_input_tokens":42}})");
  auto wrong_model = count_message_tokens(
      R"({"model":"other","messages":[{"role":"user","content":"x"}]})", context());
  ASSERT_TRUE(std::holds_alternative<ApiError>(wrong_model));
  EXPECT_EQ(std::get<ApiError>(wrong_model).status, 404);
}

TEST(MessagesSchema, PythonReprQuotesAsPythonDoes) {
  EXPECT_EQ(python_repr("plain"), "'plain'");
  EXPECT_EQ(python_repr("it's"), "\"it's\"");
  EXPECT_EQ(python_repr("both ' and \""), "'both \\' and \"'");
  EXPECT_EQ(python_repr("a\nb"), "'a\\nb'");
}

}  // namespace
}  // namespace llmux::sim
