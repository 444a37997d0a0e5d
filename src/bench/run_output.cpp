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

json::object settings_json(const RunCommand& command) {
  json::object settings;
  settings["url"] = command.run.url.str();
  settings["endpoint"] = endpoint_path(command.run.body.dialect);
  settings["model"] = command.run.body.model;
  settings["stream"] = command.run.body.stream;
  settings["include_usage"] = command.run.body.include_usage;
  if (command.run.body.temperature) settings["temperature"] = *command.run.body.temperature;
  settings["ignore_eos"] = command.run.body.ignore_eos;
  settings["connection"] = to_string(command.run.client.mode);
  settings["mode"] = command.load.mode == LoadSpec::Mode::open ? "open" : "closed";
  settings["concurrency"] = command.load.concurrency;
  settings["request_rate"] = command.load.request_rate;
  settings["num_requests"] = command.load.num_requests;
  settings["duration_s"] = command.load.duration_s;
  settings["warmup_requests"] = command.load.warmup_requests;
  settings["warmup_s"] = command.load.warmup_s;
  settings["sweep"] = json::value_from(command.sweep);
  settings["workload"] = command.workload_desc;
  settings["prompts"] = command.prompts.size();
  settings["shared_prefixes"] = command.shared_prefixes;
  settings["prefix_tokens"] = command.prefix_tokens;
  const ConversationSpec& conversation = command.run.conversation;
  if (conversation.enabled()) {
    settings["conversation_turns"] = conversation.turns;
    settings["conversation_mode"] = to_string(conversation.mode);
    settings["conversation_key_prefix"] = conversation.key_prefix;
  } else {
    settings["conversation_turns"] = 0;
  }
  json::array groups;
  for (const ClientGroup& group : command.groups)
    groups.push_back({{"name", group.name},
                      {"kind", group.kind == ClientGroup::Kind::tenant ? "tenant" : "mix"},
                      {"clients", group.clients},
                      {"priority", group.priority},
                      {"input_min", group.input.min},
                      {"input_max", group.input.max},
                      {"output_min", group.output.min},
                      {"output_max", group.output.max},
                      {"prompts", group.prompts.size()}});
  if (!groups.empty()) settings["groups"] = std::move(groups);
  settings["timeout_idle_ms"] = command.run.client.timeouts.idle.count();
  settings["timeout_total_ms"] = command.run.client.timeouts.total.count();
  json::object slo;
  if (command.slo.ttft_s) slo["ttft_ms"] = *command.slo.ttft_s * 1e3;
  if (command.slo.tpot_s) slo["tpot_ms"] = *command.slo.tpot_s * 1e3;
  if (command.slo.e2e_s) slo["e2e_ms"] = *command.slo.e2e_s * 1e3;
  settings["slo"] = std::move(slo);
  settings["percentiles"] = json::value_from(command.out.percentiles);
  return settings;
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

std::string opt_ms(const std::optional<double>& seconds) {
  return seconds ? fmt::format("{:.3f}", *seconds * 1e3) : "";
}

std::string request_csv_row(const Record& record, const std::string& level) {
  const RequestMetrics metrics = derive(record.t);
  std::vector<std::string> fields{
      level,
      std::to_string(record.index),
      record.request_id,
      record.response_id,
      record.warmup ? "1" : "0",
      record.t.ok() ? "1" : "0",
      std::string(to_string(record.t.error)),
      std::to_string(record.t.http_status),
      std::to_string(record.t.start_ns),
      opt_ms(metrics.ttfb_s),
      opt_ms(metrics.ttft_s),
      opt_ms(metrics.tpot_s),
      fmt::format("{:.3f}", metrics.e2e_s * 1e3),
      std::to_string(metrics.output_tokens),
      metrics.output_tokens_estimated ? "1" : "0",
      record.t.prompt_tokens ? std::to_string(*record.t.prompt_tokens) : "",
      record.t.cached_tokens ? std::to_string(*record.t.cached_tokens) : "",
      record.turn ? std::to_string(record.user) : "",
      record.turn ? std::to_string(record.turn) : "",
      std::to_string(record.t.events.size()),
      record.t.backend};
  return csv_record(fields);
}

std::string load_cell(const RunCommand& command, const LevelResult& level) {
  if (command.load.mode == LoadSpec::Mode::open) return fmt::format("{:g} req/s", level.load);
  return fmt::format("{:g}", level.load);
}

/// summary.csv: numbers only, units in the headers (empty where there is no figure).
Table summary_csv(const RunCommand& command, const std::vector<LevelResult>& levels) {
  const bool open = command.load.mode == LoadSpec::Mode::open;
  std::vector<std::string> header{open ? "rate_req_s" : "concurrency",
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
  if (!command.slo.empty()) header.push_back("goodput_req_s");
  Table table(header);
  for (const auto& level : levels) {
    const Aggregate& aggregate = level.agg;
    std::vector<std::string> row{fmt::format("{:g}", level.load),
                                 std::to_string(aggregate.requests),
                                 std::to_string(aggregate.ok),
                                 std::to_string(aggregate.failed),
                                 std::to_string(aggregate.rejected),
                                 csv_num(aggregate.requests_per_s),
                                 csv_num(aggregate.ok ? aggregate.output_tok_s : NAN),
                                 csv_num(aggregate.decode_tok_s.p50),
                                 csv_num(aggregate.ttft.p50 * 1e3),
                                 csv_num(aggregate.ttft.p99 * 1e3),
                                 csv_num(aggregate.itl.p50 * 1e3),
                                 csv_num(aggregate.itl.p99 * 1e3),
                                 csv_num(aggregate.tpot.p50 * 1e3),
                                 csv_num(aggregate.e2e.p50 * 1e3),
                                 csv_num(aggregate.e2e.p99 * 1e3),
                                 std::to_string(aggregate.cached_tokens),
                                 csv_num(aggregate.cached_share * 100)};
    if (!command.slo.empty()) row.push_back(csv_num(aggregate.goodput_req_s));
    table.add_row(row);
  }
  return table;
}

std::vector<Chart> run_charts(const RunCommand& command, const std::vector<LevelResult>& levels,
                              const std::string& where) {
  const bool open = command.load.mode == LoadSpec::Mode::open;
  std::vector<Chart> charts;
  Chart scale{
      .name = "tok_s_vs_concurrency",
      .title = fmt::format("Output tok/s vs {}\n{}", open ? "request rate" : "concurrency", where),
      .xlabel = open ? "request rate (req/s)" : "concurrency",
      .ylabel = "output tok/s",
      .kind = ChartKind::lines,
      .logx = !open,
      .series = {}};
  ChartSeries series{where, {}};
  std::vector<TimingGroup> groups;
  for (const auto& level : levels) {
    if (level.agg.ok) series.points.emplace_back(level.load, level.agg.output_tok_s);
    groups.push_back(
        {open ? fmt::format("{:g} req/s", level.load) : fmt::format("N={:g}", level.load),
         level.run.measured()});
  }
  scale.series.push_back(std::move(series));
  charts.push_back(std::move(scale));
  for (auto& chart : distribution_charts(groups, "latency", "per level\n" + where))
    charts.push_back(std::move(chart));
  charts.push_back(tok_s_time_chart(groups, 0, "Output tok/s over time, per level\n" + where));
  return charts;
}

}  // namespace

Table summary_table(const RunCommand& command, const std::vector<LevelResult>& levels) {
  std::vector<std::string> header{
      command.load.mode == LoadSpec::Mode::open ? "Rate" : "Concurrency",
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
  if (!command.slo.empty()) header.push_back("Goodput req/s");
  Table table(header);
  for (const auto& level : levels) {
    const Aggregate& aggregate = level.agg;
    std::vector<std::string> row{load_cell(command, level),
                                 std::to_string(aggregate.requests),
                                 error_summary(aggregate),
                                 fmt_num(aggregate.requests_per_s, 2),
                                 figure_cell(aggregate.ok ? aggregate.output_tok_s : NAN,
                                             aggregate.failed, aggregate.requests),
                                 fmt_num(aggregate.decode_tok_s.p50, 1),
                                 ms(aggregate.ttft.p50),
                                 ms(aggregate.ttft.p99),
                                 ms(aggregate.itl.p50),
                                 ms(aggregate.itl.p99),
                                 ms(aggregate.tpot.p50),
                                 ms(aggregate.e2e.p50),
                                 std::to_string(aggregate.cached_tokens),
                                 fmt_num(aggregate.cached_share * 100, 1)};
    if (!command.slo.empty()) row.push_back(fmt_num(aggregate.goodput_req_s, 2));
    table.add_row(row);
  }
  return table;
}

std::optional<Table> backend_table(const RunCommand& command,
                                   const std::vector<LevelResult>& levels) {
  const bool conv = command.run.conversation.enabled();
  std::vector<std::string> header{"Level",
                                  "Backend",
                                  "Requests",
                                  "OK",
                                  "Output tokens",
                                  "tok/s",
                                  "Share of tokens",
                                  "Prompt tokens",
                                  "Cached prompt tokens",
                                  "Cached %"};
  if (conv) header.push_back("Not found");
  Table table(header);
  bool any = false;
  for (const auto& level : levels) {
    struct Row {
      std::size_t requests = 0, ok = 0, not_found = 0, cached_reported = 0;
      std::uint64_t tokens = 0, prompt = 0, cached = 0;
    };
    std::map<std::string, Row> rows;
    std::uint64_t total = 0;
    for (const Record& record : level.run.records) {
      if (record.warmup) continue;
      any = any || !record.t.backend.empty();
      Row& row = rows[record.t.backend.empty() ? "(none)" : record.t.backend];
      ++row.requests;
      if (!record.t.ok()) {
        row.not_found += is_not_found(record.t);
        continue;
      }
      ++row.ok;
      const std::uint64_t tokens = derive(record.t).output_tokens;
      row.tokens += tokens;
      total += tokens;
      row.prompt += record.t.prompt_tokens.value_or(0);
      if (record.t.cached_tokens) {
        row.cached += *record.t.cached_tokens;
        ++row.cached_reported;
      }
    }
    for (const auto& [name, row] : rows) {
      const double cached_pct =
          row.cached_reported && row.prompt
              ? 100.0 * static_cast<double>(row.cached) / static_cast<double>(row.prompt)
              : NAN;
      std::vector<std::string> cells{
          level.label,
          name,
          std::to_string(row.requests),
          std::to_string(row.ok),
          std::to_string(row.tokens),
          fmt_num(level.run.wall_s > 0 ? static_cast<double>(row.tokens) / level.run.wall_s : 0, 1),
          total ? fmt::format("{:.1f}%",
                              100.0 * static_cast<double>(row.tokens) / static_cast<double>(total))
                : "-",
          std::to_string(row.prompt),
          std::to_string(row.cached),
          fmt_num(cached_pct, 1)};
      if (conv) cells.push_back(std::to_string(row.not_found));
      table.add_row(cells);
    }
  }
  if (!any) return std::nullopt;
  return table;
}

ConversationStats conversation_stats(const RunResult& run, std::size_t turns) {
  ConversationStats stats;
  struct Conv {
    std::size_t sent = 0, ok = 0;
  };
  std::map<std::string, Conv> convs;
  for (const Record& rec : run.records) {
    if (rec.turn == 0) continue;
    Conv& session = convs[rec.session];
    ++session.sent;
    session.ok += rec.t.ok();
    if (rec.warmup) continue;
    ++stats.turns_sent;
    stats.turns_ok += rec.t.ok();
    stats.not_found += !rec.t.ok() && is_not_found(rec.t);
  }
  stats.users = convs.size();
  for (const auto& [key, cv] : convs) stats.completed += cv.sent == turns && cv.ok == turns;
  return stats;
}

json::object to_json(const ConversationStats& stats) {
  json::object object;
  object["users"] = stats.users;
  object["turns_sent"] = stats.turns_sent;
  object["turns_completed"] = stats.turns_ok;
  object["conversations_completed"] = stats.completed;
  object["not_found"] = stats.not_found;
  return object;
}

Table conversation_table(const std::vector<LevelResult>& levels) {
  Table table(
      {"Level", "Users", "Turns sent", "Turns completed", "Conversations completed", "Not found"});
  for (const auto& level : levels)
    table.add_row({level.label, std::to_string(level.conv.users),
                   std::to_string(level.conv.turns_sent), std::to_string(level.conv.turns_ok),
                   std::to_string(level.conv.completed), std::to_string(level.conv.not_found)});
  return table;
}

Table detail_table(const Aggregate& aggregate, const std::vector<double>& extra) {
  std::vector<std::string> header{"Metric", "mean", "p50", "p90", "p99"};
  for (double percent : extra) header.push_back(fmt::format("p{:g}", percent));
  header.push_back("max");
  Table table(header);
  auto row = [&](const std::string& name, const Summary& summary, double scale, int decimals) {
    std::vector<std::string> cells{
        name, fmt_num(summary.mean * scale, decimals), fmt_num(summary.p50 * scale, decimals),
        fmt_num(summary.p90 * scale, decimals), fmt_num(summary.p99 * scale, decimals)};
    for (double percent : extra)
      cells.push_back(fmt_num(summary.at(percent).value_or(NAN) * scale, decimals));
    cells.push_back(fmt_num(summary.max * scale, decimals));
    table.add_row(cells);
  };
  row("TTFB (ms)", aggregate.ttfb, 1e3, 2);
  row("TTFT (ms)", aggregate.ttft, 1e3, 2);
  row("TPOT (ms)", aggregate.tpot, 1e3, 2);
  row("ITL (ms)", aggregate.itl, 1e3, 2);
  row("E2E (ms)", aggregate.e2e, 1e3, 1);
  row("Per-stream decode tok/s", aggregate.decode_tok_s, 1, 1);
  return table;
}

void write_run_files(const RunCommand& command, const std::vector<LevelResult>& levels,
                     const KneeResult& knee, const json::object& gt_json,
                     const json::object& groups, HtmlReport html, const std::string& where,
                     std::vector<std::string>& notes) {
  if (command.out.out_dir.empty()) return;
  const fs::path dir(command.out.out_dir);
  fs::create_directories(dir);
  json::object doc;
  doc["tool"] = "llmux bench run";
  doc["version"] = kVersion;
  doc["created_unix"] = unix_seconds();
  doc["settings"] = settings_json(command);
  const bool conv = command.run.conversation.enabled();
  json::object summary;
  for (const auto& level : levels) {
    json::object level_summary = to_json(level.agg);
    if (conv) level_summary["conversation"] = to_json(level.conv);
    summary[level.label] = std::move(level_summary);
  }
  doc["summary"] = std::move(summary);
  if (levels.size() > 1) {
    json::object knee_json;
    knee_json["saturated"] = knee.saturated;
    knee_json["knee_load"] =
        knee.saturated ? json::value(knee.knee_concurrency) : json::value(nullptr);
    knee_json["knee_tok_s"] = knee.saturated ? json_number(knee.knee_tok_s) : json::value(nullptr);
    knee_json["efficiency"] = json::value_from(knee.efficiency);
    doc["knee"] = std::move(knee_json);
  }
  if (command.sim_ground_truth) doc["ground_truth"] = gt_json;
  for (const auto& member : groups) doc[member.key()] = member.value();
  json::array levels_json;
  std::string csv = csv_record(request_csv_header());
  for (const auto& level : levels) {
    json::object level_json;
    level_json["label"] = level.label;
    level_json["load"] = level.load;
    level_json["connections"] = level.run.connections;
    level_json["max_in_flight"] = level.run.max_in_flight;
    level_json["aggregate"] = to_json(level.agg);
    if (conv) level_json["conversation"] = to_json(level.conv);
    json::array reqs;
    for (const auto& record : level.run.records) {
      reqs.push_back(record_json(record, level.label));
      csv += request_csv_row(record, level.label);
    }
    level_json["requests"] = std::move(reqs);
    levels_json.push_back(std::move(level_json));
  }
  doc["levels"] = std::move(levels_json);
  write_file(dir / "run.json", pretty_json(doc));
  write_file(dir / "requests.csv", csv);
  write_file(dir / "summary.csv", to_csv(summary_csv(command, levels)));
  write_file(dir / "summary.md", to_markdown(summary_table(command, levels)));
  html.files.emplace_back("run.json", "the settings, the summary and every request's timings");
  html.files.emplace_back("requests.csv", "one row per request, units in the headers");
  html.files.emplace_back("summary.csv", "one row per level, units in the headers");
  const std::vector<Chart> charts = run_charts(command, levels, where);
  const ReportFiles report_files =
      write_report(dir.string(), std::move(html), charts, command.out.plots);
  notes.push_back(
      fmt::format("Written: {0}/run.json (settings and every request's timings), "
                  "{0}/requests.csv, {0}/summary.csv, {0}/index.html.",
                  dir.string()));
  notes.push_back(report_files.note);
}

}  // namespace llmux::bench::detail
