// SPDX-License-Identifier: Apache-2.0
// bench_run's tables and output files: run.json (settings and every request), requests.csv,
// summary.csv, summary.md, index.html and the charts (SVG and PNG, with gnuplot on PATH).
#include <boost/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"
#include "core/clock.hpp"

namespace llmux::bench::detail {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

json::object settings_json(const RunCommand& c) {
  json::object s;
  s["url"] = c.run.url.str();
  s["endpoint"] = endpoint_path(c.run.body.dialect);
  s["model"] = c.run.body.model;
  s["stream"] = c.run.body.stream;
  s["include_usage"] = c.run.body.include_usage;
  if (c.run.body.temperature) s["temperature"] = *c.run.body.temperature;
  s["ignore_eos"] = c.run.body.ignore_eos;
  s["connection"] = to_string(c.run.client.mode);
  s["mode"] = c.load.mode == LoadSpec::Mode::open ? "open" : "closed";
  s["concurrency"] = c.load.concurrency;
  s["request_rate"] = c.load.request_rate;
  s["num_requests"] = c.load.num_requests;
  s["duration_s"] = c.load.duration_s;
  s["warmup_requests"] = c.load.warmup_requests;
  s["warmup_s"] = c.load.warmup_s;
  s["sweep"] = json::value_from(c.sweep);
  s["workload"] = c.workload_desc;
  s["prompts"] = c.prompts.size();
  s["shared_prefixes"] = c.shared_prefixes;
  s["prefix_tokens"] = c.prefix_tokens;
  const ConversationSpec& cs = c.run.conversation;
  if (cs.enabled()) {
    s["conversation_turns"] = cs.turns;
    s["conversation_mode"] = to_string(cs.mode);
    s["conversation_key_prefix"] = cs.key_prefix;
  } else {
    s["conversation_turns"] = 0;
  }
  s["timeout_idle_ms"] = c.run.client.timeouts.idle.count();
  s["timeout_total_ms"] = c.run.client.timeouts.total.count();
  json::object slo;
  if (c.slo.ttft_s) slo["ttft_ms"] = *c.slo.ttft_s * 1e3;
  if (c.slo.tpot_s) slo["tpot_ms"] = *c.slo.tpot_s * 1e3;
  if (c.slo.e2e_s) slo["e2e_ms"] = *c.slo.e2e_s * 1e3;
  s["slo"] = std::move(slo);
  s["percentiles"] = json::value_from(c.out.percentiles);
  return s;
}

std::vector<std::string> request_csv_header() {
  return {"level",         "index",         "request_id",
          "response_id",   "warmup",        "ok",
          "error",         "http_status",   "start_ns",
          "ttfb_ms",       "ttft_ms",       "tpot_ms",
          "e2e_ms",        "output_tokens", "output_tokens_estimated",
          "prompt_tokens", "cached_tokens", "user",
          "turn",          "token_events",  "backend"};
}

std::string opt_ms(const std::optional<double>& v) {
  return v ? fmt::format("{:.3f}", *v * 1e3) : "";
}

std::string request_csv_row(const Record& r, const std::string& level) {
  const RequestMetrics m = derive(r.t);
  std::vector<std::string> f{level,
                             std::to_string(r.index),
                             r.request_id,
                             r.response_id,
                             r.warmup ? "1" : "0",
                             r.t.ok() ? "1" : "0",
                             std::string(to_string(r.t.error)),
                             std::to_string(r.t.http_status),
                             std::to_string(r.t.start_ns),
                             opt_ms(m.ttfb_s),
                             opt_ms(m.ttft_s),
                             opt_ms(m.tpot_s),
                             fmt::format("{:.3f}", m.e2e_s * 1e3),
                             std::to_string(m.output_tokens),
                             m.output_tokens_estimated ? "1" : "0",
                             r.t.prompt_tokens ? std::to_string(*r.t.prompt_tokens) : "",
                             r.t.cached_tokens ? std::to_string(*r.t.cached_tokens) : "",
                             r.turn ? std::to_string(r.user) : "",
                             r.turn ? std::to_string(r.turn) : "",
                             std::to_string(r.t.events.size()),
                             r.t.backend};
  return csv_record(f);
}

std::string load_cell(const RunCommand& c, const LevelResult& l) {
  if (c.load.mode == LoadSpec::Mode::open) return fmt::format("{:g} req/s", l.load);
  return fmt::format("{:g}", l.load);
}

/// summary.csv: numbers only, units in the headers (empty where there is no figure).
Table summary_csv(const RunCommand& c, const std::vector<LevelResult>& levels) {
  const bool open = c.load.mode == LoadSpec::Mode::open;
  std::vector<std::string> h{open ? "rate_req_s" : "concurrency",
                             "requests",
                             "ok",
                             "failed",
                             "rejected",
                             "req_s",
                             "output_tok_s",
                             "per_stream_tok_s_p50",
                             "ttft_p50_ms",
                             "ttft_p99_ms",
                             "itl_p50_ms",
                             "itl_p99_ms",
                             "tpot_p50_ms",
                             "e2e_p50_ms",
                             "e2e_p99_ms",
                             "cached_prompt_tokens",
                             "cached_pct"};
  if (!c.slo.empty()) h.push_back("goodput_req_s");
  Table t(h);
  for (const auto& l : levels) {
    const Aggregate& a = l.agg;
    std::vector<std::string> row{fmt::format("{:g}", l.load),
                                 std::to_string(a.requests),
                                 std::to_string(a.ok),
                                 std::to_string(a.failed),
                                 std::to_string(a.rejected),
                                 csv_num(a.requests_per_s),
                                 csv_num(a.ok ? a.output_tok_s : NAN),
                                 csv_num(a.decode_tok_s.p50),
                                 csv_num(a.ttft.p50 * 1e3),
                                 csv_num(a.ttft.p99 * 1e3),
                                 csv_num(a.itl.p50 * 1e3),
                                 csv_num(a.itl.p99 * 1e3),
                                 csv_num(a.tpot.p50 * 1e3),
                                 csv_num(a.e2e.p50 * 1e3),
                                 csv_num(a.e2e.p99 * 1e3),
                                 std::to_string(a.cached_tokens),
                                 csv_num(a.cached_share * 100)};
    if (!c.slo.empty()) row.push_back(csv_num(a.goodput_req_s));
    t.add_row(row);
  }
  return t;
}

std::vector<Chart> run_charts(const RunCommand& c, const std::vector<LevelResult>& levels,
                              const std::string& where) {
  const bool open = c.load.mode == LoadSpec::Mode::open;
  std::vector<Chart> charts;
  Chart scale{
      .name = "tok_s_vs_concurrency",
      .title = fmt::format("Output tok/s vs {}\n{}", open ? "request rate" : "concurrency", where),
      .xlabel = open ? "request rate (req/s)" : "concurrency",
      .ylabel = "output tok/s",
      .kind = ChartKind::lines,
      .logx = !open,
      .series = {}};
  ChartSeries cs{where, {}};
  std::vector<TimingGroup> groups;
  for (const auto& l : levels) {
    if (l.agg.ok) cs.points.emplace_back(l.load, l.agg.output_tok_s);
    groups.push_back({open ? fmt::format("{:g} req/s", l.load) : fmt::format("N={:g}", l.load),
                      l.run.measured()});
  }
  scale.series.push_back(std::move(cs));
  charts.push_back(std::move(scale));
  for (auto& ch : distribution_charts(groups, "latency", "per level\n" + where))
    charts.push_back(std::move(ch));
  charts.push_back(tok_s_time_chart(groups, 0, "Output tok/s over time, per level\n" + where));
  return charts;
}

}  // namespace

