// SPDX-License-Identifier: Apache-2.0
#include "cli/demo_agent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include <boost/json.hpp>

#include "http/client.hpp"
#include "http/url.hpp"

namespace llmux::cli {

namespace json = boost::json;

namespace {
constexpr const char* kAsk = "What is in the demo's directory? (llmux demo agent turn)";
constexpr const char* kMarker = "llmux-demo-listing:";
constexpr const char* kAnswer =
    "The demo's directory holds the simulators' and the gateway's logs and the benchmarks' "
    "results.";

json::value tool() {
  return json::parse(R"({"type":"function","name":"list_files",
    "description":"Lists the files of a directory.",
    "parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}})");
}

struct Answer {
  json::object body;
  std::string backend;
};

/// The same tool in the Messages API's shape (Claude Code's).
json::value messages_tool() {
  return json::parse(R"({"name":"list_files","description":"Lists the files of a directory.",
    "input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}})");
}

Answer post(int port, const json::object& req, const char* step,
            std::string_view target = "/v1/responses") {
  const std::string body = json::serialize(req);
  http::RequestSpec spec;
  spec.target = target;
  // Claude Code's header; vLLM reads none of it, the gateway passes it on.
  static const http::Header kAnthropicVersion[] = {{"anthropic-version", "2023-06-01"}};
  if (target.starts_with("/v1/messages")) spec.headers = kAnthropicVersion;
  spec.body = body;
  spec.capture_header = "X-Llmux-Backend";
  const auto url = http::Url::parse(fmt::format("http://127.0.0.1:{}", port));
  const http::SimpleResponse response = http::fetch_blocking(*url, spec, std::chrono::seconds(60));
  if (response.result.failure != http::Failure::none || response.result.status != 200)
    throw std::runtime_error(fmt::format("agent turn, {}: {} {} {}", step, response.result.status,
                                         response.result.message, response.body.substr(0, 300)));
  json::value document = json::parse(response.body);
  if (!document.is_object())
    throw std::runtime_error(fmt::format("agent turn, {}: not an object", step));
  return {std::move(document.as_object()), response.result.captured};
}

/// The directory's entries, as the tool's result (read, not executed).
std::pair<std::string, std::size_t> list_directory(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return {fmt::format("{} {}", kMarker, fmt::join(names, ", ")), names.size()};
}
}  // namespace

std::string demo_agent_script() {
  return fmt::format(
      "# llmux demo's agent turn (written by the demo): only its own requests match.\n"
      "- match: \"llmux demo agent turn\"\n"
      "  reasoning: \"The user asks what the directory holds: call list_files.\"\n"
      "  tool_calls:\n"
      "    - name: list_files\n"
      "      arguments: {{path: \".\"}}\n"
      "- match: \"{}\"\n"
      "  text: \"{}\"\n",
      kMarker, kAnswer);
}

std::string demo_agent_turn(int port, const std::filesystem::path& dir) {
  json::array input{json::object{{"role", "user"}, {"content", kAsk}}};
  json::object req{{"model", "Qwen3.6-35B-A3B"},
                   {"store", false},
                   {"tools", json::array{tool()}},
                   {"input", input}};
  const Answer first = post(port, req, "the request with the tool");
  const json::object* call = nullptr;
  std::string reasoning;
  for (const auto& item : first.body.at("output").as_array()) {
    const auto& output_item = item.as_object();
    if (output_item.at("type") == "function_call") call = &output_item;
    if (output_item.at("type") == "reasoning" && output_item.contains("content"))
      for (const auto& part : output_item.at("content").as_array())
        reasoning += json::value_to<std::string>(part.at("text"));
  }
  if (!call) throw std::runtime_error("agent turn: the first answer holds no function_call");
  const std::string name = json::value_to<std::string>(call->at("name"));
  const std::string args = json::value_to<std::string>(call->at("arguments"));
  // The tool, run by the demo.
  const auto [listing, entries] = list_directory(dir);
  // The whole history back, with the call and its output, as Codex sends it (store: false).
  input.push_back(*call);
  input.push_back(json::object{
      {"type", "function_call_output"}, {"call_id", call->at("call_id")}, {"output", listing}});
  req["input"] = input;
  const Answer second = post(port, req, "the request with the tool's output");
  std::string text;
  for (const auto& item : second.body.at("output").as_array())
    if (item.at("type") == "message")
      for (const auto& part : item.at("content").as_array())
        text += json::value_to<std::string>(part.at("text"));
  if (text != kAnswer)
    throw std::runtime_error(fmt::format("agent turn: the final answer is \"{}\"", text));
  return fmt::format(
      "1. → `POST /v1/responses` (tool `list_files`, `store: false`): \"{}\"\n"
      "2. ← {}: reasoning \"{}\", then `function_call` `{}({})`\n"
      "3. the demo runs `{}` on its directory: {} entries\n"
      "4. → `POST /v1/responses` with the history, the `function_call` and its "
      "`function_call_output` (as Codex sends them)\n"
      "5. ← {}: \"{}\"\n",
      kAsk, first.backend, reasoning, name, args, name, entries, second.backend, text);
}

std::string demo_claude_code_turn(int port, const std::filesystem::path& dir) {
  constexpr std::string_view kMessages = "/v1/messages?beta=true";
  json::array messages{json::object{
      {"role", "user"}, {"content", json::array{json::object{{"type", "text"}, {"text", kAsk}}}}}};
  json::object req{{"model", "Qwen3.6-35B-A3B"},
                   {"max_tokens", 1024},
                   {"system", "You are an agent that reads directories."},
                   {"tools", json::array{messages_tool()}},
                   {"messages", messages}};
  const Answer first = post(port, req, "the Messages request with the tool", kMessages);
  const json::object* call = nullptr;
  std::string thinking;
  for (const auto& block : first.body.at("content").as_array()) {
    const auto& content_block = block.as_object();
    if (content_block.at("type") == "tool_use") call = &content_block;
    if (content_block.at("type") == "thinking")
      thinking += json::value_to<std::string>(content_block.at("thinking"));
  }
  if (!call) throw std::runtime_error("Claude Code turn: the first answer holds no tool_use");
  const std::string name = json::value_to<std::string>(call->at("name"));
  const std::string input = json::serialize(call->at("input"));
  const auto [listing, entries] = list_directory(dir);
  // The history back: the assistant's whole answer, then a user turn with the tool_result.
  messages.push_back(json::object{{"role", "assistant"}, {"content", first.body.at("content")}});
  messages.push_back(json::object{
      {"role", "user"},
      {"content",
       json::array{json::object{
           {"type", "tool_result"}, {"tool_use_id", call->at("id")}, {"content", listing}}}}});
  req["messages"] = messages;
  const Answer second = post(port, req, "the Messages request with the tool_result", kMessages);
  std::string text;
  for (const auto& block : second.body.at("content").as_array())
    if (block.at("type") == "text") text += json::value_to<std::string>(block.at("text"));
  if (text != kAnswer)
    throw std::runtime_error(fmt::format("Claude Code turn: the final answer is \"{}\"", text));
  return fmt::format(
      "1. → `POST /v1/messages?beta=true` (tool `list_files`): \"{}\"\n"
      "2. ← {}: `thinking` \"{}\", then `tool_use` `{}({})`, stop_reason `{}`\n"
      "3. the demo runs `{}` on its directory: {} entries\n"
      "4. → `POST /v1/messages?beta=true` with the history, the `tool_use` and its "
      "`tool_result` (as Claude Code sends them)\n"
      "5. ← {}: \"{}\"\n",
      kAsk, first.backend, thinking, name, input,
      json::value_to<std::string>(first.body.at("stop_reason")), name, entries, second.backend,
      text);
}

}  // namespace llmux::cli
