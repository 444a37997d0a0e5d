// SPDX-License-Identifier: Apache-2.0
#include "sim/messages_schema.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace llmux::sim {
namespace json = boost::json;

std::string python_repr(std::string_view text) {
  const bool double_quotes =
      text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (const char character : text) {
    switch (character) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (character == quote) out += '\\';
        if (static_cast<unsigned char>(character) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(character));
        } else {
          out += character;
        }
    }
  }
  return out + quote;
}

namespace {

/// A pydantic error location: ('body', 'messages', 0, 'content'), items already repr'd.
using Location = std::vector<std::string>;

Location at(Location location, std::string_view key) {
  location.push_back(python_repr(key));
  return location;
}
Location at(Location location, std::size_t index) {
  location.push_back(std::to_string(index));
  return location;
}

/// repr() of a scalar input; empty for containers (the sim leaves their `input` out).
std::string scalar_repr(const json::value& value) {
  switch (value.kind()) {
    case json::kind::null:
      return "None";
    case json::kind::bool_:
      return value.get_bool() ? "True" : "False";
    case json::kind::int64:
      return std::to_string(value.get_int64());
    case json::kind::uint64:
      return std::to_string(value.get_uint64());
    case json::kind::double_: {
      const double number = value.get_double();
      if (std::floor(number) == number && std::abs(number) < 1e16)
        return fmt::format("{:.1f}", number);
      return fmt::format("{}", number);
    }
    case json::kind::string:
      return python_repr(value.get_string());
    default:
      return {};
  }
}

/// "'a', 'b' or 'c'" as pydantic lists a literal's values.
std::string expected_list(std::initializer_list<std::string_view> values) {
  std::string out;
  std::size_t index = 0;
  for (const auto value : values) {
    if (index > 0) out += index + 1 == values.size() ? " or " : ", ";
    out += python_repr(value);
    ++index;
  }
  return out;
}

class Checker {
 public:
  void error(std::string_view type, const Location& location, std::string_view message,
             const json::value* input = nullptr, std::string_view expected = {}) {
    std::string location_text;
    for (std::size_t i = 0; i < location.size(); ++i)
      location_text += (i > 0 ? ", " : "") + location[i];
    if (location.size() == 1) location_text += ",";
    std::string entry = fmt::format("{{'type': '{}', 'loc': ({}), 'msg': {}", type, location_text,
                                    python_repr(message));
    if (input) {
      const std::string input_text = scalar_repr(*input);
      if (!input_text.empty()) entry += ", 'input': " + input_text;
    }
    if (!expected.empty())
      entry += fmt::format(", 'ctx': {{'expected': {}}}", python_repr(expected));
    entries_.push_back(entry + "}");
  }
  bool failed() const { return !entries_.empty(); }
  ApiError result() const {
    std::string message =
        fmt::format("{} validation error{}:", entries_.size(), entries_.size() == 1 ? "" : "s");
    for (const auto& entry : entries_) message += "\n  " + entry;
    return ApiError{400, std::move(message), "Bad Request", std::nullopt};
  }

  // Each check takes a present value (null included) and reports what pydantic reports.
  void string(const json::value& value, const Location& location) {
    if (!value.is_string())
      error("string_type", location, "Input should be a valid string", &value);
  }
  void optional_string(const json::value* value, const Location& location) {
    if (value && !value->is_null()) string(*value, location);
  }
  void optional_bool(const json::value* value, const Location& location) {
    if (value && !value->is_null() && !value->is_bool())
      error("bool_type", location, "Input should be a valid boolean", value);
  }
  void optional_number(const json::value* value, const Location& location) {
    if (value && !value->is_null() && !value->is_number())
      error("float_type", location, "Input should be a valid number", value);
  }
  /// An integer (an integral float passes, as in pydantic's lax mode); whether it passed.
  bool integer(const json::value& value, const Location& location) {
    if (value.is_int64() || value.is_uint64()) return true;
    if (value.is_double() && std::floor(value.get_double()) == value.get_double()) return true;
    if (value.is_double()) {
      error("int_from_float", location,
            "Input should be a valid integer, got a number with a fractional part", &value);
    } else {
      error("int_type", location, "Input should be a valid integer", &value);
    }
    return false;
  }
  void optional_integer(const json::value* value, const Location& location) {
    if (value && !value->is_null()) integer(*value, location);
  }
  void optional_dict(const json::value* value, const Location& location) {
    if (value && !value->is_null() && !value->is_object())
      error("dict_type", location, "Input should be a valid dictionary", value);
  }
  /// A nested model: false (and an error) when the value is not an object.
  bool model(const json::value& value, const Location& location, std::string_view name) {
    if (value.is_object()) return true;
    error("model_type", location,
          fmt::format("Input should be a valid dictionary or instance of {}", name), &value);
    return false;
  }
  void literal(const json::value& value, const Location& location,
               std::initializer_list<std::string_view> values) {
    if (value.is_string())
      for (const auto candidate : values)
        if (value.get_string() == candidate) return;
    const std::string expected = expected_list(values);
    error("literal_error", location, "Input should be " + expected, &value, expected);
  }
  void missing(const Location& location) { error("missing", location, "Field required"); }

