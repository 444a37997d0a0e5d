// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux gateway`: the OpenAI-compatible proxy (gateway/gateway_process.hpp runs it).
#include <functional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace llmux::gateway {

/// A configuration read again for a reload (SIGHUP): valid when `errors` is empty.
struct LoadedConfig {
  config::GatewayConfig cfg;
  std::vector<config::ConfigError> errors;
  std::vector<std::string> warnings;  // logged, not fatal
};
/// Reads the configuration the gateway started from again (the same file and command-line
/// overrides); empty when it started without a file (then there is nothing to reload).
using ConfigLoader = std::function<LoadedConfig()>;

/// Runs the gateway on a validated config until SIGTERM/SIGINT/SIGQUIT (graceful drain; a second
/// one stops at once). SIGHUP reloads through `reload`; SIGUSR1 reopens the access log file;
/// every other signal that would end the process is ignored with a log line. Prints one JSON
/// ready line on stdout (`{"event":"ready","ports":[...],"pid":P}`) once every listener accepts.
/// Returns the process exit code.
int run_gateway(config::GatewayConfig cfg, ConfigLoader reload = {});

}  // namespace llmux::gateway
