// SPDX-License-Identifier: Apache-2.0
#include "sim/input_items.hpp"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace llmux::sim {
namespace json = boost::json;

ApiError bad_request(std::string message, std::optional<std::string> param) {
  return ApiError{400, std::move(message), "Bad Request", std::move(param)};
}

std::string_view json_kind_name(const json::value& value) {
  switch (value.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
      return "an integer";
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "a value";
}

std::string python_json(const json::value& value) {
  if (value.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& member : value.get_object()) {
      if (!first) out += ", ";
      first = false;
      out += json::serialize(json::string_view(member.key()));
      out += ": ";
      out += python_json(member.value());
    }
    return out + "}";
  }
  if (value.is_array()) {
    std::string out = "[";
    bool first = true;
    for (const auto& element : value.get_array()) {
      if (!first) out += ", ";
      first = false;
      out += python_json(element);
    }
    return out + "]";
  }
  return json::serialize(value);
}

std::string render_tool_call(std::string_view name, std::string_view arguments) {
  return fmt::format("<tool_call>\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                     json::serialize(json::string_view(name)), arguments);
}

namespace {

constexpr std::string_view kToolResponseOpen = "<tool_response>\n";
constexpr std::string_view kToolResponseClose = "\n</tool_response>";

const json::value* field(const json::object& object, std::string_view key) {
  auto it = object.find(key);
  if (it == object.end() || it->value().is_null()) return nullptr;
  return &it->value();
}
std::optional<std::string_view> str_field(const json::object& object, std::string_view key) {
  auto* value = field(object, key);
  if (!value || !value->is_string()) return std::nullopt;
  return std::string_view(value->get_string());
}

Message tool_result(std::string_view output) {
  return Message{"user", fmt::format("{}{}{}", kToolResponseOpen, output, kToolResponseClose)};
}

// Text of content parts. Responses parts: input_text, output_text, text, refusal; input_image,
// input_file and input_audio are accepted and add no text. Chat: text parts only (this model
// has no vision).
std::optional<std::string> parts_text(const json::array& parts, bool responses, std::string& why) {
  std::string out;
  for (const auto& part : parts) {
    if (!part.is_object()) {
      why = "content parts must be objects";
      return std::nullopt;
    }
    const auto& part_object = part.get_object();
    auto type = str_field(part_object, "type").value_or("text");
    if (responses && (type == "input_image" || type == "input_file" || type == "input_audio"))
      continue;
    if (responses && type == "refusal") {
      auto refusal = str_field(part_object, "refusal");
      if (!refusal) {
        why = "a refusal content part needs a string 'refusal'";
        return std::nullopt;
      }
      out += *refusal;
      continue;
    }
    if (type != "text" && type != "input_text" && type != "output_text") {
      why = fmt::format("content part type '{}' is not supported by this model", type);
      return std::nullopt;
    }
    auto txt = str_field(part_object, "text");
    if (!txt) {
      why = fmt::format("a {} content part needs a string 'text'", type);
      return std::nullopt;
    }
    out += *txt;
  }
  return out;
}

std::optional<std::string> content_text(const json::value& content, bool responses,
                                        std::string& why) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return std::string(content.get_string());
  if (content.is_array()) return parts_text(content.get_array(), responses, why);
  why = fmt::format("'content' must be a string or an array of parts, got {}",
                    json_kind_name(content));
  return std::nullopt;
}

// Chat assistant `tool_calls`: [{id, type: "function", function: {name, arguments}}].
std::optional<std::string> chat_tool_calls(const json::value& tool_calls, std::string& why) {
  if (!tool_calls.is_array()) {
    why = fmt::format("'tool_calls' must be an array, got {}", json_kind_name(tool_calls));
    return std::nullopt;
  }
  std::string out;
  std::size_t index = 0;
  for (const auto& tool_call : tool_calls.get_array()) {
    const json::object* function_object = nullptr;
    if (tool_call.is_object()) {
      if (auto* function = field(tool_call.get_object(), "function");
          function && function->is_object())
        function_object = &function->get_object();
    }
    auto name = function_object ? str_field(*function_object, "name") : std::nullopt;
    auto args = function_object ? str_field(*function_object, "arguments") : std::nullopt;
    if (!name || !args) {
      why = fmt::format(
          "tool_calls[{}] needs a 'function' object with a string 'name' and string 'arguments'",
          index);
      return std::nullopt;
    }
    if (!out.empty()) out += "\n";
    out += render_tool_call(*name, *args);
    ++index;
  }
  return out;
}

}  // namespace

