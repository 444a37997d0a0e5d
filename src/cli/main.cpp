// SPDX-License-Identifier: Apache-2.0
// llmux: one binary, several subcommands (like `vllm serve` / `vllm bench serve`).
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "core/logging.hpp"

int main(int argc, char** argv) {
  // Logs go to stderr; stdout is for machine-readable output (ready lines, reports). Readable
  // lines on a terminal, JSON lines otherwise (LLMUX_LOG_FORMAT, `gateway --log-format`).
  spdlog::set_default_logger(spdlog::stderr_color_mt("llmux"));
  llmux::logging::apply_from_env();
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug

  CLI::App app{"llmux: an OpenAI-compatible LLM gateway, a serving benchmark and a vLLM simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "llmux 0.1.0");
  llmux::cli::Runner sim = llmux::cli::add_sim(app);
  llmux::cli::Runner gateway = llmux::cli::add_gateway(app);
  llmux::cli::Runner client_config = llmux::cli::add_client_config(app);
  llmux::cli::Runner bench = llmux::cli::add_bench(app);
  llmux::cli::Runner demo = llmux::cli::add_demo(app);
  llmux::cli::Runner keys = llmux::cli::add_keys(app);
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("sim")) return sim();
  if (app.got_subcommand("gateway")) return gateway();
  if (app.got_subcommand("client-config")) return client_config();
  if (app.got_subcommand("bench")) return bench();
  if (app.got_subcommand("demo")) return demo();
  if (app.got_subcommand("keys")) return keys();
  return 0;
}
