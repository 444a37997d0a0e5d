// SPDX-License-Identifier: Apache-2.0
#include "sim/script.hpp"

#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/input_items.hpp"

namespace llmux::sim {
namespace json = boost::json;

namespace {

// A YAML node as JSON: quoted scalars are strings, plain ones typed as YAML 1.2's core schema.
json::value to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json::array items;
      for (const auto& item : node) items.push_back(to_json(item));
      return items;
    }
    case YAML::NodeType::Map: {
      json::object mapping;
      for (const auto& entry : node) mapping[entry.first.as<std::string>()] = to_json(entry.second);
      return mapping;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string scalar = node.Scalar();
  if (node.Tag() == "!") return json::string(scalar);  // quoted
  if (scalar == "null" || scalar == "~" || scalar.empty()) return nullptr;
  if (scalar == "true") return true;
  if (scalar == "false") return false;
  std::int64_t integer = 0;
  if (auto [p, ec] = std::from_chars(scalar.data(), scalar.data() + scalar.size(), integer);
      ec == std::errc() && p == scalar.data() + scalar.size())
    return integer;
  double number = 0;
  if (auto [p, ec] = std::from_chars(scalar.data(), scalar.data() + scalar.size(), number);
      ec == std::errc() && p == scalar.data() + scalar.size())
    return number;
  return json::string(scalar);
}

std::string text_field(const json::object& fields, std::string_view key, std::size_t turn) {
  auto it = fields.find(key);
  if (it == fields.end() || it->value().is_null()) return {};
  if (!it->value().is_string())
    throw std::invalid_argument(fmt::format("turn {}: '{}' must be a string", turn + 1, key));
  return std::string(it->value().get_string());
}

ScriptTurn parse_turn(const json::value& entry, std::size_t index) {
  if (!entry.is_object())
    throw std::invalid_argument(fmt::format("turn {}: not a mapping", index + 1));
  const auto& fields = entry.get_object();
  for (const auto& member : fields) {
    const std::string_view key = member.key();
    if (key != "match" && key != "reasoning" && key != "text" && key != "tool_calls")
      throw std::invalid_argument(
          fmt::format("turn {}: unknown field '{}' (expected match, reasoning, text, tool_calls)",
                      index + 1, key));
  }
  ScriptTurn turn;
  if (fields.contains("match")) turn.match = text_field(fields, "match", index);
  turn.reasoning = text_field(fields, "reasoning", index);
  turn.text = text_field(fields, "text", index);
  if (auto it = fields.find("tool_calls"); it != fields.end() && !it->value().is_null()) {
    if (!it->value().is_array())
      throw std::invalid_argument(fmt::format("turn {}: 'tool_calls' must be a list", index + 1));
    std::size_t call_index = 0;
    for (const auto& call : it->value().get_array()) {
      const json::object* call_object = call.is_object() ? &call.get_object() : nullptr;
      auto name = call_object ? call_object->find("name") : nullptr;
      if (!call_object || name == call_object->end() || !name->value().is_string() ||
          name->value().get_string().empty())
        throw std::invalid_argument(
            fmt::format("turn {}: tool_calls[{}] needs a 'name'", index + 1, call_index));
      std::string args = "{}";
      if (auto arguments = call_object->find("arguments");
          arguments != call_object->end() && !arguments->value().is_null()) {
        if (arguments->value().is_string()) {
          args = std::string(arguments->value().get_string());
        } else if (arguments->value().is_object()) {
          args = python_json(arguments->value());
        } else {
          throw std::invalid_argument(
              fmt::format("turn {}: tool_calls[{}].arguments must be a mapping or a string",
                          index + 1, call_index));
        }
      }
      turn.calls.emplace_back(std::string(name->value().get_string()), std::move(args));
      ++call_index;
    }
  }
  if (turn.reasoning.empty() && turn.text.empty() && turn.calls.empty())
    throw std::invalid_argument(
        fmt::format("turn {}: says nothing (give reasoning, text or tool_calls)", index + 1));
  return turn;
}

}  // namespace