Table summary_table(const RunCommand& c, const std::vector<LevelResult>& levels) {
  std::vector<std::string> h{c.load.mode == LoadSpec::Mode::open ? "Rate" : "Concurrency",
                             "Requests",
                             "Errors",
                             "req/s",
                             "Output tok/s",
                             "Per-stream tok/s p50",
                             "TTFT p50 ms",
                             "TTFT p99 ms",
                             "ITL p50 ms",
                             "ITL p99 ms",
                             "TPOT p50 ms",
                             "E2E p50 ms",
                             "Cached prompt tokens",
                             "Cached %"};
  if (!c.slo.empty()) h.push_back("Goodput req/s");
  Table t(h);
  for (const auto& l : levels) {
    const Aggregate& a = l.agg;
    std::vector<std::string> row{load_cell(c, l),
                                 std::to_string(a.requests),
                                 error_summary(a),
                                 fmt_num(a.requests_per_s, 2),
                                 figure_cell(a.ok ? a.output_tok_s : NAN, a.failed, a.requests),
                                 fmt_num(a.decode_tok_s.p50, 1),
                                 ms(a.ttft.p50),
                                 ms(a.ttft.p99),
                                 ms(a.itl.p50),
                                 ms(a.itl.p99),
                                 ms(a.tpot.p50),
                                 ms(a.e2e.p50),
                                 std::to_string(a.cached_tokens),
                                 fmt_num(a.cached_share * 100, 1)};
    if (!c.slo.empty()) row.push_back(fmt_num(a.goodput_req_s, 2));
    t.add_row(row);
  }
  return t;
}

