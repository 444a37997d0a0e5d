// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal to src/config: the strict YAML reading shared by load.cpp (the gateway config) and
// auth.cpp (auth keys, also from a keys file). Every problem becomes a ConfigError with the field
// path and the line and column; nothing here throws.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "config/detail.hpp"

namespace llmux::config::detail {

inline std::string child(const std::string& field, std::string_view key) {
  return field.empty() ? std::string(key) : fmt::format("{}.{}", field, key);
}

/// The node as written, shortened, for error messages.
inline std::string render(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "";
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter emitter;
  emitter << YAML::Flow << node;
  std::string text = emitter.c_str();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

inline std::string kind(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "a scalar";
}

/// Reads YAML nodes into typed values, appending an error (with its field path, value and
/// position) for anything malformed. Not thread safe; one per load.
class YamlReader {
 public:
  explicit YamlReader(std::vector<ConfigError>& errors) : errors_(errors) {}

  void error(const std::string& field, const YAML::Node& node, std::string value,
             std::string reason) {
    ConfigError problem{field, std::move(value), std::move(reason)};
    const YAML::Mark mark = node.Mark();
    if (!mark.is_null() && mark.line >= 0) {
      problem.line = mark.line + 1;
      problem.column = mark.column + 1;
    }
    errors_.push_back(std::move(problem));
  }

  void type_error(const std::string& field, const YAML::Node& node, std::string_view expected) {
    error(field, node, render(node), fmt::format("expected {}, got {}", expected, kind(node)));
  }

  /// The entries of mapping `node` whose keys are in `known`; reports unknown and duplicate keys.
  std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& node,
                                                          const std::string& field,
                                                          const std::vector<std::string>& known) {
    std::vector<std::pair<std::string, YAML::Node>> out;
    if (!node.IsMap()) {
      type_error(field, node, "a mapping");
      return out;
    }
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) {
        error(field, key, render(key), "keys must be plain names");
        continue;
      }
      const std::string& name = key.Scalar();
      if (name == "<<") {
        error(child(field, name), key, name, "YAML merge keys are not supported");
        continue;
      }
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        const std::string near = suggest(name, known);
        error(child(field, name), key, name,
              near.empty() ? fmt::format("unknown key (known: {})", join(known))
                           : fmt::format("unknown key; did you mean '{}'?", near));
        continue;
      }
      if (!seen.insert(name).second) {
        error(child(field, name), key, name, "duplicate key");
        continue;
      }
      out.emplace_back(name, it->second);
    }
    return out;
  }

  bool string(const YAML::Node& node, const std::string& field, std::string& out) {
    if (!node.IsScalar()) {
      type_error(field, node, "a string");
      return false;
    }
    out = node.Scalar();
    return true;
  }

  template <class Int>
  bool integer(const YAML::Node& node, const std::string& field, Int& out) {
    if (!node.IsScalar()) {
      type_error(field, node, "an integer");
      return false;
    }
    const std::string& text = node.Scalar();
    long long value = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || p != text.data() + text.size() || ec == std::errc::invalid_argument) {
      error(field, node, text, "expected an integer");
      return false;
    }
    if (ec == std::errc::result_out_of_range || value < std::numeric_limits<Int>::min() ||
        value > std::numeric_limits<Int>::max()) {
      error(field, node, text, "out of range");
      return false;
    }
    out = static_cast<Int>(value);
    return true;
  }

  bool boolean(const YAML::Node& node, const std::string& field, bool& out) {
    if (node.IsScalar()) {
      const std::string text = lower(node.Scalar());
      if (text == "true" || text == "yes" || text == "on") {
        out = true;
        return true;
      }
      if (text == "false" || text == "no" || text == "off") {
        out = false;
        return true;
      }
    }
    type_error(field, node, "true or false");
    return false;
  }

  bool number(const YAML::Node& node, const std::string& field, double& out) {
    if (node.IsScalar()) {
      const std::string& text = node.Scalar();
      double value = 0;
      const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (!text.empty() && p == text.data() + text.size() && ec == std::errc() &&
          std::isfinite(value)) {
        out = value;
        return true;
      }
    }
    type_error(field, node, "a number");
    return false;
  }

  void strings(const YAML::Node& node, const std::string& field, std::vector<std::string>& out) {
    if (!node.IsSequence()) {
      type_error(field, node, "a list of strings");
      return;
    }
    out.clear();
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string item;
      if (string(node[i], index(field, i), item)) out.push_back(std::move(item));
    }
  }

  /// `policy: NAME` or `policy: {name: NAME, OPTION: VALUE, ...}`.

  void duration(const YAML::Node& node, const std::string& field, Millis& out) {
    if (!node.IsScalar()) {
      type_error(field, node, "a duration");
      return;
    }
    if (auto parsed = parse_duration(node.Scalar()))
      out = *parsed;
    else
      error(field, node, node.Scalar(),
            "expected a duration such as 250ms, 5s, 2m or 1h (a bare number is milliseconds)");
  }

  bool size(const YAML::Node& node, const std::string& field, std::uint64_t& out) {
    if (!node.IsScalar()) {
      type_error(field, node, "a size");
      return false;
    }
    if (auto parsed = parse_size(node.Scalar())) {
      out = *parsed;
      return true;
    }
    error(field, node, node.Scalar(),
          "expected a size such as 16MiB, 512KiB, 10MB or a number of bytes");
    return false;
  }

  /// Reads `node` with `read` into a fresh value and sets `out` when it parsed.
  template <typename T, typename Read>
  void set(std::optional<T>& out, const YAML::Node& node, const std::string& field, Read read) {
    T value{};
    if ((this->*read)(node, field, value)) out = value;
  }
  bool duration_ok(const YAML::Node& node, const std::string& field, Millis& out) {
    const std::size_t before = errors_.size();
    duration(node, field, out);
    return errors_.size() == before;
  }

 protected:
  std::vector<ConfigError>& errors_;
};

}  // namespace llmux::config::detail