  void content_block(const json::value& value, const Location& location);
  void content(const json::value& value, const Location& location);
  void message(const json::value& value, const Location& location);
  void tool(const json::value& value, const Location& location);
  void tool_choice(const json::value& value, const Location& location);
  void output_config(const json::value& value, const Location& location);

 private:
  std::vector<std::string> entries_;
};

const json::value* member_of(const json::object& object, std::string_view key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->value();
}

constexpr std::string_view kBlocksBranch = "list[AnthropicContentBlock]";

// AnthropicContentBlock: `type` one of seven literals, the rest optional.
void Checker::content_block(const json::value& value, const Location& location) {
  if (!model(value, location, "AnthropicContentBlock")) return;
  const auto& object = value.get_object();
  if (auto* type = member_of(object, "type")) {
    literal(*type, at(location, "type"),
            {"text", "image", "tool_use", "tool_result", "tool_reference", "thinking",
             "redacted_thinking"});
  } else {
    missing(at(location, "type"));
  }
  optional_string(member_of(object, "text"), at(location, "text"));
  optional_dict(member_of(object, "source"), at(location, "source"));
  optional_string(member_of(object, "id"), at(location, "id"));
  optional_string(member_of(object, "tool_use_id"), at(location, "tool_use_id"));
  optional_string(member_of(object, "name"), at(location, "name"));
  optional_dict(member_of(object, "input"), at(location, "input"));
  if (auto* content = member_of(object, "content"); content && !content->is_null()) {
    // str | list[dict[str, Any]] | None
    if (content->is_array()) {
      std::size_t index = 0;
      for (const auto& item : content->get_array()) {
        optional_dict(&item, at(at(at(location, "content"), "list[dict[str,any]]"), index));
        ++index;
      }
    } else if (!content->is_string()) {
      error("string_type", at(at(location, "content"), "str"), "Input should be a valid string",
            content);
      error("list_type", at(at(location, "content"), "list[dict[str,any]]"),
            "Input should be a valid list", content);
    }
  }
  optional_bool(member_of(object, "is_error"), at(location, "is_error"));
  optional_string(member_of(object, "tool_name"), at(location, "tool_name"));
  optional_string(member_of(object, "thinking"), at(location, "thinking"));
  optional_string(member_of(object, "signature"), at(location, "signature"));
  optional_string(member_of(object, "data"), at(location, "data"));
}

// str | list[AnthropicContentBlock]: pydantic reports both branches when neither fits.
void Checker::content(const json::value& value, const Location& location) {
  if (value.is_string()) return;
  if (value.is_array()) {
    Checker blocks;
    std::size_t index = 0;
    for (const auto& block : value.get_array()) {
      blocks.content_block(block, at(at(location, kBlocksBranch), index));
      ++index;
    }
    if (!blocks.failed()) return;
    error("string_type", at(location, "str"), "Input should be a valid string", &value);
    for (auto& entry : blocks.entries_) entries_.push_back(std::move(entry));
    return;
  }
  error("string_type", at(location, "str"), "Input should be a valid string", &value);
  error("list_type", at(location, kBlocksBranch), "Input should be a valid list", &value);
}

// AnthropicMessage: `role` (Claude Code's "ctx" and "msg" read as "user") and `content`.
void Checker::message(const json::value& value, const Location& location) {
  if (!model(value, location, "AnthropicMessage")) return;
  const auto& object = value.get_object();
  if (auto* role = member_of(object, "role")) {
    const bool mapped =
        role->is_string() && (role->get_string() == "ctx" || role->get_string() == "msg");
    if (!mapped) literal(*role, at(location, "role"), {"user", "assistant", "system"});
  } else {
    missing(at(location, "role"));
  }
  if (auto* content_value = member_of(object, "content")) {
    content(*content_value, at(location, "content"));
  } else {
    missing(at(location, "content"));
  }
}

// AnthropicTool: `name`, `input_schema` (a dict) required.
void Checker::tool(const json::value& value, const Location& location) {
  if (!model(value, location, "AnthropicTool")) return;
  const auto& object = value.get_object();
  if (auto* name = member_of(object, "name")) {
    string(*name, at(location, "name"));
  } else {
    missing(at(location, "name"));
  }
  optional_string(member_of(object, "description"), at(location, "description"));
  if (auto* schema = member_of(object, "input_schema")) {
    if (!schema->is_object())
      error("dict_type", at(location, "input_schema"), "Input should be a valid dictionary",
            schema);
  } else {
    missing(at(location, "input_schema"));
  }
  optional_bool(member_of(object, "strict"), at(location, "strict"));
  optional_bool(member_of(object, "defer_loading"), at(location, "defer_loading"));
}

// AnthropicToolChoice: `type` literal; its model validator wants `name` for "tool".
void Checker::tool_choice(const json::value& value, const Location& location) {
  if (!model(value, location, "AnthropicToolChoice")) return;
  const auto& object = value.get_object();
  const std::size_t errors_before = entries_.size();
  const json::value* type = member_of(object, "type");
  if (type) {
    literal(*type, at(location, "type"), {"auto", "any", "tool", "none"});
  } else {
    missing(at(location, "type"));
  }
  const json::value* name = member_of(object, "name");
  optional_string(name, at(location, "name"));
  if (entries_.size() != errors_before) return;  // the model validator runs on valid fields
  const bool named = name && name->is_string() && !name->get_string().empty();
  if (type->get_string() == "tool" && !named)
    error("value_error", location, "Value error, tool_choice.name is required when type is 'tool'");
}

// AnthropicOutputConfig: `effort` and `format` ({schema, type: "json_schema"}).
void Checker::output_config(const json::value& value, const Location& location) {
  if (!model(value, location, "AnthropicOutputConfig")) return;
  const auto& object = value.get_object();
  if (auto* effort = member_of(object, "effort"); effort && !effort->is_null())
    literal(*effort, at(location, "effort"), {"low", "medium", "high", "xhigh", "max"});
  if (auto* format = member_of(object, "format"); format && !format->is_null()) {
    const Location format_location = at(location, "format");
    if (model(*format, format_location, "AnthropicJsonOutputFormat")) {
      optional_dict(member_of(format->get_object(), "schema"), at(format_location, "schema"));
      if (auto* type = member_of(format->get_object(), "type"))
        literal(*type, at(format_location, "type"), {"json_schema"});
    }
  }
}

}  // namespace

