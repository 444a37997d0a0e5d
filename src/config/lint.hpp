// SPDX-License-Identifier: Apache-2.0
#pragma once
// Warnings about a configuration that is valid but almost certainly not what was meant: found by
// re-reading the YAML text (so they carry the line and column), never by changing what
// load_yaml() or validate() accept. `llmux gateway` prints them (with --check and at start) and
// starts anyway.
//
//   - a backend URL whose path ends in /v1: the gateway appends the client's whole path, so
//     requests would go to .../v1/v1/chat/completions;
//   - a duration written as a bare number (`connect: 5` is 5 ms): timeouts.*,
//     backends[i].pool_idle_timeout, health_checks.interval/timeout (top level and per backend),
//     outlier_detection.base_ejection/max_ejection, auth.usage_retention.
//
// Pure functions of their arguments; thread-safe.
#include <optional>
#include <string>
#include <vector>

namespace llmux::config {

struct ConfigWarning {
  std::string field;   // e.g. "timeouts.connect", "backends[1].url"
  std::string value;   // as written
  std::string reason;  // what is suspicious and what to write instead
  int line = 0;        // 1-based position in the YAML text; 0: unknown (e.g. the quick form)
  int column = 0;
  /// "field: 'value': reason (line L, column C)", as ConfigError::to_string() writes errors.
  std::string to_string() const;
};

/// Every warning about `yaml_text`, in the order of the text's sections. Text that is not
/// YAML, or not a mapping, gives none (loading reports it); a value of the wrong type is skipped.
std::vector<ConfigWarning> lint(const std::string& yaml_text);

/// The /v1 warning for one backend URL (also for the quick form's --backend NAME=URL), under
/// `field`; nullopt when the URL is fine or cannot be parsed (validate() reports that).
std::optional<ConfigWarning> lint_backend_url(const std::string& field, const std::string& url);

}  // namespace llmux::config
