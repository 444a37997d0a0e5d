// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux sim`'s HTTP server: Beast + C++20 coroutines on one thread, driving one Engine.
// Beast stays inside server.cpp; this header is all the CLI needs.
#include "sim/config.hpp"

namespace llmux::sim {

/// Runs the simulator until SIGINT/SIGTERM. Prints one JSON ready line on stdout
/// (`{"event":"ready","host":...,"port":N,"pid":P}`) once it accepts connections.
/// Returns the process exit code.
int run_server(SimConfig cfg);

}  // namespace llmux::sim