Script parse_script(std::string_view text) {
  json::value doc;
  try {
    doc = to_json(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& error) {
    throw std::invalid_argument(fmt::format("not JSON or YAML: {}", error.what()));
  }
  if (doc.is_object() && doc.get_object().contains("turns")) doc = doc.get_object().at("turns");
  if (!doc.is_array())
    throw std::invalid_argument("a script is a list of turns (or a mapping with 'turns')");
  Script script;
  for (std::size_t i = 0; i < doc.get_array().size(); ++i)
    script.turns.push_back(parse_turn(doc.get_array()[i], i));
  if (script.turns.empty()) throw std::invalid_argument("the script has no turns");
  return script;
}

Script load_script(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::invalid_argument(fmt::format("cannot read '{}'", path));
  std::stringstream contents;
  contents << file.rdbuf();
  return parse_script(contents.str());
}

const ScriptTurn* ScriptPlayer::pick(std::string_view last_input) {
  const auto& turns = script_->turns;
  for (const auto& turn : turns) {
    if (turn.match && last_input.find(*turn.match) != std::string_view::npos) return &turn;
  }
  for (std::size_t k = 0; k < turns.size(); ++k) {
    const ScriptTurn& turn = turns[(next_ + k) % turns.size()];
    if (turn.match) continue;
    next_ = (next_ + k + 1) % turns.size();
    return &turn;
  }
  return nullptr;
}

json::value schema_example(const json::value& schema, int depth) {
  if (!schema.is_object() || depth > 16) return nullptr;
  const auto& fields = schema.get_object();
  if (auto it = fields.find("const"); it != fields.end()) return it->value();
  if (auto it = fields.find("enum");
      it != fields.end() && it->value().is_array() && !it->value().get_array().empty())
    return it->value().get_array()[0];
  for (const char* alt : {"anyOf", "oneOf", "allOf"}) {
    if (auto it = fields.find(alt);
        it != fields.end() && it->value().is_array() && !it->value().get_array().empty())
      return schema_example(it->value().get_array()[0], depth + 1);
  }
  std::string type;
  if (auto it = fields.find("type"); it != fields.end()) {
    if (it->value().is_string()) {
      type = it->value().get_string();
    } else if (it->value().is_array()) {
      for (const auto& entry : it->value().get_array())
        if (entry.is_string() && entry.get_string() != "null") {
          type = entry.get_string();
          break;
        }
    }
  }
  if (type.empty()) type = fields.contains("properties") ? "object" : "string";
  auto num = [&](std::string_view key) -> std::optional<double> {
    auto it = fields.find(key);
    if (it == fields.end() || !it->value().is_number()) return std::nullopt;
    return it->value().to_number<double>();
  };
  if (type == "object") {
    json::object out;
    auto props = fields.find("properties");
    auto req = fields.find("required");
    if (req != fields.end() && req->value().is_array()) {
      for (const auto& required : req->value().get_array()) {
        if (!required.is_string()) continue;
        const json::value* property_schema = nullptr;
        if (props != fields.end() && props->value().is_object()) {
          auto property = props->value().get_object().find(required.get_string());
          if (property != props->value().get_object().end()) property_schema = &property->value();
        }
        out[required.get_string()] =
            property_schema ? schema_example(*property_schema, depth + 1) : json::value("value");
      }
    }
    return out;
  }
  if (type == "array") {
    json::array out;
    const auto count = static_cast<std::size_t>(num("minItems").value_or(0));
    auto items = fields.find("items");
    for (std::size_t i = 0; i < count && i < 64; ++i)
      out.push_back(items != fields.end() ? schema_example(items->value(), depth + 1)
                                          : json::value("value"));
    return out;
  }
  if (type == "integer" || type == "number") {
    double value = 1;
    if (auto minimum = num("minimum")) value = *minimum;
    if (auto exclusive_minimum = num("exclusiveMinimum")) value = *exclusive_minimum + 1;
    if (auto maximum = num("maximum"); maximum && value > *maximum) value = *maximum;
    if (type == "integer") return static_cast<std::int64_t>(std::ceil(value));
    return value;
  }
  if (type == "boolean") return true;
  if (type == "null") return nullptr;
  std::string text = "value";
  if (auto min_length = num("minLength"); min_length && text.size() < *min_length)
    text.append(static_cast<std::size_t>(*min_length) - text.size(), 'x');
  if (auto max_length = num("maxLength"); max_length && text.size() > *max_length)
    text.resize(static_cast<std::size_t>(*max_length));
  return json::string(text);
}

std::optional<std::pair<std::string, std::string>> statistical_call(const GenRequest& req,
                                                                    double share, double draw,
                                                                    std::uint64_t pick) {
  if (req.function_tools.empty() || draw >= share) return std::nullopt;
  if (req.tool_choice.is_string() && req.tool_choice.get_string() == "none") return std::nullopt;
  const FunctionTool* tool = &req.function_tools[pick % req.function_tools.size()];
  // A named tool_choice ({"type": "function", "name"/"function": {"name"}}) is honoured.
  if (req.tool_choice.is_object()) {
    const auto& choice = req.tool_choice.get_object();
    std::string_view want;
    if (auto name = choice.find("name"); name != choice.end() && name->value().is_string())
      want = name->value().get_string();
    if (auto function = choice.find("function");
        function != choice.end() && function->value().is_object()) {
      auto name = function->value().get_object().find("name");
      if (name != function->value().get_object().end() && name->value().is_string())
        want = name->value().get_string();
    }
    for (const auto& candidate : req.function_tools)
      if (candidate.name == want) tool = &candidate;
  }
  json::value schema = tool->parameters;
  if (schema.is_object() && !schema.get_object().contains("type"))
    schema.get_object()["type"] = "object";
  json::value args = schema_example(schema);
  if (!args.is_object()) args = json::object{};
  return std::make_pair(tool->name, python_json(args));
}

}  // namespace llmux::sim
