// SPDX-License-Identifier: Apache-2.0
// The entry points that read a file (load_yaml_file(), load_and_validate_file()) or combine
// loading (load.cpp) with validation (validate.cpp), and ConfigError::to_string().
// detail.hpp lists what each file of src/config holds.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "config/config.hpp"

namespace llmux::config {

std::string ConfigError::to_string() const {
  std::string out;
  if (!field.empty())
    out = field;
  else if (line > 0)
    out = fmt::format("line {}, column {}", line, column);
  if (!value.empty()) {
    if (!out.empty()) out += ": ";
    out += fmt::format("'{}'", value);
  }
  if (!out.empty()) out += ": ";
  out += reason;
  if (!field.empty() && line > 0) out += fmt::format(" (line {}, column {})", line, column);
  return out;
}

namespace {

/// True if `field` is `prefix` or lies inside it ("a.b" and "a.b[0]" are inside "a.b").
bool inside(std::string_view field, std::string_view prefix) {
  if (!field.starts_with(prefix)) return false;
  if (field.size() == prefix.size()) return true;
  const char next = field[prefix.size()];
  return next == '.' || next == '[';
}

}  // namespace

GatewayConfig load_yaml_file(const std::string& path, std::vector<ConfigError>& errors) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    errors.push_back({"", path, fmt::format("cannot open: {}", std::strerror(errno))});
    return GatewayConfig{};
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    errors.push_back({"", path, fmt::format("cannot read: {}", std::strerror(errno))});
    return GatewayConfig{};
  }
  return load_yaml(text.str(), errors);
}

GatewayConfig load_and_validate(const std::string& text, std::vector<ConfigError>& errors) {
  const std::size_t before = errors.size();
  GatewayConfig cfg = load_yaml(text, errors);
  const std::vector<ConfigError> load_errors(errors.begin() + before, errors.end());
  for (const auto& error : load_errors)
    if (error.field.empty()) return cfg;  // syntax error or empty document: nothing to validate
  for (auto& error : validate(cfg)) {
    const bool reported =
        std::any_of(load_errors.begin(), load_errors.end(), [&](auto& load_error) {
          return inside(error.field, load_error.field) || inside(load_error.field, error.field);
        });
    if (!reported) errors.push_back(std::move(error));
  }
  return cfg;
}

GatewayConfig load_and_validate_file(const std::string& path, std::vector<ConfigError>& errors) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    errors.push_back({"", path, fmt::format("cannot open: {}", std::strerror(errno))});
    return GatewayConfig{};
  }
  std::ostringstream text;
  text << file.rdbuf();
  return load_and_validate(text.str(), errors);
}

void apply(const HealthChecksOverride& checks, HealthChecks& base) {
  if (checks.enabled) base.enabled = *checks.enabled;
  if (checks.path) base.path = *checks.path;
  if (checks.interval) base.interval = *checks.interval;
  if (checks.timeout) base.timeout = *checks.timeout;
  if (checks.healthy_threshold) base.healthy_threshold = *checks.healthy_threshold;
  if (checks.unhealthy_threshold) base.unhealthy_threshold = *checks.unhealthy_threshold;
  if (checks.jitter) base.jitter = *checks.jitter;
}

}  // namespace llmux::config
