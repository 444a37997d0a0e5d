// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the `llmux bench` subcommands' wiring shares: bench_cmd.cpp (throughput, compare, report
// and the `bench` command itself) and bench_run_cmd.cpp (`bench run`).
#include <chrono>
#include <functional>
#include <string>

#include "cli/commands.hpp"
#include "http/client.hpp"

namespace llmux::cli::bench_cli {

/// The URL (http:// or https://), or std::invalid_argument naming the flag.
http::Url parse_url_or_throw(const std::string& text, const std::string& flag);

/// --ca-file and --insecure, for https:// URLs.
struct TlsFlags {
  std::string ca_file;
  bool insecure = false;
  void add(CLI::App* sub);
  /// Gives `client` a TLS client context when `any_https` (std::invalid_argument when the CA file
  /// cannot be read); --ca-file or --insecure without an https:// URL is an error too.
  void apply(http::ClientOptions& client, bool any_https) const;
};
std::chrono::milliseconds secs(double seconds);
/// Runs `command`; an exception is logged and becomes exit status 2.
int guarded(const std::function<int()>& command);

/// Registers `bench run` on `bench` (bench_run_cmd.cpp).
Runner add_run(CLI::App* bench);

}  // namespace llmux::cli::bench_cli
