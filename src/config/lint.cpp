// SPDX-License-Identifier: Apache-2.0
// lint(): warnings about valid but suspicious configurations, from the YAML text (lint.hpp).
#include "config/lint.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <string_view>

#include "config/config.hpp"
#include "config/detail.hpp"
#include "config/yaml_reader.hpp"
#include "http/url.hpp"

namespace llmux::config {
namespace {

using detail::child;
using detail::index;

/// Calls `visit(key, value)` for each entry of mapping `node` with a plain key (nothing otherwise).
void each(const YAML::Node& node,
          const std::function<void(const std::string&, const YAML::Node&)>& visit) {
  if (!node.IsMap()) return;
  for (auto it = node.begin(); it != node.end(); ++it)
    if (it->first.IsScalar()) visit(it->first.Scalar(), it->second);
}

class Linter {
 public:
  std::vector<ConfigWarning> out;

  void warn(ConfigWarning warning, const YAML::Node& node) {
    const YAML::Mark mark = node.Mark();
    if (!mark.is_null() && mark.line >= 0) {
      warning.line = mark.line + 1;
      warning.column = mark.column + 1;
    }
    out.push_back(std::move(warning));
  }

  /// A duration written as a bare, non-zero number: milliseconds, almost never what was meant.
  /// (Zero is an error whatever the unit, and validate() reports it.)
  void duration(const YAML::Node& node, const std::string& field) {
    if (!node.IsScalar()) return;
    const std::string& text = node.Scalar();
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](char character) {
          return std::isdigit(static_cast<unsigned char>(character)) != 0;
        }))
      return;
    if (std::all_of(text.begin(), text.end(), [](char character) { return character == '0'; }))
      return;
    warn({field, text,
          fmt::format("a bare number is milliseconds: this is {0}ms; write {0}ms if that is "
                      "meant, or give the unit ({0}s)",
                      text)},
         node);
  }

  void health_checks(const YAML::Node& node, const std::string& field) {
    each(node, [&](const std::string& key, const YAML::Node& value) {
      if (key == "interval" || key == "timeout") duration(value, child(field, key));
    });
  }

  void backend(const YAML::Node& node, const std::string& field) {
    each(node, [&](const std::string& key, const YAML::Node& value) {
      const std::string child_field = child(field, key);
      if (key == "url" && value.IsScalar()) {
        if (auto warning = lint_backend_url(child_field, value.Scalar()))
          warn(std::move(*warning), value);
      }
      if (key == "pool_idle_timeout") duration(value, child_field);
      if (key == "health_checks") health_checks(value, child_field);
      if (key == "tls")
        each(value, [&](const std::string& tls_key, const YAML::Node& tls_value) {
          if (tls_key == "verify" && tls_value.IsScalar() &&
              (tls_value.Scalar() == "false" || tls_value.Scalar() == "no"))
            warn({child(child_field, tls_key), tls_value.Scalar(),
                  "the backend's certificate is not checked: anyone on the path can read and "
                  "change its traffic; prefer ca_file"},
                 tls_value);
        });
    });
  }

  void root(const YAML::Node& node) {
    each(node, [&](const std::string& key, const YAML::Node& value) {
      if (key == "timeouts")  // every key of `timeouts` is a duration
        each(value, [&](const std::string& name, const YAML::Node& entry) {
          duration(entry, child(key, name));
        });
      if (key == "backends" && value.IsSequence())
        for (std::size_t i = 0; i < value.size(); ++i) backend(value[i], index(key, i));
      if (key == "health_checks") health_checks(value, key);
      if (key == "queue")
        each(value, [&](const std::string& name, const YAML::Node& entry) {
          if (name == "timeout") duration(entry, child(key, name));
        });
      if (key == "affinity" || key == "backend_metrics")
        each(value, [&](const std::string& name, const YAML::Node& entry) {
          if (name == "ttl" || name == "lookup_timeout" || name == "interval" ||
              name == "timeout" || name == "stale_after")
            duration(entry, child(key, name));
        });
      if (key == "outlier_detection")
        each(value, [&](const std::string& name, const YAML::Node& entry) {
          if (name == "base_ejection" || name == "max_ejection" || name == "stall_timeout")
            duration(entry, child(key, name));
        });
      if (key == "auth")
        each(value, [&](const std::string& name, const YAML::Node& entry) {
          if (name == "usage_retention") duration(entry, child(key, name));
        });
    });
  }
};

}  // namespace

std::string ConfigWarning::to_string() const {
  return ConfigError{field, value, reason, line, column}.to_string();
}

std::optional<ConfigWarning> lint_backend_url(const std::string& field, const std::string& url) {
  const auto parsed = http::Url::parse(url, nullptr, {.scheme_optional = false, .https = true});
  if (!parsed) return std::nullopt;
  std::string_view path = parsed->path;
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path != "/v1" && !path.ends_with("/v1")) return std::nullopt;
  return ConfigWarning{
      field, url,
      fmt::format("the path ends in /v1, but the gateway appends the client's whole path, so "
                  "requests would go to {}/v1/chat/completions; leave /v1 out of the URL",
                  path)};
}

std::vector<ConfigWarning> lint(const std::string& yaml_text) {
  Linter linter;
  try {
    // Load() reads only the first document, so it cannot hit yaml-cpp 0.7's endless LoadAll()
    // loop (load.cpp's parser_would_loop()).
    linter.root(YAML::Load(yaml_text));
  } catch (const YAML::Exception&) {
    return {};  // not YAML: load_yaml() reports it
  }
  return std::move(linter.out);
}

}  // namespace llmux::config
