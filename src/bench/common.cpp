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

std::string ms(double s, int d) {
  return fmt_num(s * 1e3, d);
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("cannot write {}", p.string()));
  f << text;
}

std::string error_summary(const Aggregate& a) {
  if (a.errors.empty()) return "0";
  std::string s = std::to_string(a.failed) + " (";
  bool first = true;
  for (const auto& [k, n] : a.errors) {
    s += fmt::format("{}{} {}", first ? "" : ", ", n, to_string(k));
    first = false;
  }
  return s + ")";
}

std::string first_error(std::span<const RequestTiming> ts) {
  for (const auto& t : ts)
    if (!t.ok()) return fmt::format("{}: {}", to_string(t.error), t.error_message);
  return {};
}

json::object record_json(const Record& r, const std::string& level) {
  json::object o;
  o["level"] = level;
  o["index"] = r.index;
  o["request_id"] = r.request_id;
  o["response_id"] = r.response_id;
  o["warmup"] = r.warmup;
  o["prompt"] = r.prompt;
  if (r.turn) {
    o["user"] = r.user;
    o["turn"] = r.turn;
    o["session"] = r.session;
  }
  json::object t = to_json(r.t);
  for (auto& kv : t) o[kv.key()] = kv.value();
  return o;
}

json::array records_json(const std::vector<Record>& rs, const std::string& level) {
  json::array a;
  for (const auto& r : rs) a.push_back(record_json(r, level));
  return a;
}

std::string csv_num(double v, int d) {
  return std::isfinite(v) ? fmt::format("{:.{}f}", v, d) : std::string();
}

std::string figure_cell(double v, std::size_t failed, std::size_t requests, int d) {
  if (std::isfinite(v)) return fmt_num(v, d);
  if (requests > 0 && failed >= requests) return fmt::format("error (all {} failed)", requests);
  return "-";
}

Outcome outcome(std::size_t requests, std::size_t failed, std::size_t rejected,
                const std::string& kinds, const OutputOptions& out) {
  Outcome o;
  const std::size_t errors = failed - std::min(failed, rejected);
  const bool fail = errors > 0 || (rejected > 0 && out.fail_on_reject);
  o.status = fail ? 1 : 0;
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
  o.line = fmt::format("Result: {}: {}.", fail ? "FAILED" : "OK", what);
  return o;
}

void report_outcome(const Outcome& o, std::ostream& md, const std::string& command) {
  md << (o.status ? "**" + o.line + "**" : o.line) << "\n\n";
  if (o.status) std::fprintf(stderr, "llmux %s: error: %s\n", command.c_str(), o.line.c_str());
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
  for (const TimingGroup& g : groups) {
    std::vector<double> t, i, e;
    for (const RequestTiming& r : g.ts) {
      if (!r.ok()) continue;
      const RequestMetrics m = derive(r);
      e.push_back(m.e2e_s * 1e3);
      if (m.ttft_s) t.push_back(*m.ttft_s * 1e3);
      for (double x : m.itl_s) i.push_back(x * 1e3);
    }
    ttft.series.push_back({g.name, cdf_points(std::move(t))});
    itl.series.push_back({g.name, cdf_points(std::move(i))});
    e2e.series.push_back({g.name, cdf_points(std::move(e))});
  }
  return {std::move(ttft), std::move(itl), std::move(e2e)};
}

Chart tok_s_time_chart(std::span<const TimingGroup> groups, std::int64_t t0_ns,
                       const std::string& title) {
  Chart c{
      .name = "tok_s_over_time",
      .title = title,
      .xlabel = t0_ns ? "seconds since the benchmark started" : "seconds since the level started",
      .ylabel = "output tok/s",
      .kind = ChartKind::time,
      .logx = false,
      .series = {}};
  std::int64_t first = 0, last = 0;
  for (const TimingGroup& g : groups)
    for (const RequestTiming& r : g.ts) {
      if (!first || r.start_ns < first) first = r.start_ns;
      last = std::max(last, r.end_ns);
    }
  double span = 0;
  if (t0_ns) {
    span = static_cast<double>(last - t0_ns) * 1e-9;
  } else {
    for (const TimingGroup& g : groups) {
      std::int64_t a = 0, b = 0;
      for (const RequestTiming& r : g.ts) {
        if (!a || r.start_ns < a) a = r.start_ns;
        b = std::max(b, r.end_ns);
      }
      span = std::max(span, static_cast<double>(b - a) * 1e-9);
    }
  }
  const double bucket = bucket_for(span);
  for (const TimingGroup& g : groups) {
    std::int64_t start = t0_ns;
    if (!start)
      for (const RequestTiming& r : g.ts)
        if (!start || r.start_ns < start) start = r.start_ns;
    c.series.push_back({g.name, tok_s_over_time(g.ts, start, bucket)});
  }
  return c;
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
  for (const auto& [name, t] : csv_tables) {
    const std::string f = stem + "_" + name + ".csv";
    write_file(dir / f, to_csv(t));
    files += ", " + (dir / f).string();
    html.files.emplace_back(f, "CSV, units in the headers");
  }
  const ReportFiles rf = write_report(dir.string(), std::move(html), charts, out.plots);
  notes.push_back(fmt::format("Written: {}, {}.", files, (dir / "index.html").string()));
  notes.push_back(rf.note);
}

}  // namespace llmux::bench::detail
