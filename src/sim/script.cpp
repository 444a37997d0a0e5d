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
json::value to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json::array a;
      for (const auto& x : n) a.push_back(to_json(x));
      return a;
    }
    case YAML::NodeType::Map: {
      json::object o;
      for (const auto& kv : n) o[kv.first.as<std::string>()] = to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return json::string(s);  // quoted
  if (s == "null" || s == "~" || s.empty()) return nullptr;
  if (s == "true") return true;
  if (s == "false") return false;
  std::int64_t i = 0;
  if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      ec == std::errc() && p == s.data() + s.size())
    return i;
  double d = 0;
  if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      ec == std::errc() && p == s.data() + s.size())
    return d;
  return json::string(s);
}

std::string text_field(const json::object& o, std::string_view key, std::size_t turn) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) return {};
  if (!it->value().is_string())
    throw std::invalid_argument(fmt::format("turn {}: '{}' must be a string", turn + 1, key));
  return std::string(it->value().get_string());
}

ScriptTurn parse_turn(const json::value& v, std::size_t i) {
  if (!v.is_object()) throw std::invalid_argument(fmt::format("turn {}: not a mapping", i + 1));
  const auto& o = v.get_object();
  for (const auto& kv : o) {
    const std::string_view k = kv.key();
    if (k != "match" && k != "reasoning" && k != "text" && k != "tool_calls")
      throw std::invalid_argument(fmt::format(
          "turn {}: unknown field '{}' (expected match, reasoning, text, tool_calls)", i + 1, k));
  }
  ScriptTurn t;
  if (o.contains("match")) t.match = text_field(o, "match", i);
  t.reasoning = text_field(o, "reasoning", i);
  t.text = text_field(o, "text", i);
  if (auto it = o.find("tool_calls"); it != o.end() && !it->value().is_null()) {
    if (!it->value().is_array())
      throw std::invalid_argument(fmt::format("turn {}: 'tool_calls' must be a list", i + 1));
    std::size_t k = 0;
    for (const auto& c : it->value().get_array()) {
      const json::object* co = c.is_object() ? &c.get_object() : nullptr;
      auto name = co ? co->find("name") : nullptr;
      if (!co || name == co->end() || !name->value().is_string() ||
          name->value().get_string().empty())
        throw std::invalid_argument(
            fmt::format("turn {}: tool_calls[{}] needs a 'name'", i + 1, k));
      std::string args = "{}";
      if (auto a = co->find("arguments"); a != co->end() && !a->value().is_null()) {
        if (a->value().is_string()) {
          args = std::string(a->value().get_string());
        } else if (a->value().is_object()) {
          args = python_json(a->value());
        } else {
          throw std::invalid_argument(fmt::format(
              "turn {}: tool_calls[{}].arguments must be a mapping or a string", i + 1, k));
        }
      }
      t.calls.emplace_back(std::string(name->value().get_string()), std::move(args));
      ++k;
    }
  }
  if (t.reasoning.empty() && t.text.empty() && t.calls.empty())
    throw std::invalid_argument(
        fmt::format("turn {}: says nothing (give reasoning, text or tool_calls)", i + 1));
  return t;
}

}  // namespace

Script parse_script(std::string_view text) {
  json::value doc;
  try {
    doc = to_json(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("not JSON or YAML: {}", e.what()));
  }
  if (doc.is_object() && doc.get_object().contains("turns")) doc = doc.get_object().at("turns");
  if (!doc.is_array())
    throw std::invalid_argument("a script is a list of turns (or a mapping with 'turns')");
  Script s;
  for (std::size_t i = 0; i < doc.get_array().size(); ++i)
    s.turns.push_back(parse_turn(doc.get_array()[i], i));
  if (s.turns.empty()) throw std::invalid_argument("the script has no turns");
  return s;
}