std::optional<ApiError> parse_chat_messages(const json::value& messages,
                                            std::vector<Message>& out) {
  const std::string field_name = "messages";
  if (!messages.is_array())
    return bad_request(fmt::format("'messages' must be an array, got {}", json_kind_name(messages)),
                       field_name);
  std::size_t index = 0;
  for (const auto& message : messages.get_array()) {
    if (!message.is_object())
      return bad_request(fmt::format("messages[{}] must be an object", index), field_name);
    const auto& message_object = message.get_object();
    auto role = str_field(message_object, "role");
    if (!role)
      return bad_request(fmt::format("messages[{}].role is required and must be a string", index),
                         field_name);
    std::string why;
    auto content = message_object.find("content");
    auto text = content_text(content == message_object.end() ? json::value() : content->value(),
                             false, why);
    if (!text) return bad_request(fmt::format("messages[{}]: {}", index, why), field_name);
    if (*role == "tool") {
      auto id = message_object.find("tool_call_id");
      if (id != message_object.end() && !id->value().is_string())
        return bad_request(fmt::format("messages[{}].tool_call_id must be a string", index),
                           field_name);
      out.push_back(tool_result(*text));
    } else {
      std::string reasoning;
      if (*role == "assistant") {
        if (auto* tool_calls = field(message_object, "tool_calls")) {
          auto calls = chat_tool_calls(*tool_calls, why);
          if (!calls) return bad_request(fmt::format("messages[{}]: {}", index, why), field_name);
          if (!calls->empty()) *text += text->empty() ? *calls : "\n" + *calls;
        }
        // vLLM hands the template either name (chat_utils.py); Qwen3's reads reasoning_content.
        for (std::string_view key : {"reasoning_content", "reasoning"}) {
          if (auto* value = field(message_object, key)) {
            if (!value->is_string())
              return bad_request(fmt::format("messages[{}].{} must be a string", index, key),
                                 field_name);
            reasoning = std::string(value->get_string());
            break;
          }
        }
      }
      out.push_back(Message{std::string(*role), std::move(*text), std::move(reasoning)});
    }
    ++index;
  }
  return std::nullopt;
}

namespace {

// A tool output: a string, or a list of parts (input_text, input_image, input_file).
std::optional<std::string> tool_output(const json::object& item_object, std::string& why) {
  auto it = item_object.find("output");
  if (it == item_object.end() || !(it->value().is_string() || it->value().is_array())) {
    why = "needs an 'output' that is a string or an array of parts";
    return std::nullopt;
  }
  if (it->value().is_string()) return std::string(it->value().get_string());
  return parts_text(it->value().get_array(), true, why);
}

// A reasoning item's text: its `content` (reasoning_text parts), else its `summary`
// (summary_text parts). `encrypted_content` (which this server never issued) is ignored.
std::optional<std::string> reasoning_text(const json::object& item_object, std::string& why) {
  auto parts = [&](std::string_view key, std::string_view part_type) -> std::optional<std::string> {
    auto* value = field(item_object, key);
    if (!value) return std::string();
    if (!value->is_array()) {
      why = fmt::format("'{}' must be an array, got {}", key, json_kind_name(*value));
      return std::nullopt;
    }
    std::string out;
    for (const auto& part : value->get_array()) {
      auto text = part.is_object() ? str_field(part.get_object(), "text") : std::nullopt;
      if (!text) {
        why = fmt::format("every '{}' part needs a string 'text' ({})", key, part_type);
        return std::nullopt;
      }
      out += *text;
    }
    return out;
  };
  auto summary = parts("summary", "summary_text");
  if (!summary) return std::nullopt;
  auto content = parts("content", "reasoning_text");
  if (!content) return std::nullopt;
  if (auto* encrypted = field(item_object, "encrypted_content");
      encrypted && !encrypted->is_string()) {
    why = "'encrypted_content' must be a string";
    return std::nullopt;
  }
  return content->empty() ? *summary : *content;
}

}  // namespace

