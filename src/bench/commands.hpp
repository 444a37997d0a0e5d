// SPDX-License-Identifier: Apache-2.0
#pragma once
// The `llmux bench` subcommands behind the CLI: run (the general engine, with sweeps), throughput
// (the seed's qwen36-throughput.py), compare (the seed's qwen36-gateway-vs-direct.py) and report
// (before/after comparison of two JSON results). Each prints a Markdown report on `markdown` (ready
// to paste) and, with an output directory, writes JSON, CSV and (for sweeps, with gnuplot) PNG
// plots.
//
// Thread safety: each function blocks the calling thread and shares nothing with other calls.
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bench/driver.hpp"
#include "bench/knee.hpp"
#include "bench/stats.hpp"

namespace llmux::bench {

struct OutputOptions {
  std::string out_dir;              ///< "" = Markdown on stdout only
  std::vector<double> percentiles;  ///< besides p50/p90/p95/p99
  bool progress = false;            ///< progress line on stderr (the CLI: only on a terminal)
  bool plots = true;                ///< SVG and PNG charts when gnuplot is on PATH
  bool fail_on_reject = false;      ///< a 429 (rejection) fails the run like an error
};

/// One target of a fixed split: `clients` of the closed loop's clients send straight to `url`.
struct SplitTarget {
  std::string name;  ///< as given (the URL), the `backend` of its requests
  http::Url url;
  std::size_t clients = 1;
};

/// Clients of `bench run` that run beside other such groups, each a closed loop of its own with
/// its own workload (bench/groups.hpp): a tenant (`--tenant NAME:CLIENTS[:PRIORITY[:WORKLOAD]]`,
/// bench/tenants.hpp), sending X-Llmux-Tenant and X-Llmux-Priority; or a class of a workload mix
/// (`--mix NAME:CLIENTS:WORKLOAD`, bench/mix.hpp), sending no header of its own.
struct ClientGroup {
  enum class Kind { tenant, mix };
  Kind kind = Kind::tenant;
  std::string name;
  std::size_t clients = 1;
  std::string priority;  // sent as X-Llmux-Priority; "" none
  /// Its prompt tokens and max_tokens: one length (N: the run's --input-spread/--output-spread
  /// apply around it) or bounds (MIN-MAX: drawn uniformly); empty: the run's workload.
  TokenRange input, output;
  std::vector<PromptItem> prompts;  // its prompts; empty: the run's
};

struct RunCommand {
  RunOptions run;
  /// Tenants and mix classes (closed loop, one level): each its own clients, headers and
  /// workload, all at once; empty = none.
  std::vector<ClientGroup> groups;
  /// A fixed split (closed loop, one level): the clients divided over these targets, each with
  /// its own connections, all at once; empty = every request to run.url.
  std::vector<SplitTarget> split;
  LoadSpec load;
  std::vector<std::size_t> sweep;  ///< concurrency levels; empty = one run at load.concurrency
  KneeOptions knee;
  Slo slo;
  OutputOptions out;
  std::vector<PromptItem> prompts;
  std::string workload_desc;        ///< e.g. "synthetic 256 in / 128 out" or "dataset x.jsonl"
  std::size_t shared_prefixes = 0;  ///< --shared-prefix: distinct system prompts (0 = none)
  std::size_t prefix_tokens = 0;    ///< --prefix-len: tokens of each
  bool sim_ground_truth = false;    ///< compare timings with llmux sim's /debug/requests
};
int bench_run(const RunCommand& cmd, std::ostream& markdown);

struct NamedUrl {
  std::string name;
  http::Url url;
  Dialect dialect = Dialect::completions;
};

struct ThroughputCommand {
  std::vector<NamedUrl> targets;
  std::string model;  ///< "" = ask each target's /v1/models
  std::size_t repeat = 3;
  std::vector<std::size_t> levels{4, 8};
  std::uint32_t max_tokens = 128;
  double agree = 0.02;
  http::ClientOptions client{.mode = http::ConnectionMode::fresh, .timeouts = {}};
  OutputOptions out;
};
int bench_throughput(const ThroughputCommand& cmd, std::ostream& markdown);

struct CompareCommand {
  std::vector<NamedUrl> paths;
  std::string model;
  std::size_t repeat = 3;
  std::vector<std::size_t> levels{8, 16};
  std::uint32_t max_tokens = 128;
  std::string prompt = "medium";
  http::ClientOptions client{.mode = http::ConnectionMode::fresh, .timeouts = {}};
  OutputOptions out;
};
/// The seed's four paths from a direct and a gateway URL.
std::vector<NamedUrl> seed_paths(const http::Url& direct, const http::Url& gateway);
int bench_compare(const CompareCommand& cmd, std::ostream& markdown);

/// Compares the "summary" of two result files; returns 0, or 1 when a change is flagged.
int bench_report(const std::string& a_path, const std::string& b_path, double threshold,
                 bool show_all, std::ostream& markdown);

/// Spread of values as the seed judges agreement: (max - min) / max; 0 for fewer than 2.
double spread(const std::vector<double>& values);

/// "4,8,16" -> {4, 8, 16}; throws std::invalid_argument on a bad or non-positive item.
std::vector<std::size_t> parse_levels(const std::string& list);
/// "1,2,4..64": powers of two from 1 to 64 are also accepted as "1..64".
std::vector<double> parse_percentiles(const std::string& list);

}  // namespace llmux::bench
