#pragma once
// `llmux gateway`: the OpenAI-compatible proxy. Beast stays in server.cpp.
#include "config/config.hpp"

namespace llmux::gateway {

/// Runs the gateway on a validated config until SIGTERM/SIGINT (graceful drain). Prints one JSON
/// ready line on stdout (`{"event":"ready","ports":[...],"pid":P}`) once every listener accepts.
/// Returns the process exit code.
int run_gateway(config::GatewayConfig cfg);

}  // namespace llmux::gateway
