// SPDX-License-Identifier: Apache-2.0
// `llmux bench`: flags → bench::*Command → bench_run / bench_throughput / bench_compare /
// bench_report (src/bench/commands.hpp). Wiring only.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/commands.hpp"
#include "cli/bench_common.hpp"
#include "cli/commands.hpp"
#include "http/stream.hpp"

namespace llmux::cli {

using namespace llmux::bench;

namespace bench_cli {

http::Url parse_url_or_throw(const std::string& text, const std::string& flag) {
  std::string err;
  auto url = http::Url::parse(text, &err, {.scheme_optional = true, .https = true});
  if (!url) throw std::invalid_argument(fmt::format("{} '{}': {}", flag, text, err));
  return *url;
}

void TlsFlags::add(CLI::App* sub) {
  sub->add_option("--ca-file", ca_file,
                  "https:// URLs: trust the servers' certificates signed by this CA (PEM) "
                  "instead of the system's store");
  sub->add_flag("--insecure", insecure,
                "https:// URLs: do not check the servers' certificates (names nor signers)");
}

void TlsFlags::apply(http::ClientOptions& client, bool any_https) const {
  if (!any_https) {
    if (!ca_file.empty() || insecure)
      throw std::invalid_argument("--ca-file and --insecure are for https:// URLs");
    return;
  }
  if (!ca_file.empty() && insecure)
    throw std::invalid_argument("--ca-file and --insecure: one or the other");
  std::string err;
  client.tls = http::make_client_context(ca_file, !insecure, err);
  if (!client.tls) throw std::invalid_argument(fmt::format("--ca-file '{}': {}", ca_file, err));
  client.tls_verify = !insecure;
}

std::chrono::milliseconds secs(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

int guarded(const std::function<int()>& command) {
  try {
    return command();
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
    return 2;
  }
}

}  // namespace bench_cli

namespace {

using bench_cli::guarded;
using bench_cli::parse_url_or_throw;
using bench_cli::secs;
using bench_cli::TlsFlags;

/// "2", "2%" or "0.02"? Percent: "2" and "2%" both mean 2%.
double parse_percent(const std::string& text, const std::string& flag) {
  std::string number_text = text;
  if (!number_text.empty() && number_text.back() == '%') number_text.pop_back();
  std::size_t pos = 0;
  double percent = -1;
  try {
    percent = std::stod(number_text, &pos);
  } catch (const std::logic_error&) {
  }
  if (pos != number_text.size() || percent < 0)
    throw std::invalid_argument(fmt::format("{} '{}': expected a percentage", flag, text));
  return percent / 100.0;
}

/// Flags shared by throughput and compare.
struct SeedFlags {
  std::string model;
  std::size_t repeat = 3;
  std::string levels;
  std::uint32_t max_tokens = 128;
  std::string connection = "fresh";
  double timeout = 300;
  std::string out;
  bool no_progress = false, no_plots = false, fail_on_reject = false;
  TlsFlags tls;
  void add(CLI::App* sub, const std::string& default_levels) {
    levels = default_levels;
    tls.add(sub);
    sub->add_option("--model", model,
                    "Model name to send (default: the first id of each URL's GET /v1/models)");
    sub->add_option("--repeat", repeat, "Serial runs of each prompt (the seed: 3)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("--concurrency", levels,
                    "Concurrency levels, comma-separated: N requests started together at each")
        ->capture_default_str();
    sub->add_option("--max-tokens", max_tokens, "max_tokens of every request (the seed: 128)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("--connection", connection,
                    "fresh: a new TCP connection per request, as the seed's urllib; keep-alive: "
                    "reuse connections")
        ->capture_default_str()
        ->check(CLI::IsMember({"fresh", "keep-alive"}));
    sub->add_option("--timeout", timeout, "Seconds a request may take in all (the seed: 300)")
        ->capture_default_str();
    sub->add_option("--out", out,
                    "Directory for the JSON (settings and every request's timings), CSV files, "
                    "SVG and PNG charts (gnuplot) and index.html");
    sub->add_flag("--no-progress", no_progress,
                  "No progress line on stderr (shown only on a terminal)");
    sub->add_flag("--no-plots", no_plots, "With --out: do not run gnuplot");
    sub->add_flag("--fail-on-reject", fail_on_reject,
                  "Exit status 1 also when requests were rejected with 429 (otherwise only "
                  "failures do: transport errors, timeouts, other error statuses)");
  }
  OutputOptions output() const {
    OutputOptions options;
    options.out_dir = out;
    options.progress = !no_progress && ::isatty(2);
    options.plots = !no_plots;
    options.fail_on_reject = fail_on_reject;
    return options;
  }
  http::ClientOptions client() const {
    http::ClientOptions options;
    options.mode = *http::parse_connection_mode(connection);
    options.timeouts.total = secs(timeout);
    options.timeouts.idle = secs(timeout);
    return options;
  }
};

Runner add_throughput(CLI::App* bench) {
  auto* sub = bench->add_subcommand(
      "throughput",
      "The seed's qwen36-throughput.py: on each target, short/medium/long prompts one after the "
      "other (--repeat times), then N requests started together with the medium prompt; "
      "non-streaming /v1/completions, temperature 0, max_tokens 128. Prints per-target tables and "
      "whether the targets agree.");
  struct F {
    std::vector<std::string> targets;
    std::string agree = "2";
    SeedFlags seed;
  };
  auto flags = std::make_shared<F>();
  sub->add_option("--target", flags->targets,
                  "A server to measure as NAME=URL, e.g. server1=http://10.0.0.1:30000 "
                  "(repeatable; a bare URL is named serverN)")
      ->required();
  sub->add_option("--agree", flags->agree,
                  "Targets agree when their tok/s spread, (max-min)/max, is within this percentage")
      ->capture_default_str();
  flags->seed.add(sub, "4,8");
  return [flags]() -> int {
    return guarded([&]() -> int {
      ThroughputCommand command;
      int server_number = 0;
      for (const auto& target : flags->targets) {
        ++server_number;
        const auto equals_sign = target.find('=');
        const bool named = equals_sign != std::string::npos && target.find("://") > equals_sign;
        NamedUrl named_url;
        named_url.name =
            named ? target.substr(0, equals_sign) : fmt::format("server{}", server_number);
        named_url.url =
            parse_url_or_throw(named ? target.substr(equals_sign + 1) : target, "--target");
        command.targets.push_back(std::move(named_url));
      }
      command.model = flags->seed.model;
      command.repeat = flags->seed.repeat;
      command.levels = parse_levels(flags->seed.levels);
      command.max_tokens = flags->seed.max_tokens;
      command.agree = parse_percent(flags->agree, "--agree");
      command.client = flags->seed.client();
      flags->seed.tls.apply(command.client,
                            std::any_of(command.targets.begin(), command.targets.end(),
                                        [](const NamedUrl& target) { return target.url.tls; }));
      command.out = flags->seed.output();
      return bench_throughput(command, std::cout);
    });
  };
}

Runner add_compare(CLI::App* bench) {
  auto* sub = bench->add_subcommand(
      "compare",
      "The seed's qwen36-gateway-vs-direct.py: named paths (URL + endpoint), each measured "
      "serially and with N requests started together; tok/s per path and level, and each "
      "gateway path's ratio to the direct path of the same endpoint.");
  struct F {
    std::string direct, gateway, prompt = "medium";
    std::vector<std::string> paths;
    SeedFlags seed;
  };
  auto flags = std::make_shared<F>();
  sub->add_option("--direct", flags->direct,
                  "Direct URL of one backend (with --gateway: the seed's four paths)");
  sub->add_option("--gateway", flags->gateway,
                  "Gateway URL (with --direct: the seed's four paths)");
  sub->add_option("--path", flags->paths,
                  "A path as NAME=URL,ENDPOINT with ENDPOINT completions, chat, responses or "
                  "messages (repeatable); a path named direct* is the baseline of the others with "
                  "the same endpoint");
  sub->add_option("--prompt", flags->prompt, "Prompt size: short, medium or long")
      ->capture_default_str()
      ->check(CLI::IsMember({"short", "medium", "long"}));
  flags->seed.add(sub, "8,16");
  return [flags]() -> int {
    return guarded([&]() -> int {
      CompareCommand command;
      if (!flags->direct.empty() || !flags->gateway.empty()) {
        if (flags->direct.empty() || flags->gateway.empty())
          throw std::invalid_argument("--direct and --gateway go together");
        command.paths = seed_paths(parse_url_or_throw(flags->direct, "--direct"),
                                   parse_url_or_throw(flags->gateway, "--gateway"));
      }
      for (const auto& path : flags->paths) {
        const auto equals_sign = path.find('=');
        const auto comma = path.rfind(',');
        if (equals_sign == std::string::npos || comma == std::string::npos || comma < equals_sign)
          throw std::invalid_argument(fmt::format("--path '{}': expected NAME=URL,ENDPOINT", path));
        NamedUrl named_url;
        named_url.name = path.substr(0, equals_sign);
        named_url.url =
            parse_url_or_throw(path.substr(equals_sign + 1, comma - equals_sign - 1), "--path");
        auto dialect = parse_dialect(path.substr(comma + 1));
        if (!dialect)
          throw std::invalid_argument(fmt::format(
              "--path '{}': endpoint must be completions, chat, responses or messages", path));
        named_url.dialect = *dialect;
        command.paths.push_back(std::move(named_url));
      }
      if (command.paths.empty())
        throw std::invalid_argument("give --direct and --gateway, or --path");
      command.model = flags->seed.model;
      command.repeat = flags->seed.repeat;
      command.levels = parse_levels(flags->seed.levels);
      command.max_tokens = flags->seed.max_tokens;
      command.prompt = flags->prompt;
      command.client = flags->seed.client();
      flags->seed.tls.apply(command.client,
                            std::any_of(command.paths.begin(), command.paths.end(),
                                        [](const NamedUrl& path) { return path.url.tls; }));
      command.out = flags->seed.output();
      return bench_compare(command, std::cout);
    });
  };
}

Runner add_report(CLI::App* bench) {
  auto* sub = bench->add_subcommand(
      "report",
      "Compare two results written with --out (before and after a deployment change): every "
      "figure of their summaries, flagging changes beyond a threshold. Exit status 1 when "
      "something changed. Both files must be of the same kind (two run.json, two throughput.json "
      "or two compare.json); otherwise exit status 2.");
  struct F {
    std::string before, after, threshold = "5";
    bool all = false;
  };
  auto flags = std::make_shared<F>();
  sub->add_option("A", flags->before, "Result before (run.json, throughput.json or compare.json)")
      ->required();
  sub->add_option("B", flags->after, "Result after")->required();
  sub->add_option("--threshold", flags->threshold, "Flag changes beyond this percentage")
      ->capture_default_str();
  sub->add_flag("--all", flags->all, "List every metric, not only the flagged ones");
  return [flags]() -> int {
    return guarded([&]() -> int {
      return bench_report(flags->before, flags->after,
                          parse_percent(flags->threshold, "--threshold"), flags->all, std::cout);
    });
  };
}

}  // namespace

Runner add_bench(CLI::App& app) {
  auto* bench = app.add_subcommand(
      "bench",
      "Benchmark OpenAI-compatible servers (vLLM, llmux gateway, llmux sim): `run` for load "
      "tests and sweeps, `throughput` and `compare` for the seed's two scripts, `report` to "
      "compare two results. Markdown on stdout, a progress line on stderr when it is a terminal; "
      "--out DIR adds JSON, CSV, charts and index.html. Exit status 1 when requests failed.");
  bench->require_subcommand(1);
  auto runners = std::make_shared<std::vector<std::pair<CLI::App*, Runner>>>();
  for (auto* add : {&bench_cli::add_run, &add_throughput, &add_compare, &add_report}) {
    Runner runner = (*add)(bench);
    runners->emplace_back(bench->get_subcommands({}).back(), std::move(runner));
  }
  return [runners]() -> int {
    for (auto& [sub, runner] : *runners)
      if (sub->parsed()) return runner();
    return 2;
  };
}

}  // namespace llmux::cli