std::optional<Table> backend_table(const RunCommand& c, const std::vector<LevelResult>& levels) {
  const bool conv = c.run.conversation.enabled();
  std::vector<std::string> h{"Level",
                             "Backend",
                             "Requests",
                             "OK",
                             "Output tokens",
                             "tok/s",
                             "Share of tokens",
                             "Prompt tokens",
                             "Cached prompt tokens",
                             "Cached %"};
  if (conv) h.push_back("Not found");
  Table t(h);
  bool any = false;
  for (const auto& l : levels) {
    struct Row {
      std::size_t requests = 0, ok = 0, not_found = 0, cached_reported = 0;
      std::uint64_t tokens = 0, prompt = 0, cached = 0;
    };
    std::map<std::string, Row> rows;
    std::uint64_t total = 0;
    for (const Record& r : l.run.records) {
      if (r.warmup) continue;
      any = any || !r.t.backend.empty();
      Row& row = rows[r.t.backend.empty() ? "(none)" : r.t.backend];
      ++row.requests;
      if (!r.t.ok()) {
        row.not_found += is_not_found(r.t);
        continue;
      }
      ++row.ok;
      const std::uint64_t n = derive(r.t).output_tokens;
      row.tokens += n;
      total += n;
      row.prompt += r.t.prompt_tokens.value_or(0);
      if (r.t.cached_tokens) {
        row.cached += *r.t.cached_tokens;
        ++row.cached_reported;
      }
    }
    for (const auto& [name, row] : rows) {
      const double cached_pct =
          row.cached_reported && row.prompt
              ? 100.0 * static_cast<double>(row.cached) / static_cast<double>(row.prompt)
              : NAN;
      std::vector<std::string> cells{
          l.label,
          name,
          std::to_string(row.requests),
          std::to_string(row.ok),
          std::to_string(row.tokens),
          fmt_num(l.run.wall_s > 0 ? static_cast<double>(row.tokens) / l.run.wall_s : 0, 1),
          total ? fmt::format("{:.1f}%",
                              100.0 * static_cast<double>(row.tokens) / static_cast<double>(total))
                : "-",
          std::to_string(row.prompt),
          std::to_string(row.cached),
          fmt_num(cached_pct, 1)};
      if (conv) cells.push_back(std::to_string(row.not_found));
      t.add_row(cells);
    }
  }
  if (!any) return std::nullopt;
  return t;
}

ConversationStats conversation_stats(const RunResult& r, std::size_t turns) {
  ConversationStats s;
  struct Conv {
    std::size_t sent = 0, ok = 0;
  };
  std::map<std::string, Conv> convs;
  for (const Record& rec : r.records) {
    if (rec.turn == 0) continue;
    Conv& cv = convs[rec.session];
    ++cv.sent;
    cv.ok += rec.t.ok();
    if (rec.warmup) continue;
    ++s.turns_sent;
    s.turns_ok += rec.t.ok();
    s.not_found += !rec.t.ok() && is_not_found(rec.t);
  }
  s.users = convs.size();
  for (const auto& [key, cv] : convs) s.completed += cv.sent == turns && cv.ok == turns;
  return s;
}

json::object to_json(const ConversationStats& s) {
  json::object o;
  o["users"] = s.users;
  o["turns_sent"] = s.turns_sent;
  o["turns_completed"] = s.turns_ok;
  o["conversations_completed"] = s.completed;
  o["not_found"] = s.not_found;
  return o;
}

Table conversation_table(const std::vector<LevelResult>& levels) {
  Table t(
      {"Level", "Users", "Turns sent", "Turns completed", "Conversations completed", "Not found"});
  for (const auto& l : levels)
    t.add_row({l.label, std::to_string(l.conv.users), std::to_string(l.conv.turns_sent),
               std::to_string(l.conv.turns_ok), std::to_string(l.conv.completed),
               std::to_string(l.conv.not_found)});
  return t;
}

