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

/// Calls `f(key, value)` for each entry of mapping `n` with a plain key (nothing otherwise).
void each(const YAML::Node& n,
          const std::function<void(const std::string&, const YAML::Node&)>& f) {
  if (!n.IsMap()) return;
  for (auto it = n.begin(); it != n.end(); ++it)
    if (it->first.IsScalar()) f(it->first.Scalar(), it->second);
}

class Linter {
 public:
  std::vector<ConfigWarning> out;

  void warn(ConfigWarning w, const YAML::Node& at) {
    const YAML::Mark m = at.Mark();
    if (!m.is_null() && m.line >= 0) {
      w.line = m.line + 1;
      w.column = m.column + 1;
    }
    out.push_back(std::move(w));
  }

  /// A duration written as a bare, non-zero number: milliseconds, almost never what was meant.
  /// (Zero is an error whatever the unit, and validate() reports it.)
  void duration(const YAML::Node& n, const std::string& field) {
    if (!n.IsScalar()) return;
    const std::string& s = n.Scalar();
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) != 0;
        }))
      return;
    if (std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; })) return;
    warn({field, s,
          fmt::format("a bare number is milliseconds: this is {0}ms; write {0}ms if that is "
                      "meant, or give the unit ({0}s)",
                      s)},
         n);
  }

  void health_checks(const YAML::Node& n, const std::string& field) {
    each(n, [&](const std::string& k, const YAML::Node& v) {
      if (k == "interval" || k == "timeout") duration(v, child(field, k));
    });
  }

  void backend(const YAML::Node& n, const std::string& field) {
    each(n, [&](const std::string& k, const YAML::Node& v) {
      const std::string f = child(field, k);
      if (k == "url" && v.IsScalar()) {
        if (auto w = lint_backend_url(f, v.Scalar())) warn(std::move(*w), v);
      }
      if (k == "pool_idle_timeout") duration(v, f);
      if (k == "health_checks") health_checks(v, f);
      if (k == "tls")
        each(v, [&](const std::string& tk, const YAML::Node& tv) {
          if (tk == "verify" && tv.IsScalar() && (tv.Scalar() == "false" || tv.Scalar() == "no"))
            warn({child(f, tk), tv.Scalar(),
                  "the backend's certificate is not checked: anyone on the path can read and "
                  "change its traffic; prefer ca_file"},
                 tv);
        });
    });
  }

  void root(const YAML::Node& n) {
    each(n, [&](const std::string& k, const YAML::Node& v) {
      if (k == "timeouts")  // every key of `timeouts` is a duration
        each(v, [&](const std::string& t, const YAML::Node& d) { duration(d, child(k, t)); });
      if (k == "backends" && v.IsSequence())
        for (std::size_t i = 0; i < v.size(); ++i) backend(v[i], index(k, i));
      if (k == "health_checks") health_checks(v, k);
      if (k == "queue")
        each(v, [&](const std::string& o, const YAML::Node& d) {
          if (o == "timeout") duration(d, child(k, o));
        });
      if (k == "affinity" || k == "backend_metrics")
        each(v, [&](const std::string& o, const YAML::Node& d) {
          if (o == "ttl" || o == "lookup_timeout" || o == "interval" || o == "timeout" ||
              o == "stale_after")
            duration(d, child(k, o));
        });
      if (k == "outlier_detection")
        each(v, [&](const std::string& o, const YAML::Node& d) {
          if (o == "base_ejection" || o == "max_ejection" || o == "stall_timeout")
            duration(d, child(k, o));
        });
      if (k == "auth")
        each(v, [&](const std::string& o, const YAML::Node& d) {
          if (o == "usage_retention") duration(d, child(k, o));
        });
    });
  }
};

}  // namespace

std::string ConfigWarning::to_string() const {
  return ConfigError{field, value, reason, line, column}.to_string();
}

std::optional<ConfigWarning> lint_backend_url(const std::string& field, const std::string& url) {
  const auto u = http::Url::parse(url, nullptr, {.scheme_optional = false, .https = true});
  if (!u) return std::nullopt;
  std::string_view path = u->path;
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path != "/v1" && !path.ends_with("/v1")) return std::nullopt;
  return ConfigWarning{
      field, url,
      fmt::format("the path ends in /v1, but the gateway appends the client's whole path, so "
                  "requests would go to {}/v1/chat/completions; leave /v1 out of the URL",
                  path)};
}

std::vector<ConfigWarning> lint(const std::string& yaml_text) {
  Linter l;
  try {
    // Load() reads only the first document, so it cannot hit yaml-cpp 0.7's endless LoadAll()
    // loop (load.cpp's parser_would_loop()).
    l.root(YAML::Load(yaml_text));
  } catch (const YAML::Exception&) {
    return {};  // not YAML: load_yaml() reports it
  }
  return std::move(l.out);
}

}  // namespace llmux::config
