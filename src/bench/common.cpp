// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the `llmux bench` subcommands: formatting, request records and output files.
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"

namespace llmux::bench::detail {
namespace json = boost::json;
namespace fs = std::filesystem;

std::string ms(double seconds, int decimals) {
  return fmt_num(seconds * 1e3, decimals);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  file << text;
}

std::string error_summary(const Aggregate& aggregate) {
  if (aggregate.errors.empty()) return "0";
  std::string summary = std::to_string(aggregate.failed) + " (";
  bool first = true;
  for (const auto& [kind, count] : aggregate.errors) {
    summary += fmt::format("{}{} {}", first ? "" : ", ", count, to_string(kind));
    first = false;
  }
  return summary + ")";
}

std::string first_error(std::span<const RequestTiming> timings) {
  for (const auto& timing : timings)
    if (!timing.ok()) return fmt::format("{}: {}", to_string(timing.error), timing.error_message);
  return {};
}

json::object record_json(const Record& record, const std::string& level) {
  json::object object;
  object["level"] = level;
  object["index"] = record.index;
  object["request_id"] = record.request_id;
  object["response_id"] = record.response_id;
  object["warmup"] = record.warmup;
  object["prompt"] = record.prompt;
  if (record.turn) {
    object["user"] = record.user;
    object["turn"] = record.turn;
    object["session"] = record.session;
  }
  if (!record.group.empty()) object["group"] = record.group;
  json::object timing = to_json(record.t);
  for (auto& member : timing) object[member.key()] = member.value();
  return object;
}

json::array records_json(const std::vector<Record>& records, const std::string& level) {
  json::array array;
  for (const auto& record : records) array.push_back(record_json(record, level));
  return array;
}

std::string csv_num(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : std::string();
}

std::string figure_cell(double value, std::size_t failed, std::size_t requests, int decimals) {
  if (std::isfinite(value)) return fmt_num(value, decimals);
  if (requests > 0 && failed >= requests) return fmt::format("error (all {} failed)", requests);
  return "-";
}

Outcome outcome(std::size_t requests, std::size_t failed, std::size_t rejected,
                const std::string& kinds, const OutputOptions& out) {
  Outcome result;
  const std::size_t errors = failed - std::min(failed, rejected);
  const bool fail = errors > 0 || (rejected > 0 && out.fail_on_reject);
  result.status = fail ? 1 : 0;
  std::string what;
  if (errors)
    what = fmt::format("{} of {} requests failed{}", errors, requests,
                       kinds.empty() ? "" : fmt::format(" ({})", kinds));
  if (rejected)
    what += fmt::format("{}{} of {} rejected (429 Too Many Requests{})", what.empty() ? "" : "; ",
                        rejected, requests,
                        out.fail_on_reject ? "; --fail-on-reject"
                                           : ", not a failure without "
                                             "--fail-on-reject");
  if (what.empty()) what = fmt::format("all {} requests succeeded", requests);
  result.line = fmt::format("Result: {}: {}.", fail ? "FAILED" : "OK", what);
  return result;
}

void report_outcome(const Outcome& outcome, std::ostream& markdown, const std::string& command) {
  markdown << (outcome.status ? "**" + outcome.line + "**" : outcome.line) << "\n\n";
  if (outcome.status)
    std::fprintf(stderr, "llmux %s: error: %s\n", command.c_str(), outcome.line.c_str());
}

std::vector<Chart> distribution_charts(std::span<const TimingGroup> groups, const std::string& stem,
                                       const std::string& what) {
  Chart ttft{.name = stem + "_ttft",
             .title = "TTFT distribution " + what,
             .xlabel = "time to first token (ms)",
             .ylabel = "fraction of requests",
             .kind = ChartKind::cdf,
             .logx = false,
             .series = {}};
  Chart itl{.name = stem + "_itl",
            .title = "ITL distribution " + what,
            .xlabel = "inter-token latency (ms)",
            .ylabel = "fraction of tokens",
            .kind = ChartKind::cdf,
            .logx = false,
            .series = {}};
  Chart e2e{.name = stem + "_e2e",
            .title = "Request latency (E2E) distribution " + what,
            .xlabel = "request start to last byte (ms)",
            .ylabel = "fraction of requests",
            .kind = ChartKind::cdf,
            .logx = false,
            .series = {}};
  for (const TimingGroup& group : groups) {
    std::vector<double> ttft_ms, itl_ms, e2e_ms;
    for (const RequestTiming& timing : group.ts) {
      if (!timing.ok()) continue;
      const RequestMetrics metrics = derive(timing);
      e2e_ms.push_back(metrics.e2e_s * 1e3);
      if (metrics.ttft_s) ttft_ms.push_back(*metrics.ttft_s * 1e3);
      for (double gap_s : metrics.itl_s) itl_ms.push_back(gap_s * 1e3);
    }
    ttft.series.push_back({group.name, cdf_points(std::move(ttft_ms))});
    itl.series.push_back({group.name, cdf_points(std::move(itl_ms))});
    e2e.series.push_back({group.name, cdf_points(std::move(e2e_ms))});
  }
  return {std::move(ttft), std::move(itl), std::move(e2e)};
}

Chart tok_s_time_chart(std::span<const TimingGroup> groups, std::int64_t t0_ns,
                       const std::string& title) {
  Chart chart{
      .name = "tok_s_over_time",
      .title = title,
      .xlabel = t0_ns ? "seconds since the benchmark started" : "seconds since the level started",
      .ylabel = "output tok/s",
      .kind = ChartKind::time,
      .logx = false,
      .series = {}};
  std::int64_t first = 0, last = 0;
  for (const TimingGroup& group : groups)
    for (const RequestTiming& timing : group.ts) {
      if (!first || timing.start_ns < first) first = timing.start_ns;
      last = std::max(last, timing.end_ns);
    }
  double span = 0;
  if (t0_ns) {
    span = static_cast<double>(last - t0_ns) * 1e-9;
  } else {
    for (const TimingGroup& group : groups) {
      std::int64_t group_first = 0, group_last = 0;
      for (const RequestTiming& timing : group.ts) {
        if (!group_first || timing.start_ns < group_first) group_first = timing.start_ns;
        group_last = std::max(group_last, timing.end_ns);
      }
      span = std::max(span, static_cast<double>(group_last - group_first) * 1e-9);
    }
  }
  const double bucket = bucket_for(span);
  for (const TimingGroup& group : groups) {
    std::int64_t start = t0_ns;
    if (!start)
      for (const RequestTiming& timing : group.ts)
        if (!start || timing.start_ns < start) start = timing.start_ns;
    chart.series.push_back({group.name, tok_s_over_time(group.ts, start, bucket)});
  }
  return chart;
}

void write_outputs(const OutputOptions& out, const std::string& stem, json::object doc,
                   const std::vector<std::pair<std::string, Table>>& csv_tables, HtmlReport html,
                   std::span<const Chart> charts, std::vector<std::string>& notes) {
  if (out.out_dir.empty()) return;
  const fs::path dir(out.out_dir);
  fs::create_directories(dir);
  write_file(dir / (stem + ".json"), pretty_json(doc));
  html.files.emplace_back(stem + ".json", "the settings, the summary and every request's timings");
  std::string files = (dir / (stem + ".json")).string();
  for (const auto& [name, table] : csv_tables) {
    const std::string file_name = stem + "_" + name + ".csv";
    write_file(dir / file_name, to_csv(table));
    files += ", " + (dir / file_name).string();
    html.files.emplace_back(file_name, "CSV, units in the headers");
  }
  const ReportFiles report_files = write_report(dir.string(), std::move(html), charts, out.plots);
  notes.push_back(fmt::format("Written: {}, {}.", files, (dir / "index.html").string()));
  notes.push_back(report_files.note);
}

}  // namespace llmux::bench::detail
