// SPDX-License-Identifier: Apache-2.0
#include "sim/messages_request.hpp"

#include <boost/json.hpp>

#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "sim/chat_template.hpp"
#include "sim/input_items.hpp"
#include "sim/messages_schema.hpp"

namespace llmux::sim {
namespace json = boost::json;

namespace {

// Claude Code's attribution block: a per-request hash vLLM drops from the system prompt.
constexpr std::string_view kBillingHeader = "x-anthropic-billing-header";

std::string_view string_or_empty(const json::object& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || !it->value().is_string()) return {};
  return it->value().get_string();
}

// The role after protocol.py's normalize_role (Claude Code's "ctx" and "msg" are user turns).
std::string_view role_of(const json::object& message) {
  const std::string_view role = string_or_empty(message, "role");
  return role == "ctx" || role == "msg" ? std::string_view("user") : role;
}

/// Text of system blocks: text blocks with text, Claude Code's billing header left out.
void append_system_blocks(const json::array& blocks, std::string& system) {
  for (const auto& block : blocks) {
    const auto& object = block.get_object();
    const std::string_view text = string_or_empty(object, "text");
    if (string_or_empty(object, "type") != "text" || text.empty()) continue;
    if (text.starts_with(kBillingHeader)) continue;
    system += text;
  }
}

/// The text of a tool_result's `content`: a string, or its text items joined by "\n" (images
/// and tool references add no text here).
std::string tool_result_text(const json::object& block) {
  auto it = block.find("content");
  if (it == block.end() || it->value().is_null()) return {};
  if (it->value().is_string()) return std::string(it->value().get_string());
  std::string text;
  bool first = true;
  for (const auto& item : it->value().get_array()) {
    if (!item.is_object() || string_or_empty(item.get_object(), "type") != "text") continue;
    if (!first) text += "\n";
    first = false;
    text += string_or_empty(item.get_object(), "text");
  }
  return text;
}

struct Converted {
  json::array chat_messages;  // vLLM's openai_messages
  json::object tool_fields;   // chat `tools` and `tool_choice`
  std::string last_input;     // what a script turn's `match` reads
};

// One message with content blocks (serving.py _convert_message_content and _convert_block).
void convert_blocks(std::string_view role, const json::array& blocks, Converted& converted) {
  std::string content;
  bool has_content = false;  // a text or image part (vLLM's content_parts)
  std::string reasoning;
  bool has_reasoning = false;
  json::array tool_calls;
  for (const auto& block : blocks) {
    const auto& object = block.get_object();
    const std::string_view type = string_or_empty(object, "type");
    if (type == "text") {
      const std::string_view text = string_or_empty(object, "text");
      if (text.empty()) continue;
      content += text;
      has_content = true;
    } else if (type == "image") {
      auto source = object.find("source");
      if (source != object.end() && source->value().is_object()) has_content = true;
    } else if (type == "thinking") {
      auto thinking = object.find("thinking");
      if (thinking == object.end() || !thinking->value().is_string()) continue;
      reasoning += thinking->value().get_string();
      has_reasoning = true;
    } else if (type == "tool_use") {
      std::string id(string_or_empty(object, "id"));
      if (id.empty()) id = fmt::format("call_{}", std::time(nullptr));
      auto input = object.find("input");
      const bool has_input = input != object.end() && input->value().is_object() &&
                             !input->value().get_object().empty();
      tool_calls.push_back(json::object{
          {"id", id},
          {"type", "function"},
          {"function",
           json::object{{"name", string_or_empty(object, "name")},
                        {"arguments", python_json(has_input ? input->value() : json::object{})}}}});
    } else if (type == "tool_result") {
      if (role == "user") {
        converted.chat_messages.push_back(
            json::object{{"role", "tool"},
                         {"tool_call_id", string_or_empty(object, "tool_use_id")},
                         {"content", tool_result_text(object)}});
      } else {
        content += "Tool result: " + tool_result_text(object);
        has_content = true;
      }
    }  // redacted_thinking and tool_reference add nothing
  }
  json::object message{{"role", role}};
  if (has_reasoning) message["reasoning"] = reasoning;
  if (!tool_calls.empty()) message["tool_calls"] = std::move(tool_calls);
  if (has_content) message["content"] = content;
  // A user message without content (only tool results) is left out.
  if (role == "user" && !has_content) return;
  converted.chat_messages.push_back(std::move(message));
}

/// What a script's `match` reads for a Messages request: the last user message's own text and
/// its tool results' text (tool results first, as vLLM orders them), joined by "\n".
std::string last_user_input(const json::array& messages) {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    const auto& message = it->get_object();
    if (role_of(message) != "user") continue;
    const json::value& content = message.at("content");
    if (content.is_string()) return std::string(content.get_string());
    std::string results, text;
    for (const auto& block : content.get_array()) {
      const auto& object = block.get_object();
      const std::string_view type = string_or_empty(object, "type");
      if (type == "tool_result") {
        results += (results.empty() ? "" : "\n") + tool_result_text(object);
      } else if (type == "text") {
        text += string_or_empty(object, "text");
      }
    }
    if (results.empty() || text.empty()) return results + text;
    return results + "\n" + text;
  }
  return {};
}

