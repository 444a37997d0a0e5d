// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal to the `llmux bench` subcommands (src/bench/commands.hpp): the helpers their files
// share. Not part of the public API; include it only from src/bench/*.cpp.
//
//   common.cpp       formatting and output files shared by every subcommand
//   parse.cpp        parse_levels, parse_percentiles, spread (public API)
//   run.cpp          bench_run: the levels, the Markdown report, the sim ground truth
//   run_output.cpp   bench_run's tables, run.json, CSV files and gnuplot plots
//   seed.cpp         the measurements of the seed's two scripts (serial runs, bursts)
//   throughput.cpp   bench_throughput (the seed's qwen36-throughput.py)
//   compare.cpp      bench_compare and seed_paths (the seed's qwen36-gateway-vs-direct.py)
//   report_cmd.cpp   bench_report (before/after comparison of two JSON results)
#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/commands.hpp"
#include "bench/html_report.hpp"
#include "bench/report.hpp"

namespace llmux::bench::detail {

inline constexpr std::string_view kVersion = "0.1.0";

// ---------------------------------------------------------------------------------------------
// Used by several commands (common.cpp)

/// Seconds as milliseconds with `decimals` decimals.
std::string ms(double seconds, int decimals = 2);
/// Writes `text` to `path`; throws std::runtime_error when it cannot.
void write_file(const std::filesystem::path& path, const std::string& text);
/// "0", or the failed count by kind: "3 (2 timeout, 1 http_status)".
std::string error_summary(const Aggregate& aggregate);
/// "kind: message" of the first failed request; "" when none failed.
std::string first_error(std::span<const RequestTiming> timings);
/// One request's record (its level, ids and timings) as a JSON object.
boost::json::object record_json(const Record& record, const std::string& level);
boost::json::array records_json(const std::vector<Record>& records, const std::string& level);
/// A CSV cell: the number with `decimals` decimals, or empty when it is not finite (no figure).
std::string csv_num(double value, int decimals = 3);
/// A Markdown cell for a figure of `requests` requests of which `failed` failed: the number,
/// or "error (all N failed)" when there is no figure because every request failed, else "-".
std::string figure_cell(double value, std::size_t failed, std::size_t requests, int decimals = 1);

/// How a command ends: exit status 1 when a request failed (transport errors, timeouts, broken
/// streams, error statuses other than 429), or when one was rejected (429) and the options say
/// rejections fail the run; the outcome as one sentence.
struct Outcome {
  int status = 0;
  std::string line;
};
Outcome outcome(std::size_t requests, std::size_t failed, std::size_t rejected,
                const std::string& kinds, const OutputOptions& out);
/// Writes the outcome's sentence to `markdown`, and to stderr as an error when the run failed.
void report_outcome(const Outcome& outcome, std::ostream& markdown, const std::string& command);

/// Requests measured together (a level, a path, a target) and shown as one series.
struct TimingGroup {
  std::string name;
  std::vector<RequestTiming> ts;
};
/// CDF charts (ms) of TTFT, ITL and E2E with a series per group, named <stem>_ttft etc.;
/// `what` ends each title (e.g. "at N=8: server1, server2"). Charts without data are empty.
std::vector<Chart> distribution_charts(std::span<const TimingGroup> groups, const std::string& stem,
                                       const std::string& what);
/// Output tok/s over time with a series per group; x from `t0_ns`, or from each group's first
/// request start when t0_ns is 0.
Chart tok_s_time_chart(std::span<const TimingGroup> groups, std::int64_t t0_ns,
                       const std::string& title);

/// With an output directory: writes <stem>.json, <stem>_<name>.csv per table, the charts and
/// index.html (write_report), and adds notes on what was written.
void write_outputs(const OutputOptions& out, const std::string& stem, boost::json::object doc,
                   const std::vector<std::pair<std::string, Table>>& csv_tables, HtmlReport html,
                   std::span<const Chart> charts, std::vector<std::string>& notes);

// ---------------------------------------------------------------------------------------------
// bench_run's results and output files (run_output.cpp)

/// A level's conversations (bench run --conversation-turns).
struct ConversationStats {
  std::size_t users = 0;                     ///< conversations begun
  std::size_t turns_sent = 0, turns_ok = 0;  ///< measured turns (warm-up excluded)
  std::size_t not_found = 0;  ///< measured turns answered 404 "not found" (is_not_found)
  /// Conversations whose every turn was sent and succeeded (warm-up turns included).
  std::size_t completed = 0;
};

struct LevelResult {
  std::string label;  // "c8" / "r10"
  double load = 0;    // concurrency or rate
  RunResult run;
  Aggregate agg;
  ConversationStats conv;  // with --conversation-turns
};

/// The conversations of `run`, whose users were to send `turns` turns each.
ConversationStats conversation_stats(const RunResult& run, std::size_t turns);
boost::json::object to_json(const ConversationStats& stats);
/// Per level: users, turns sent and completed, conversations completed, not found.
Table conversation_table(const std::vector<LevelResult>& levels);

Table summary_table(const RunCommand& command, const std::vector<LevelResult>& levels);
/// Where a gateway sent the measured requests of each level (X-Llmux-Backend): requests, ok,
/// output tokens, tok/s, share, prompt tokens and the share served from the prefix cache, and
/// (conversations) the not-found answers; nullopt when no response named a backend.
std::optional<Table> backend_table(const RunCommand& command,
                                   const std::vector<LevelResult>& levels);
/// Latency distribution of one level: mean, p50, p90, p99, the extra percentiles and max.
Table detail_table(const Aggregate& aggregate, const std::vector<double>& extra);
/// With an output directory: run.json, requests.csv, summary.csv, summary.md, the charts and
/// index.html (`html` completed with the files and charts; `where` names the target in the
/// charts' titles); adds notes on what was written. `groups`: run.json's "tenants" (with
/// --tenant) and "mix" (with --mix), added to its top level as they are (empty: none).
void write_run_files(const RunCommand& command, const std::vector<LevelResult>& levels,
                     const KneeResult& knee, const boost::json::object& ground_truth,
                     const boost::json::object& groups, HtmlReport html, const std::string& where,
                     std::vector<std::string>& notes);

// ---------------------------------------------------------------------------------------------
// The seed's scripts: throughput and compare (seed.cpp)

struct Measured {
  std::vector<double> tok_s;  // per request (serial) or one aggregate
  double mean = 0;            // NaN when no request succeeded
  std::size_t prompt_tokens = 0;
  std::size_t requests = 0, failed = 0, rejected = 0;
  Aggregate agg;  // the measured requests' figures (E2E latencies, errors by kind)
  std::string first_error;
  std::vector<Record> records;
  double wall_s = 0;
  std::uint64_t tokens = 0;
};

/// Non-streaming, temperature 0 requests of `max_tokens` to `target`, as the seed sends them.
RunOptions seed_options(const NamedUrl& target, const std::string& model, std::uint32_t max_tokens,
                        const http::ClientOptions& client, const std::string& id);
/// Sums the requests, failures and rejections of measurements, with the errors by kind.
struct Tally {
  std::size_t requests = 0, failed = 0, rejected = 0;
  std::map<ErrorKind, std::size_t> errors;
  void add(const Measured& measured);
  std::string kinds() const;  ///< "2 timeout, 1 http_status"
};
/// The progress label of step `step` of `steps`: "[3/10] server1 serial long".
std::string step_label(const std::string& command, std::size_t step, std::size_t steps,
                       const std::string& what);
/// `repeat` requests one after the other; tok/s = completion tokens / request time, per request.
Measured serial(const RunOptions& options, std::string_view prompt, std::size_t repeat);
/// `count` requests started together; tok/s = all tokens / wall time until the last ends.
Measured burst(const RunOptions& options, std::string_view prompt, std::size_t count);
// ---------------------------------------------------------------------------------------------
// bench compare: a gateway path against the direct path of the same endpoint
// (compare_gateway.cpp)

/// What a path measured: the serial run and each burst level.
struct PathMeasured {
  Measured serial;
  std::map<std::size_t, Measured> levels;
};

/// One gateway path at one level against the direct path. The tok/s ratio compares the same
/// level; when the gateway spread a burst over several machines (X-Llmux-Backend), the ratio is
/// scale-out, not overhead, and the added latency compares each machine's share with the direct
/// path's level of that size (when it was measured); serially it is always overhead.
struct GatewayRow {
  std::string path, baseline;  ///< the gateway path and the direct path it is compared with
  std::size_t level = 0;       ///< 0 = serial, else N requests started together
  std::map<std::string, std::size_t> backends;  ///< measured requests per X-Llmux-Backend
  bool scale_out = false;
  double tok_s_ratio = 0;                     ///< gateway / direct tok/s, same level (NaN: none)
  double added_p50_ms = 0, added_p99_ms = 0;  ///< gateway E2E - direct E2E (NaN: not compared)
  std::optional<std::size_t> latency_level;   ///< direct level compared with (0 = serial)
  double per_machine = 0;  ///< scale-out: gateway tok/s / (machines x direct tok/s at the share)
  std::string reading;     ///< one sentence: overhead or scale-out, and against what
};
GatewayRow gateway_row(const std::string& path, const std::string& baseline,
                       const PathMeasured& gateway, const PathMeasured& direct, std::size_t level);
/// "server1 4, server2 4"; "unknown" when no response named a backend.
std::string backends_cell(const std::map<std::string, std::size_t>& backends);

/// `given`, or else the first model of the URL's /v1/models; throws std::runtime_error.
std::string resolve_model(const std::string& given, const http::Url& url,
                          const http::ClientOptions& client);

}  // namespace llmux::bench::detail
