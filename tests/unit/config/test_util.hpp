// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers shared by the config tests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.hpp"

namespace llmux::config::testing {

/// Every error, one per line, for failure messages.
inline std::string dump(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) out += "  " + e.to_string() + "\n";
  return out;
}

/// The errors whose field is exactly `field`.
inline std::vector<ConfigError> on(const std::vector<ConfigError>& errors,
                                   const std::string& field) {
  std::vector<ConfigError> out;
  for (const auto& e : errors)
    if (e.field == field) out.push_back(e);
  return out;
}

/// Loads `yaml`, expecting no load error, then validates it.
inline std::vector<ConfigError> validate_yaml(const std::string& yaml) {
  std::vector<ConfigError> load_errors;
  GatewayConfig cfg = load_yaml(yaml, load_errors);
  EXPECT_TRUE(load_errors.empty()) << dump(load_errors);
  return validate(cfg);
}

/// A valid two-backend config to which tests append or in which they replace a part.
inline constexpr const char* kBackends = R"(
backends:
  - {name: server1, url: "http://192.0.2.101:30000"}
  - {name: server2, url: "http://192.0.2.102:30000"}
)";

}  // namespace llmux::config::testing
