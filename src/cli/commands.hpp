// SPDX-License-Identifier: Apache-2.0
#pragma once
// Subcommand wiring: each add_*() registers its options on the app and returns the function
// that runs it once parsing succeeded.
#include <CLI/CLI.hpp>

#include <functional>

namespace llmux::cli {

using Runner = std::function<int()>;

Runner add_sim(CLI::App& app);
Runner add_gateway(CLI::App& app);
Runner add_client_config(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_demo(CLI::App& app);
Runner add_keys(CLI::App& app);  // keys_cmd.cpp

}  // namespace llmux::cli
