// SPDX-License-Identifier: Apache-2.0
// quick_config(): the quick form, `llmux gateway --port PORT --backend NAME=URL ...`.
#include <fmt/format.h>

#include <utility>

#include "config/config.hpp"

namespace llmux::config {

GatewayConfig quick_config(std::uint16_t port, const std::vector<std::string>& backends,
                           std::vector<ConfigError>& errors) {
  GatewayConfig cfg;
  cfg.listeners = {Listener{"0.0.0.0", port}};
  Route all;
  all.name = "all";
  all.policy = "round_robin";
  for (std::size_t i = 0; i < backends.size(); ++i) {
    const std::string& spec = backends[i];
    const auto equals_sign = spec.find('=');
    if (equals_sign == std::string::npos || equals_sign == 0 || equals_sign + 1 == spec.size()) {
      errors.push_back({fmt::format("--backend #{}", i + 1), spec,
                        "expected NAME=URL, e.g. server1=http://127.0.0.1:30000"});
      continue;
    }
    Backend backend;
    backend.name = spec.substr(0, equals_sign);
    backend.url = spec.substr(equals_sign + 1);
    all.backends.push_back(backend.name);
    cfg.backends.push_back(std::move(backend));
  }
  if (backends.empty())
    errors.push_back({"--backend", "", "at least one --backend NAME=URL is required"});
  cfg.routes.push_back(std::move(all));
  return cfg;
}

}  // namespace llmux::config
