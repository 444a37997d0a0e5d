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
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/commands.hpp"
#include "bench/report.hpp"

namespace llmux::bench::detail {

inline constexpr std::string_view kVersion = "0.1.0";

// ---------------------------------------------------------------------------------------------
// Shared (common.cpp)

/// Seconds as milliseconds with `d` decimals.
std::string ms(double s, int d = 2);
/// Writes `text` to `p`; throws std::runtime_error when it cannot.
void write_file(const std::filesystem::path& p, const std::string& text);
/// "0", or the failed count by kind: "3 (2 timeout, 1 http_status)".
std::string error_summary(const Aggregate& a);
/// "kind: message" of the first failed request; "" when none failed.
std::string first_error(std::span<const RequestTiming> ts);
/// One request's record (its level, ids and timings) as a JSON object.
boost::json::object record_json(const Record& r, const std::string& level);
boost::json::array records_json(const std::vector<Record>& rs, const std::string& level);
/// With an output directory: writes <stem>.json and <stem>_<name>.csv per table, and adds a
/// "Written: ..." note.
void write_outputs(const OutputOptions& out, const std::string& stem, boost::json::object doc,
                   const std::vector<std::pair<std::string, Table>>& tables,
                   std::vector<std::string>& notes);

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

/// The conversations of `r`, whose users were to send `turns` turns each.
ConversationStats conversation_stats(const RunResult& r, std::size_t turns);
boost::json::object to_json(const ConversationStats& s);
/// Per level: users, turns sent and completed, conversations completed, not found.
Table conversation_table(const std::vector<LevelResult>& levels);

Table summary_table(const RunCommand& c, const std::vector<LevelResult>& levels);
/// Where a gateway sent the measured requests of each level (X-Llmux-Backend): requests, ok,
/// output tokens, tok/s, share, prompt tokens and the share served from the prefix cache, and
/// (conversations) the not-found answers; nullopt when no response named a backend.
std::optional<Table> backend_table(const RunCommand& c, const std::vector<LevelResult>& levels);
/// Latency distribution of one level: mean, p50, p90, p99, the extra percentiles and max.
Table detail_table(const Aggregate& a, const std::vector<double>& extra);
/// With an output directory: run.json, requests.csv, summary.csv, summary.md and (for sweeps,
/// with gnuplot) the plots; adds notes on what was written.
void write_run_files(const RunCommand& c, const std::vector<LevelResult>& levels,
                     const KneeResult& knee, const boost::json::object& ground_truth,
                     std::vector<std::string>& notes);

// ---------------------------------------------------------------------------------------------
// The seed's scripts: throughput and compare (seed.cpp)

struct Measured {
  std::vector<double> tok_s;  // per request (serial) or one aggregate
  double mean = 0;
  std::size_t prompt_tokens = 0;
  std::size_t failed = 0;
  std::string first_error;
  std::vector<Record> records;
  double wall_s = 0;
  std::uint64_t tokens = 0;
};

/// Non-streaming, temperature 0 requests of `max_tokens` to target `t`, as the seed sends them.
RunOptions seed_options(const NamedUrl& t, const std::string& model, std::uint32_t max_tokens,
                        const http::ClientOptions& client, const std::string& id);
/// `repeat` requests one after the other; tok/s = completion tokens / request time, per request.
Measured serial(const RunOptions& ro, std::string_view prompt, std::size_t repeat);
/// `n` requests started together; tok/s = all tokens / wall time until the last ends.
Measured burst(const RunOptions& ro, std::string_view prompt, std::size_t n);
/// `given`, or else the first model of the URL's /v1/models; throws std::runtime_error.
std::string resolve_model(const std::string& given, const http::Url& url);

}  // namespace llmux::bench::detail