Converted convert(const json::object& request) {
  Converted converted;
  const json::array& messages = request.at("messages").get_array();
  // System: the top-level field, then inline system messages (serving.py
  // _convert_system_message: joined with nothing between them).
  std::string system;
  bool has_system = false;
  if (auto it = request.find("system"); it != request.end()) {
    if (it->value().is_string()) {
      system += it->value().get_string();
    } else if (it->value().is_array()) {
      append_system_blocks(it->value().get_array(), system);
    }
  }
  for (const auto& message : messages) {
    const auto& object = message.get_object();
    if (role_of(object) != "system") continue;
    const json::value& content = object.at("content");
    if (content.is_string()) {
      system += content.get_string();
    } else {
      append_system_blocks(content.get_array(), system);
    }
  }
  has_system = !system.empty();
  if (has_system)
    converted.chat_messages.push_back(json::object{{"role", "system"}, {"content", system}});
  for (const auto& message : messages) {
    const auto& object = message.get_object();
    const std::string_view role = role_of(object);
    if (role == "system") continue;
    const json::value& content = object.at("content");
    if (content.is_string()) {
      converted.chat_messages.push_back(
          json::object{{"role", role}, {"content", content.get_string()}});
    } else {
      convert_blocks(role, content.get_array(), converted);
    }
  }
  // Tools (serving.py _convert_tool_choice, _convert_tools).
  json::value tool_choice;
  if (auto it = request.find("tool_choice"); it != request.end() && it->value().is_object()) {
    const auto& choice = it->value().get_object();
    const std::string_view type = string_or_empty(choice, "type");
    if (type == "any") {
      tool_choice = "required";
    } else if (type == "tool") {
      tool_choice =
          json::object{{"type", "function"},
                       {"function", json::object{{"name", string_or_empty(choice, "name")}}}};
    } else {
      tool_choice = json::string(type);  // "auto", "none"
    }
  }
  if (auto it = request.find("tools"); it != request.end() && it->value().is_array()) {
    json::array tools;
    for (const auto& tool : it->value().get_array()) {
      const auto& object = tool.get_object();
      json::object function{{"name", string_or_empty(object, "name")}};
      if (auto description = object.find("description");
          description != object.end() && description->value().is_string())
        function["description"] = description->value();
      json::object parameters = object.at("input_schema").get_object();
      if (!parameters.contains("type")) parameters["type"] = "object";
      function["parameters"] = std::move(parameters);
      tools.push_back(json::object{{"type", "function"}, {"function", std::move(function)}});
    }
    if (tool_choice.is_null()) tool_choice = "auto";
    converted.tool_fields["tools"] = std::move(tools);
  }
  if (!tool_choice.is_null()) converted.tool_fields["tool_choice"] = std::move(tool_choice);
  converted.last_input = last_user_input(messages);
  return converted;
}

ApiError anthropic_error(int status, std::string message, std::string type) {
  ApiError error{status, std::move(message), std::move(type), std::nullopt};
  error.anthropic = true;
  return error;
}

/// Validation, the model check, conversion and rendering shared by both endpoints: fills
/// `request` (prompt, tools, last input) or returns the error vLLM answers.
std::optional<ApiError> render(std::string_view body, MessagesSchema schema,
                               const ApiContext& context, GenRequest& request,
                               json::value& document) {
  if (auto error = validate_messages_body(body, schema, document)) return error;
  const json::object& object = document.get_object();
  // create_chat_completion checks the model before it renders anything.
  const std::string_view model = object.at("model").get_string();
  if (model != context.served_model_name)
    return anthropic_error(404, fmt::format("The model `{}` does not exist.", model),
                           "NotFoundError");
  Converted converted = convert(object);
  std::vector<Message> conversation;
  if (auto error = parse_chat_messages(converted.chat_messages, conversation)) return error;
  std::string tools_text;
  if (auto error = parse_tools(Endpoint::Chat, converted.tool_fields, request, tools_text))
    return error;
  bool answerable = false;
  for (const auto& message : conversation) answerable |= message.role != "system";
  // Qwen's template raises this for a conversation without a user turn; vLLM answers the
  // rendering error as a 400, translated to Anthropic's shape.
  if (!answerable)
    return anthropic_error(400, "No user query found in messages.", "BadRequestError");
  request.last_input = std::move(converted.last_input);
  add_tools_to_prompt(conversation, tools_text);
  request.prompt_ids = render_chat(conversation);
  request.model = context.served_model_name;
  return std::nullopt;
}

}  // namespace

std::variant<GenRequest, ApiError> parse_messages_request(std::string_view body,
                                                          const ApiContext& context) {
  GenRequest request;
  request.endpoint = Endpoint::Chat;
  request.messages_api = true;
  json::value document;
  if (auto error = render(body, MessagesSchema::messages, context, request, document))
    return *error;
  const json::object& object = document.get_object();
  request.max_tokens = object.at("max_tokens").to_number<std::int64_t>();
  if (auto it = object.find("stream"); it != object.end() && it->value().is_bool())
    request.stream = it->value().get_bool();
  // serving.py _handle_streaming_options: a stream always asks for usage, on every chunk.
  request.include_usage = request.continuous_usage = request.stream;
  if (auto it = object.find("temperature"); it != object.end() && it->value().is_number())
    request.temperature = it->value().to_number<double>();
  return request;
}

std::variant<std::int64_t, ApiError> count_message_tokens(std::string_view body,
                                                          const ApiContext& context) {
  GenRequest request;
  request.endpoint = Endpoint::Chat;
  request.messages_api = true;
  json::value document;
  if (auto error = render(body, MessagesSchema::count_tokens, context, request, document))
    return *error;
  return static_cast<std::int64_t>(request.prompt_ids.size());
}

std::string count_tokens_body(std::int64_t input_tokens) {
  return fmt::format(R"({{"input_tokens":{},"context_management":{{"original_input_tokens":{}}}}})",
                     input_tokens, input_tokens);
}

}  // namespace llmux::sim