std::optional<ApiError> validate_messages_body(std::string_view body, MessagesSchema schema,
                                               json::value& document) {
  Checker checker;
  const Location root{python_repr("body")};
  boost::system::error_code parse_error;
  document = json::parse(body, parse_error);
  if (parse_error) {
    // FastAPI's own error for a body that is not JSON (the sim cannot give Python's position).
    checker.error("json_invalid", at(root, std::size_t{0}), "JSON decode error");
    return checker.result();
  }
  if (!document.is_object()) {
    checker.error("model_attributes_type", root,
                  "Input should be a valid dictionary or object to extract fields from", &document);
    return checker.result();
  }
  const auto& object = document.get_object();
  // Fields in the models' declaration order, which is the order pydantic reports them in.
  if (auto* model = member_of(object, "model")) {
    checker.string(*model, at(root, "model"));
    if (model->is_string() && model->get_string().empty())
      checker.error("value_error", at(root, "model"), "Value error, Model is required", model);
  } else {
    checker.missing(at(root, "model"));
  }
  if (auto* messages = member_of(object, "messages")) {
    if (messages->is_array()) {
      std::size_t index = 0;
      for (const auto& message : messages->get_array())
        checker.message(message, at(at(root, "messages"), index++));
    } else {
      checker.error("list_type", at(root, "messages"), "Input should be a valid list", messages);
    }
  } else {
    checker.missing(at(root, "messages"));
  }
  const bool full = schema == MessagesSchema::messages;
  if (full) {
    if (auto* max_tokens = member_of(object, "max_tokens")) {
      if (checker.integer(*max_tokens, at(root, "max_tokens")) &&
          max_tokens->to_number<double>() <= 0)
        checker.error("value_error", at(root, "max_tokens"),
                      "Value error, max_tokens must be positive", max_tokens);
    } else {
      checker.missing(at(root, "max_tokens"));
    }
    checker.optional_dict(member_of(object, "metadata"), at(root, "metadata"));
    if (auto* config = member_of(object, "output_config"); config && !config->is_null())
      checker.output_config(*config, at(root, "output_config"));
    if (auto* stops = member_of(object, "stop_sequences"); stops && !stops->is_null()) {
      if (stops->is_array()) {
        std::size_t index = 0;
        for (const auto& stop : stops->get_array())
          checker.string(stop, at(at(root, "stop_sequences"), index++));
      } else {
        checker.error("list_type", at(root, "stop_sequences"), "Input should be a valid list",
                      stops);
      }
    }
    checker.optional_bool(member_of(object, "stream"), at(root, "stream"));
  }
  if (auto* system = member_of(object, "system"); system && !system->is_null())
    checker.content(*system, at(root, "system"));
  if (full) checker.optional_number(member_of(object, "temperature"), at(root, "temperature"));
  if (auto* choice = member_of(object, "tool_choice"); choice && !choice->is_null())
    checker.tool_choice(*choice, at(root, "tool_choice"));
  if (auto* tools = member_of(object, "tools"); tools && !tools->is_null()) {
    if (tools->is_array()) {
      std::size_t index = 0;
      for (const auto& tool : tools->get_array())
        checker.tool(tool, at(at(root, "tools"), index++));
    } else {
      checker.error("list_type", at(root, "tools"), "Input should be a valid list", tools);
    }
  }
  if (full) {
    checker.optional_integer(member_of(object, "top_k"), at(root, "top_k"));
    checker.optional_number(member_of(object, "top_p"), at(root, "top_p"));
    checker.optional_dict(member_of(object, "kv_transfer_params"), at(root, "kv_transfer_params"));
  }
  checker.optional_dict(member_of(object, "chat_template_kwargs"),
                        at(root, "chat_template_kwargs"));
  if (checker.failed()) return checker.result();
  return std::nullopt;
}

}  // namespace llmux::sim
