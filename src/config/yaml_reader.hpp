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
inline std::string render(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  std::string s = e.c_str();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

inline std::string kind(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "a scalar";
}

/// Reads YAML nodes into typed values, appending an error (with its field path, value and
/// position) for anything malformed. Not thread safe; one per load.
class YamlReader {
 public:
  explicit YamlReader(std::vector<ConfigError>& errors) : errors_(errors) {}

  void error(const std::string& field, const YAML::Node& at, std::string value,
             std::string reason) {
    ConfigError e{field, std::move(value), std::move(reason)};
    const YAML::Mark m = at.Mark();
    if (!m.is_null() && m.line >= 0) {
      e.line = m.line + 1;
      e.column = m.column + 1;
    }
    errors_.push_back(std::move(e));
  }

  void type_error(const std::string& field, const YAML::Node& n, std::string_view expected) {
    error(field, n, render(n), fmt::format("expected {}, got {}", expected, kind(n)));
  }

  /// The entries of mapping `n` whose keys are in `known`; reports unknown and duplicate keys.
  std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& n,
                                                          const std::string& field,
                                                          const std::vector<std::string>& known) {
    std::vector<std::pair<std::string, YAML::Node>> out;
    if (!n.IsMap()) {
      type_error(field, n, "a mapping");
      return out;
    }
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) {
        error(field, key, render(key), "keys must be plain names");
        continue;
      }
      const std::string& k = key.Scalar();
      if (k == "<<") {
        error(child(field, k), key, k, "YAML merge keys are not supported");
        continue;
      }
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        const std::string near = suggest(k, known);
        error(child(field, k), key, k,
              near.empty() ? fmt::format("unknown key (known: {})", join(known))
                           : fmt::format("unknown key; did you mean '{}'?", near));
        continue;
      }
      if (!seen.insert(k).second) {
        error(child(field, k), key, k, "duplicate key");
        continue;
      }
      out.emplace_back(k, it->second);
    }
    return out;
  }

  bool string(const YAML::Node& n, const std::string& field, std::string& out) {
    if (!n.IsScalar()) {
      type_error(field, n, "a string");
      return false;
    }
    out = n.Scalar();
    return true;
  }

  template <class Int>
  bool integer(const YAML::Node& n, const std::string& field, Int& out) {
    if (!n.IsScalar()) {
      type_error(field, n, "an integer");
      return false;
    }
    const std::string& s = n.Scalar();
    long long v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || p != s.data() + s.size() || ec == std::errc::invalid_argument) {
      error(field, n, s, "expected an integer");
      return false;
    }
    if (ec == std::errc::result_out_of_range || v < std::numeric_limits<Int>::min() ||
        v > std::numeric_limits<Int>::max()) {
      error(field, n, s, "out of range");
      return false;
    }
    out = static_cast<Int>(v);
    return true;
  }

  bool boolean(const YAML::Node& n, const std::string& field, bool& out) {
    if (n.IsScalar()) {
      const std::string v = lower(n.Scalar());
      if (v == "true" || v == "yes" || v == "on") {
        out = true;
        return true;
      }
      if (v == "false" || v == "no" || v == "off") {
        out = false;
        return true;
      }
    }
    type_error(field, n, "true or false");
    return false;
  }

  bool number(const YAML::Node& n, const std::string& field, double& out) {
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      double v = 0;
      const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (!s.empty() && p == s.data() + s.size() && ec == std::errc() && std::isfinite(v)) {
        out = v;
        return true;
      }
    }
    type_error(field, n, "a number");
    return false;
  }

  void strings(const YAML::Node& n, const std::string& field, std::vector<std::string>& out) {
    if (!n.IsSequence()) {
      type_error(field, n, "a list of strings");
      return;
    }
    out.clear();
    for (std::size_t i = 0; i < n.size(); ++i) {
      std::string s;
      if (string(n[i], index(field, i), s)) out.push_back(std::move(s));
    }
  }

  /// `policy: NAME` or `policy: {name: NAME, OPTION: VALUE, ...}`.

  void duration(const YAML::Node& n, const std::string& field, Millis& out) {
    if (!n.IsScalar()) {
      type_error(field, n, "a duration");
      return;
    }
    if (auto d = parse_duration(n.Scalar()))
      out = *d;
    else
      error(field, n, n.Scalar(),
            "expected a duration such as 250ms, 5s, 2m or 1h (a bare number is milliseconds)");
  }

  bool size(const YAML::Node& n, const std::string& field, std::uint64_t& out) {
    if (!n.IsScalar()) {
      type_error(field, n, "a size");
      return false;
    }
    if (auto s = parse_size(n.Scalar())) {
      out = *s;
      return true;
    }
    error(field, n, n.Scalar(), "expected a size such as 16MiB, 512KiB, 10MB or a number of bytes");
    return false;
  }

  /// Reads `v` with `read` into a fresh value and sets `out` when it parsed.
  template <typename T, typename Read>
  void set(std::optional<T>& out, const YAML::Node& v, const std::string& f, Read read) {
    T value{};
    if ((this->*read)(v, f, value)) out = value;
  }
  bool duration_ok(const YAML::Node& n, const std::string& field, Millis& out) {
    const std::size_t before = errors_.size();
    duration(n, field, out);
    return errors_.size() == before;
  }

 protected:
  std::vector<ConfigError>& errors_;
};

}  // namespace llmux::config::detail
