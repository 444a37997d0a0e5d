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

http::Url parse_url_or_throw(const std::string& s, const std::string& flag) {
  std::string err;
  auto u = http::Url::parse(s, &err, {.scheme_optional = true, .https = true});
  if (!u) throw std::invalid_argument(fmt::format("{} '{}': {}", flag, s, err));
  return *u;
}

void TlsFlags::add(CLI::App* sub) {
  sub->add_option("--ca-file", ca_file,
                  "https:// URLs: trust the servers' certificates signed by this CA (PEM) "
                  "instead of the system's store");
  sub->add_flag("--insecure", insecure,
                "https:// URLs: do not check the servers' certificates (names nor signers)");
}

void TlsFlags::apply(http::ClientOptions& c, bool any_https) const {
  if (!any_https) {
    if (!ca_file.empty() || insecure)
      throw std::invalid_argument("--ca-file and --insecure are for https:// URLs");
    return;
  }
  if (!ca_file.empty() && insecure)
    throw std::invalid_argument("--ca-file and --insecure: one or the other");
  std::string err;
  c.tls = http::make_client_context(ca_file, !insecure, err);
  if (!c.tls) throw std::invalid_argument(fmt::format("--ca-file '{}': {}", ca_file, err));
  c.tls_verify = !insecure;
}

std::chrono::milliseconds secs(double s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000));
}

int guarded(const std::function<int()>& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
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
double parse_percent(const std::string& s, const std::string& flag) {
  std::string t = s;
  if (!t.empty() && t.back() == '%') t.pop_back();
  std::size_t pos = 0;
  double v = -1;
  try {
    v = std::stod(t, &pos);
  } catch (const std::logic_error&) {
  }
  if (pos != t.size() || v < 0)
    throw std::invalid_argument(fmt::format("{} '{}': expected a percentage", flag, s));
  return v / 100.0;
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
    OutputOptions o;
    o.out_dir = out;
    o.progress = !no_progress && ::isatty(2);
    o.plots = !no_plots;
    o.fail_on_reject = fail_on_reject;
    return o;
  }
  http::ClientOptions client() const {
    http::ClientOptions c;
    c.mode = *http::parse_connection_mode(connection);
    c.timeouts.total = secs(timeout);
    c.timeouts.idle = secs(timeout);
    return c;
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
  auto f = std::make_shared<F>();
  sub->add_option("--target", f->targets,
                  "A server to measure as NAME=URL, e.g. server1=http://10.0.0.1:30000 "
                  "(repeatable; a bare URL is named serverN)")
      ->required();
  sub->add_option("--agree", f->agree,
                  "Targets agree when their tok/s spread, (max-min)/max, is within this percentage")
      ->capture_default_str();
  f->seed.add(sub, "4,8");
  return [f]() -> int {
    return guarded([&]() -> int {
      ThroughputCommand c;
      int i = 0;
      for (const auto& t : f->targets) {
        ++i;
        const auto eq = t.find('=');
        const bool named = eq != std::string::npos && t.find("://") > eq;
        NamedUrl n;
        n.name = named ? t.substr(0, eq) : fmt::format("server{}", i);
        n.url = parse_url_or_throw(named ? t.substr(eq + 1) : t, "--target");
        c.targets.push_back(std::move(n));
      }
      c.model = f->seed.model;
      c.repeat = f->seed.repeat;
      c.levels = parse_levels(f->seed.levels);
      c.max_tokens = f->seed.max_tokens;
      c.agree = parse_percent(f->agree, "--agree");
      c.client = f->seed.client();
      f->seed.tls.apply(c.client, std::any_of(c.targets.begin(), c.targets.end(),
                                              [](const NamedUrl& t) { return t.url.tls; }));
      c.out = f->seed.output();
      return bench_throughput(c, std::cout);
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
  auto f = std::make_shared<F>();
  sub->add_option("--direct", f->direct,
                  "Direct URL of one backend (with --gateway: the seed's four paths)");
  sub->add_option("--gateway", f->gateway, "Gateway URL (with --direct: the seed's four paths)");
  sub->add_option("--path", f->paths,
                  "A path as NAME=URL,ENDPOINT with ENDPOINT completions or chat (repeatable); a "
                  "path named direct* is the baseline of the others with the same endpoint");
  sub->add_option("--prompt", f->prompt, "Prompt size: short, medium or long")
      ->capture_default_str()
      ->check(CLI::IsMember({"short", "medium", "long"}));
  f->seed.add(sub, "8,16");
  return [f]() -> int {
    return guarded([&]() -> int {
      CompareCommand c;
      if (!f->direct.empty() || !f->gateway.empty()) {
        if (f->direct.empty() || f->gateway.empty())
          throw std::invalid_argument("--direct and --gateway go together");
        c.paths = seed_paths(parse_url_or_throw(f->direct, "--direct"),
                             parse_url_or_throw(f->gateway, "--gateway"));
      }
      for (const auto& p : f->paths) {
        const auto eq = p.find('=');
        const auto comma = p.rfind(',');
        if (eq == std::string::npos || comma == std::string::npos || comma < eq)
          throw std::invalid_argument(fmt::format("--path '{}': expected NAME=URL,ENDPOINT", p));
        NamedUrl n;
        n.name = p.substr(0, eq);
        n.url = parse_url_or_throw(p.substr(eq + 1, comma - eq - 1), "--path");
        auto d = parse_dialect(p.substr(comma + 1));
        if (!d)
          throw std::invalid_argument(
              fmt::format("--path '{}': endpoint must be completions, chat or responses", p));
        n.dialect = *d;
        c.paths.push_back(std::move(n));
      }
      if (c.paths.empty()) throw std::invalid_argument("give --direct and --gateway, or --path");
      c.model = f->seed.model;
      c.repeat = f->seed.repeat;
      c.levels = parse_levels(f->seed.levels);
      c.max_tokens = f->seed.max_tokens;
      c.prompt = f->prompt;
      c.client = f->seed.client();
      f->seed.tls.apply(c.client, std::any_of(c.paths.begin(), c.paths.end(),
                                              [](const NamedUrl& p) { return p.url.tls; }));
      c.out = f->seed.output();
      return bench_compare(c, std::cout);
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
    std::string a, b, threshold = "5";
    bool all = false;
  };
  auto f = std::make_shared<F>();
  sub->add_option("A", f->a, "Result before (run.json, throughput.json or compare.json)")
      ->required();
  sub->add_option("B", f->b, "Result after")->required();
  sub->add_option("--threshold", f->threshold, "Flag changes beyond this percentage")
      ->capture_default_str();
  sub->add_flag("--all", f->all, "List every metric, not only the flagged ones");
  return [f]() -> int {
    return guarded([&]() -> int {
      return bench_report(f->a, f->b, parse_percent(f->threshold, "--threshold"), f->all,
                          std::cout);
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
    Runner r = (*add)(bench);
    runners->emplace_back(bench->get_subcommands({}).back(), std::move(r));
  }
  return [runners]() -> int {
    for (auto& [sub, r] : *runners)
      if (sub->parsed()) return r();
    return 2;
  };
}

}  // namespace llmux::cli