std::optional<ApiError> parse_response_input(const json::value& input, std::vector<Message>& out) {
  const std::string field_name = "input";
  if (!input.is_array())
    return bad_request(
        fmt::format("'input' must be a string or an array, got {}", json_kind_name(input)),
        field_name);
  std::size_t index = 0;
  for (const auto& item : input.get_array()) {
    if (!item.is_object())
      return bad_request(fmt::format("input[{}] must be an object", index), field_name);
    const auto& item_object = item.get_object();
    auto type_v = field(item_object, "type");
    if (type_v && !type_v->is_string())
      return bad_request(fmt::format("input[{}].type must be a string", index), field_name);
    const std::string_view type = type_v ? std::string_view(type_v->get_string()) : "message";
    auto fail = [&](std::string_view why) {
      return bad_request(fmt::format("input[{}] ({}): {}", index, type, why), field_name);
    };
    std::string why;
    if (type == "message") {
      auto role = str_field(item_object, "role");
      if (!role) return fail("needs a string 'role'");
      auto content = item_object.find("content");
      if (content == item_object.end()) return fail("needs 'content'");
      auto text = content_text(content->value(), true, why);
      if (!text) return fail(why);
      out.push_back(Message{std::string(*role), std::move(*text)});
    } else if (type == "function_call" || type == "custom_tool_call") {
      const std::string_view args_key = type == "function_call" ? "arguments" : "input";
      auto call_id = str_field(item_object, "call_id");
      auto name = str_field(item_object, "name");
      auto args = str_field(item_object, args_key);
      if (!call_id || !name || !args)
        return fail(fmt::format("needs string 'call_id', 'name' and '{}'", args_key));
      out.push_back(Message{
          "assistant", render_tool_call(*name, type == "function_call"
                                                   ? std::string(*args)
                                                   : json::serialize(json::string_view(*args)))});
    } else if (type == "function_call_output" || type == "custom_tool_call_output") {
      if (!str_field(item_object, "call_id")) return fail("needs a string 'call_id'");
      auto text = tool_output(item_object, why);
      if (!text) return fail(why);
      out.push_back(tool_result(*text));
    } else if (type == "reasoning") {
      auto text = reasoning_text(item_object, why);
      if (!text) return fail(why);
      if (!text->empty()) out.push_back(Message{"assistant", "<think>\n" + *text + "\n</think>"});
    } else if (type == "item_reference") {
      if (!str_field(item_object, "id")) return fail("needs a string 'id'");
      // A reference to an item of a stored response: nothing to render here.
    } else {
      return bad_request(fmt::format("input[{}]: item type '{}' is not supported", index, type),
                         field_name);
    }
    ++index;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_tools(Endpoint endpoint, const json::object& object,
                                    GenRequest& request, std::string& rendered) {
  if (auto* ptc = field(object, "parallel_tool_calls")) {
    if (!ptc->is_bool())
      return bad_request(
          fmt::format("'parallel_tool_calls' must be a boolean, got {}", json_kind_name(*ptc)),
          "parallel_tool_calls");
    request.parallel_tool_calls = ptc->get_bool();
  }
  if (auto* tool_choice = field(object, "tool_choice")) {
    if (!tool_choice->is_string() && !tool_choice->is_object())
      return bad_request(fmt::format("'tool_choice' must be a string or an object, got {}",
                                     json_kind_name(*tool_choice)),
                         "tool_choice");
    request.tool_choice = *tool_choice;
  }
  if (endpoint == Endpoint::Responses) {
    if (auto* reasoning = field(object, "reasoning")) {
      if (!reasoning->is_object())
        return bad_request(
            fmt::format("'reasoning' must be an object, got {}", json_kind_name(*reasoning)),
            "reasoning");
      // vLLM echoes the parsed Reasoning model: every field, null when not given.
      json::object echo;
      for (const char* key : {"effort", "generate_summary", "summary"}) {
        auto* value = field(reasoning->get_object(), key);
        echo[key] = value ? *value : json::value();
      }
      request.reasoning = std::move(echo);
    }
  }
  auto* tools = field(object, "tools");
  if (!tools) return std::nullopt;
  if (!tools->is_array())
    return bad_request(fmt::format("'tools' must be an array, got {}", json_kind_name(*tools)),
                       "tools");
  std::size_t index = 0;
  for (const auto& tool : tools->get_array()) {
    auto type = tool.is_object() ? str_field(tool.get_object(), "type") : std::nullopt;
    if (!type)
      return bad_request(fmt::format("tools[{}] must be an object with a string 'type'", index),
                         "tools");
    const auto& tool_object = tool.get_object();
    if (*type == "function") {
      // Chat nests the definition in `function`; the Responses API does not.
      const json::object* def = &tool_object;
      if (endpoint == Endpoint::Chat) {
        auto* function = field(tool_object, "function");
        def = function && function->is_object() ? &function->get_object() : nullptr;
      }
      auto name = def ? str_field(*def, "name") : std::nullopt;
      if (!name)
        return bad_request(fmt::format("tools[{}]: a function tool needs a string 'name'{}", index,
                                       endpoint == Endpoint::Chat ? " in 'function'" : ""),
                           "tools");
      auto* params = field(*def, "parameters");
      request.function_tools.push_back(
          FunctionTool{std::string(*name), params ? *params : json::value(json::object{})});
    }  // other types (namespace, custom, web_search, mcp, …): accepted as they come
    rendered += rendered.empty() ? "# Tools\n\n<tools>\n" : "\n";
    rendered += json::serialize(tool);
    ++index;
  }
  if (!rendered.empty()) rendered += "\n</tools>";
  request.tools = *tools;
  return std::nullopt;
}

void add_tools_to_prompt(std::vector<Message>& msgs, const std::string& rendered) {
  if (rendered.empty()) return;
  if (!msgs.empty() && msgs.front().role == "system") {
    msgs.front().content += "\n\n" + rendered;
  } else {
    msgs.insert(msgs.begin(), Message{"system", rendered});
  }
}

bool is_tool_result(const Message& message) {
  return message.role == "user" && message.content.starts_with(kToolResponseOpen) &&
         message.content.ends_with(kToolResponseClose);
}

std::string last_input_text(const std::vector<Message>& msgs) {
  for (auto it = msgs.rbegin(); it != msgs.rend(); ++it) {
    if (it->role != "user") continue;
    std::string_view content = it->content;
    if (content.starts_with(kToolResponseOpen) && content.ends_with(kToolResponseClose)) {
      content.remove_prefix(kToolResponseOpen.size());
      content.remove_suffix(kToolResponseClose.size());
    }
    return std::string(content);
  }
  return {};
}

}  // namespace llmux::sim