Script load_script(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("cannot read '{}'", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_script(ss.str());
}

const ScriptTurn* ScriptPlayer::pick(std::string_view last_input) {
  const auto& turns = script_->turns;
  for (const auto& t : turns) {
    if (t.match && last_input.find(*t.match) != std::string_view::npos) return &t;
  }
  for (std::size_t k = 0; k < turns.size(); ++k) {
    const ScriptTurn& t = turns[(next_ + k) % turns.size()];
    if (t.match) continue;
    next_ = (next_ + k + 1) % turns.size();
    return &t;
  }
  return nullptr;
}

json::value schema_example(const json::value& schema, int depth) {
  if (!schema.is_object() || depth > 16) return nullptr;
  const auto& s = schema.get_object();
  if (auto it = s.find("const"); it != s.end()) return it->value();
  if (auto it = s.find("enum");
      it != s.end() && it->value().is_array() && !it->value().get_array().empty())
    return it->value().get_array()[0];
  for (const char* alt : {"anyOf", "oneOf", "allOf"}) {
    if (auto it = s.find(alt);
        it != s.end() && it->value().is_array() && !it->value().get_array().empty())
      return schema_example(it->value().get_array()[0], depth + 1);
  }
  std::string type;
  if (auto it = s.find("type"); it != s.end()) {
    if (it->value().is_string()) {
      type = it->value().get_string();
    } else if (it->value().is_array()) {
      for (const auto& t : it->value().get_array())
        if (t.is_string() && t.get_string() != "null") {
          type = t.get_string();
          break;
        }
    }
  }
  if (type.empty()) type = s.contains("properties") ? "object" : "string";
  auto num = [&](std::string_view k) -> std::optional<double> {
    auto it = s.find(k);
    if (it == s.end() || !it->value().is_number()) return std::nullopt;
    return it->value().to_number<double>();
  };
  if (type == "object") {
    json::object out;
    auto props = s.find("properties");
    auto req = s.find("required");
    if (req != s.end() && req->value().is_array()) {
      for (const auto& r : req->value().get_array()) {
        if (!r.is_string()) continue;
        const json::value* ps = nullptr;
        if (props != s.end() && props->value().is_object()) {
          auto p = props->value().get_object().find(r.get_string());
          if (p != props->value().get_object().end()) ps = &p->value();
        }
        out[r.get_string()] = ps ? schema_example(*ps, depth + 1) : json::value("value");
      }
    }
    return out;
  }
  if (type == "array") {
    json::array out;
    const auto n = static_cast<std::size_t>(num("minItems").value_or(0));
    auto items = s.find("items");
    for (std::size_t i = 0; i < n && i < 64; ++i)
      out.push_back(items != s.end() ? schema_example(items->value(), depth + 1)
                                     : json::value("value"));
    return out;
  }
  if (type == "integer" || type == "number") {
    double v = 1;
    if (auto lo = num("minimum")) v = *lo;
    if (auto lo = num("exclusiveMinimum")) v = *lo + 1;
    if (auto hi = num("maximum"); hi && v > *hi) v = *hi;
    if (type == "integer") return static_cast<std::int64_t>(std::ceil(v));
    return v;
  }
  if (type == "boolean") return true;
  if (type == "null") return nullptr;
  std::string v = "value";
  if (auto lo = num("minLength"); lo && v.size() < *lo)
    v.append(static_cast<std::size_t>(*lo) - v.size(), 'x');
  if (auto hi = num("maxLength"); hi && v.size() > *hi) v.resize(static_cast<std::size_t>(*hi));
  return json::string(v);
}

std::optional<std::pair<std::string, std::string>> statistical_call(const GenRequest& req,
                                                                    double share, double draw,
                                                                    std::uint64_t pick) {
  if (req.function_tools.empty() || draw >= share) return std::nullopt;
  if (req.tool_choice.is_string() && req.tool_choice.get_string() == "none") return std::nullopt;
  const FunctionTool* tool = &req.function_tools[pick % req.function_tools.size()];
  // A named tool_choice ({"type": "function", "name"/"function": {"name"}}) is honoured.
  if (req.tool_choice.is_object()) {
    const auto& tc = req.tool_choice.get_object();
    std::string_view want;
    if (auto n = tc.find("name"); n != tc.end() && n->value().is_string())
      want = n->value().get_string();
    if (auto f = tc.find("function"); f != tc.end() && f->value().is_object()) {
      auto n = f->value().get_object().find("name");
      if (n != f->value().get_object().end() && n->value().is_string())
        want = n->value().get_string();
    }
    for (const auto& t : req.function_tools)
      if (t.name == want) tool = &t;
  }
  json::value schema = tool->parameters;
  if (schema.is_object() && !schema.get_object().contains("type"))
    schema.get_object()["type"] = "object";
  json::value args = schema_example(schema);
  if (!args.is_object()) args = json::object{};
  return std::make_pair(tool->name, python_json(args));
}

}  // namespace llmux::sim