Table detail_table(const Aggregate& a, const std::vector<double>& extra) {
  std::vector<std::string> h{"Metric", "mean", "p50", "p90", "p99"};
  for (double p : extra) h.push_back(fmt::format("p{:g}", p));
  h.push_back("max");
  Table t(h);
  auto row = [&](const std::string& name, const Summary& s, double scale, int d) {
    std::vector<std::string> r{name, fmt_num(s.mean * scale, d), fmt_num(s.p50 * scale, d),
                               fmt_num(s.p90 * scale, d), fmt_num(s.p99 * scale, d)};
    for (double p : extra) r.push_back(fmt_num(s.at(p).value_or(NAN) * scale, d));
    r.push_back(fmt_num(s.max * scale, d));
    t.add_row(r);
  };
  row("TTFB (ms)", a.ttfb, 1e3, 2);
  row("TTFT (ms)", a.ttft, 1e3, 2);
  row("TPOT (ms)", a.tpot, 1e3, 2);
  row("ITL (ms)", a.itl, 1e3, 2);
  row("E2E (ms)", a.e2e, 1e3, 1);
  row("Per-stream decode tok/s", a.decode_tok_s, 1, 1);
  return t;
}

void write_run_files(const RunCommand& c, const std::vector<LevelResult>& levels,
                     const KneeResult& knee, const json::object& gt_json, HtmlReport html,
                     const std::string& where, std::vector<std::string>& notes) {
  if (c.out.out_dir.empty()) return;
  const fs::path dir(c.out.out_dir);
  fs::create_directories(dir);
  json::object doc;
  doc["tool"] = "llmux bench run";
  doc["version"] = kVersion;
  doc["created_unix"] = unix_seconds();
  doc["settings"] = settings_json(c);
  const bool conv = c.run.conversation.enabled();
  json::object summary;
  for (const auto& l : levels) {
    json::object o = to_json(l.agg);
    if (conv) o["conversation"] = to_json(l.conv);
    summary[l.label] = std::move(o);
  }
  doc["summary"] = std::move(summary);
  if (levels.size() > 1) {
    json::object k;
    k["saturated"] = knee.saturated;
    k["knee_load"] = knee.saturated ? json::value(knee.knee_concurrency) : json::value(nullptr);
    k["knee_tok_s"] = knee.saturated ? json_number(knee.knee_tok_s) : json::value(nullptr);
    k["efficiency"] = json::value_from(knee.efficiency);
    doc["knee"] = std::move(k);
  }
  if (c.sim_ground_truth) doc["ground_truth"] = gt_json;
  json::array lv;
  std::string csv = csv_record(request_csv_header());
  for (const auto& l : levels) {
    json::object o;
    o["label"] = l.label;
    o["load"] = l.load;
    o["connections"] = l.run.connections;
    o["max_in_flight"] = l.run.max_in_flight;
    o["aggregate"] = to_json(l.agg);
    if (conv) o["conversation"] = to_json(l.conv);
    json::array reqs;
    for (const auto& r : l.run.records) {
      reqs.push_back(record_json(r, l.label));
      csv += request_csv_row(r, l.label);
    }
    o["requests"] = std::move(reqs);
    lv.push_back(std::move(o));
  }
  doc["levels"] = std::move(lv);
  write_file(dir / "run.json", pretty_json(doc));
  write_file(dir / "requests.csv", csv);
  write_file(dir / "summary.csv", to_csv(summary_csv(c, levels)));
  write_file(dir / "summary.md", to_markdown(summary_table(c, levels)));
  html.files.emplace_back("run.json", "the settings, the summary and every request's timings");
  html.files.emplace_back("requests.csv", "one row per request, units in the headers");
  html.files.emplace_back("summary.csv", "one row per level, units in the headers");
  const std::vector<Chart> charts = run_charts(c, levels, where);
  const ReportFiles rf = write_report(dir.string(), std::move(html), charts, c.out.plots);
  notes.push_back(
      fmt::format("Written: {0}/run.json (settings and every request's timings), "
                  "{0}/requests.csv, {0}/summary.csv, {0}/index.html.",
                  dir.string()));
  notes.push_back(rf.note);
}

}  // namespace llmux::bench::detail
