// SPDX-License-Identifier: Apache-2.0
// `llmux bench compare`: the seed's qwen36-gateway-vs-direct.py. Serial and burst throughput of
// each path (direct and through the gateway); for each gateway path its tok/s ratio to the
// direct one beside the latency it adds per request, scale-out kept apart from overhead
// (compare_gateway.cpp).
#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"
#include "core/clock.hpp"

namespace llmux::bench {
namespace json = boost::json;

using detail::burst;
using detail::csv_num;
using detail::figure_cell;
using detail::GatewayRow;
using detail::kVersion;
using detail::Measured;
using detail::PathMeasured;
using detail::records_json;
using detail::resolve_model;
using detail::seed_options;
using detail::serial;
using detail::step_label;
using detail::Tally;
using detail::TimingGroup;

std::vector<NamedUrl> seed_paths(const http::Url& direct, const http::Url& gateway) {
  return {{"direct completions", direct, Dialect::completions},
          {"gateway completions", gateway, Dialect::completions},
          {"direct chat", direct, Dialect::chat},
          {"gateway chat", gateway, Dialect::chat}};
}

namespace {

/// The targets, one per line: each URL with the paths that went to it.
std::string paths_desc(const CompareCommand& command) {
  std::vector<std::pair<std::string, std::string>> urls;
  for (const auto& path : command.paths) {
    auto it = std::find_if(urls.begin(), urls.end(),
                           [&](const auto& entry) { return entry.first == path.url.str(); });
    if (it == urls.end())
      urls.emplace_back(path.url.str(), path.name);
    else
      it->second += ", " + path.name;
  }
  std::string text;
  for (const auto& [url, names] : urls)
    text += fmt::format("{}{}: {}", text.empty() ? "" : "\n", url, names);
  return text;
}

std::string ms_cell(double value) {
  return std::isfinite(value) ? fmt::format("{:+.1f}", value) : "-";
}

/// Each gateway path against the direct path of its endpoint, per level.
std::vector<GatewayRow> gateway_rows(const CompareCommand& command,
                                     const std::vector<PathMeasured>& res) {
  std::vector<GatewayRow> rows;
  for (std::size_t i = 0; i < command.paths.size(); ++i) {
    if (command.paths[i].name.starts_with("direct")) continue;
    std::optional<std::size_t> direct_index;
    for (std::size_t j = 0; j < command.paths.size(); ++j)
      if (command.paths[j].name.starts_with("direct") &&
          command.paths[j].dialect == command.paths[i].dialect)
        direct_index = j;
    if (!direct_index) continue;
    rows.push_back(detail::gateway_row(command.paths[i].name, command.paths[*direct_index].name,
                                       res[i], res[*direct_index], 0));
    for (std::size_t level : command.levels)
      rows.push_back(detail::gateway_row(command.paths[i].name, command.paths[*direct_index].name,
                                         res[i], res[*direct_index], level));
  }
  return rows;
}

}  // namespace

int bench_compare(const CompareCommand& command, std::ostream& markdown) {
  std::vector<PathMeasured> res;
  std::string model;
  const std::size_t steps = command.paths.size() * (1 + command.levels.size());
  std::size_t step = 0;
  const std::int64_t start_ns = mono_ns();
  for (const auto& path : command.paths) {
    PathMeasured path_result;
    model = resolve_model(command.model, path.url, command.client);
    const std::string slug = [&] {
      std::string name = path.name;
      for (char& character : name)
        if (!std::isalnum(static_cast<unsigned char>(character))) character = '_';
      return name;
    }();
    auto options =
        seed_options(path, model, command.max_tokens, command.client, "cmp-" + slug + "-serial");
    options.progress = command.out.progress;
    options.label = step_label("compare", ++step, steps, path.name + " serial");
    path_result.serial = serial(options, seed_prompt(command.prompt), command.repeat);
    for (std::size_t level : command.levels) {
      options = seed_options(path, model, command.max_tokens, command.client,
                             fmt::format("cmp-{}-n{}", slug, level));
      options.progress = command.out.progress;
      options.label =
          step_label("compare", ++step, steps, fmt::format("{} N={}", path.name, level));
      path_result.levels[level] = burst(options, seed_prompt(command.prompt), level);
    }
    res.push_back(std::move(path_result));
  }
  Tally tally;
  for (const auto& path_measured : res) {
    tally.add(path_measured.serial);
    for (const auto& [level, measured] : path_measured.levels) tally.add(measured);
  }
  markdown << fmt::format(
      "### llmux bench compare ({} prompt, max_tokens {}, temperature 0, "
      "non-streaming)\n\n",
      command.prompt, command.max_tokens);
  std::vector<std::string> header{"Path", "Endpoint", "URL",
                                  fmt::format("Serial tok/s (mean of {})", command.repeat)};
  for (std::size_t level : command.levels) header.push_back(fmt::format("N={} tok/s", level));
  std::vector<Align> aligns(header.size(), Align::right);
  aligns[0] = aligns[1] = aligns[2] = Align::left;
  Table table(header, aligns);
  Table pcsv({"path", "endpoint", "url", "serial", "concurrency", "requests", "failed", "rejected",
              "tok_s", "e2e_p50_ms", "e2e_p99_ms"});
  for (std::size_t i = 0; i < command.paths.size(); ++i) {
    const auto& path = command.paths[i];
    const Measured& serial_measured = res[i].serial;
    std::vector<std::string> row{
        path.name, std::string(endpoint_path(path.dialect)), path.url.str(),
        figure_cell(serial_measured.mean, serial_measured.failed, serial_measured.requests)};
    auto csv_row = [&](const Measured& measured, bool ser, std::size_t level) {
      pcsv.add_row({path.name, std::string(endpoint_path(path.dialect)), path.url.str(),
                    ser ? "1" : "0", std::to_string(level), std::to_string(measured.requests),
                    std::to_string(measured.failed), std::to_string(measured.rejected),
                    csv_num(measured.mean), csv_num(measured.agg.e2e.p50 * 1e3),
                    csv_num(measured.agg.e2e.p99 * 1e3)});
    };
    csv_row(serial_measured, true, 1);
    for (std::size_t level : command.levels) {
      const Measured& measured = res[i].levels[level];
      row.push_back(figure_cell(measured.mean, measured.failed, measured.requests));
      csv_row(measured, false, level);
    }
    table.add_row(row);
  }
  markdown << to_markdown(table);

  const std::vector<GatewayRow> rows = gateway_rows(command, res);
  Table gateway_table({"Path", "Level", "Backends", "tok/s ratio", "Added latency p50 ms",
                       "Added latency p99 ms", "Reading"},
                      {Align::left, Align::left, Align::left, Align::right, Align::right,
                       Align::right, Align::left});
  Table gcsv({"path", "baseline", "serial", "concurrency", "backends_used", "scale_out",
              "tok_s_ratio", "per_machine_ratio", "added_latency_p50_ms", "added_latency_p99_ms",
              "latency_baseline_concurrency"});
  for (const GatewayRow& row : rows) {
    gateway_table.add_row(
        {row.path, row.level ? fmt::format("N={}", row.level) : "serial",
         detail::backends_cell(row.backends),
         std::isfinite(row.tok_s_ratio) ? fmt::format("{:.3f}x", row.tok_s_ratio) : "-",
         ms_cell(row.added_p50_ms), ms_cell(row.added_p99_ms), row.reading});
    gcsv.add_row(
        {row.path, row.baseline, row.level ? "0" : "1", std::to_string(row.level ? row.level : 1),
         std::to_string(row.backends.size()), row.scale_out ? "1" : "0",
         csv_num(row.tok_s_ratio, 4), csv_num(row.per_machine, 4), csv_num(row.added_p50_ms),
         csv_num(row.added_p99_ms),
         row.latency_level ? std::to_string(*row.latency_level ? *row.latency_level : 1) : ""});
  }
  const std::string gt_title =
      "Gateway vs direct: tok/s ratio and the latency the gateway adds per request";
  if (!rows.empty())
    markdown << "\n"
             << to_markdown(gateway_table,
                            MarkdownOptions{.title = gt_title, .heading_level = 4, .notes = {}});
  std::vector<std::string> notes;
  notes.push_back(fmt::format(
      "Method (the seed's qwen36-gateway-vs-direct.py): serial = {} requests one after the other, "
      "tok/s = completion tokens / request time (mean); N=k = k requests started together, tok/s = "
      "all tokens / wall time until the last ends; {} connections.",
      command.repeat, to_string(command.client.mode)));
  if (!rows.empty())
    notes.push_back(
        "tok/s ratio = the gateway path's tok/s / the direct path's at the same level. Added "
        "latency = the gateway path's request latency (E2E, start to last byte) minus the direct "
        "path's, at p50 and p99: the gateway's own cost per request. Where the gateway spread a "
        "burst over several machines (X-Llmux-Backend), the ratio measures scale-out (several "
        "machines against one), and the added latency compares each machine's share with the "
        "direct path at that share (e.g. N=16 as 8 + 8 against direct N=8).");
  for (std::size_t i = 0; i < res.size(); ++i) {
    if (res[i].serial.failed)
      notes.push_back(fmt::format("{} serial: {} failed ({})", command.paths[i].name,
                                  res[i].serial.failed, res[i].serial.first_error));
    for (auto& [level, measured] : res[i].levels)
      if (measured.failed)
        notes.push_back(fmt::format("{} N={}: {} failed ({})", command.paths[i].name, level,
                                    measured.failed, measured.first_error));
  }
  const detail::Outcome outcome =
      detail::outcome(tally.requests, tally.failed, tally.rejected, tally.kinds(), command.out);

  json::object doc;
  doc["tool"] = "llmux bench compare";
  doc["version"] = kVersion;
  doc["created_unix"] = unix_seconds();
  json::array paths;
  for (const auto& path : command.paths)
    paths.push_back(json::object{
        {"name", path.name}, {"url", path.url.str()}, {"endpoint", endpoint_path(path.dialect)}});
  doc["settings"] =
      json::object{{"paths", std::move(paths)}, {"max_tokens", command.max_tokens},
                   {"repeat", command.repeat},  {"levels", json::value_from(command.levels)},
                   {"prompt", command.prompt},  {"connection", to_string(command.client.mode)}};
  doc["outcome"] = json::object{{"requests", tally.requests},
                                {"failed", tally.failed},
                                {"rejected", tally.rejected},
                                {"exit_status", outcome.status}};
  json::object summary, raw;
  for (std::size_t i = 0; i < res.size(); ++i) {
    json::object path_summary{{"serial_tok_s", json_number(res[i].serial.mean)}};
    json::object path_records{{"serial", records_json(res[i].serial.records, "serial")}};
    std::size_t failed = res[i].serial.failed, rejected = res[i].serial.rejected;
    for (auto& [level, measured] : res[i].levels) {
      path_summary[fmt::format("n{}_tok_s", level)] = json_number(measured.mean);
      path_records[fmt::format("n{}", level)] =
          records_json(measured.records, fmt::format("n{}", level));
      failed += measured.failed;
      rejected += measured.rejected;
    }
    path_summary["failed"] = failed;
    path_summary["rejected"] = rejected;
    json::object vs_direct;
    for (const GatewayRow& row : rows) {
      if (row.path != command.paths[i].name) continue;
      json::object backends;
      for (const auto& [name, count] : row.backends) backends[name] = count;
      vs_direct[row.level ? fmt::format("n{}", row.level) : "serial"] =
          json::object{{"tok_s_ratio", json_number(row.tok_s_ratio)},
                       {"added_latency_p50_ms", json_number(row.added_p50_ms)},
                       {"added_latency_p99_ms", json_number(row.added_p99_ms)},
                       {"scale_out", row.scale_out},
                       {"per_machine_ratio", json_number(row.per_machine)},
                       {"backends", std::move(backends)}};
    }
    if (!vs_direct.empty()) path_summary["vs_direct"] = std::move(vs_direct);
    summary[command.paths[i].name] = std::move(path_summary);
    raw[command.paths[i].name] = std::move(path_records);
  }
  doc["summary"] = std::move(summary);
  doc["requests"] = std::move(raw);
  if (!command.out.out_dir.empty()) {
    HtmlReport html;
    std::string title_desc = paths_desc(command);
    std::replace(title_desc.begin(), title_desc.end(), '\n', ';');
    html.title = "llmux bench compare: " + title_desc;
    html.intro = fmt::format(
        "Model {}, {} prompt, max_tokens {}, temperature 0, non-streaming (no TTFT or ITL: the "
        "distributions are of whole requests).",
        model, command.prompt, command.max_tokens);
    html.status.push_back(outcome.line);
    html.failed = outcome.status != 0;
    html.sections.push_back({"Output tok/s per path", table, {}});
    if (!rows.empty()) html.sections.push_back({gt_title, gateway_table, {}});
    html.notes = notes;
    std::vector<Chart> charts;
    Chart scale{.name = "tok_s_vs_concurrency",
                .title = "Output tok/s vs concurrency (1 = serial)\n" + paths_desc(command),
                .xlabel = "concurrent requests",
                .ylabel = "output tok/s",
                .kind = ChartKind::lines,
                .logx = true,
                .series = {}};
    std::vector<TimingGroup> all;
    for (std::size_t i = 0; i < res.size(); ++i) {
      ChartSeries series{command.paths[i].name, {}};
      TimingGroup group{command.paths[i].name, {}};
      if (std::isfinite(res[i].serial.mean)) series.points.emplace_back(1, res[i].serial.mean);
      for (const auto& rec : res[i].serial.records) group.ts.push_back(rec.t);
      for (const auto& [level, measured] : res[i].levels) {
        if (std::isfinite(measured.mean))
          series.points.emplace_back(static_cast<double>(level), measured.mean);
        for (const auto& rec : measured.records) group.ts.push_back(rec.t);
      }
      scale.series.push_back(std::move(series));
      all.push_back(std::move(group));
    }
    charts.push_back(std::move(scale));
    for (std::size_t k = 0; k <= command.levels.size(); ++k) {
      std::vector<TimingGroup> groups;
      for (std::size_t i = 0; i < res.size(); ++i) {
        const Measured& measured = k ? res[i].levels[command.levels[k - 1]] : res[i].serial;
        TimingGroup group{command.paths[i].name, {}};
        for (const auto& rec : measured.records) group.ts.push_back(rec.t);
        groups.push_back(std::move(group));
      }
      const std::string level_desc =
          k ? fmt::format("at N={}", command.levels[k - 1]) : std::string("of the serial requests");
      for (auto& chart : detail::distribution_charts(
               groups, k ? fmt::format("n{}", command.levels[k - 1]) : "serial",
               fmt::format("{}\n{}", level_desc, paths_desc(command))))
        charts.push_back(std::move(chart));
    }
    charts.push_back(detail::tok_s_time_chart(
        all, start_ns,
        "Output tok/s over time (each path serial, then each N)\n" + paths_desc(command)));
    detail::write_outputs(command.out, "compare", std::move(doc),
                          {{"paths", std::move(pcsv)}, {"gateway", std::move(gcsv)}},
                          std::move(html), charts, notes);
  }
  markdown << "\n";
  detail::report_outcome(outcome, markdown, "bench compare");
  for (const auto& note : notes) markdown << note << "\n\n";
  return outcome.status;
}

}  // namespace llmux::bench
