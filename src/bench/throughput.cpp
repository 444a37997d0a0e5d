// SPDX-License-Identifier: Apache-2.0
// `llmux bench throughput`: the seed's qwen36-throughput.py. Single-stream decode of three
// prompt sizes and concurrent aggregates per target, and whether the targets agree.
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"
#include "core/clock.hpp"

namespace llmux::bench {
namespace json = boost::json;

using detail::burst;
using detail::figure_cell;
using detail::kVersion;
using detail::Measured;
using detail::records_json;
using detail::report_outcome;
using detail::resolve_model;
using detail::seed_options;
using detail::serial;
using detail::step_label;
using detail::Tally;
using detail::TimingGroup;
using detail::write_outputs;

namespace {

struct TargetResult {
  std::string model;
  std::map<std::string, Measured> serial;
  std::map<std::size_t, Measured> levels;
};

const char* const kSizes[] = {"short", "medium", "long"};

struct ReportParts {
  std::vector<std::pair<std::string, Table>> csv;
  HtmlReport html;
  std::vector<Chart> charts;
};

/// The targets, "server1 (URL)", separated by `sep`.
std::string targets_desc(const ThroughputCommand& command, const char* sep = ", ") {
  std::string text;
  for (const auto& target : command.targets)
    text += fmt::format("{}{} ({})", text.empty() ? "" : sep, target.name, target.url.str());
  return text;
}

/// The CSV tables (numbers only, units in the headers), the charts and the HTML page.
ReportParts throughput_report(const ThroughputCommand& command,
                              const std::vector<TargetResult>& res, const Table& serial_t,
                              const Table& conc_t, const std::vector<std::string>& verdicts,
                              std::int64_t start_ns) {
  ReportParts parts;
  Table serial_csv({"target", "url", "prompt", "prompt_tokens", "requests", "failed", "rejected",
                    "mean_tok_s", "min_tok_s", "max_tok_s"});
  Table concurrent_csv({"target", "url", "concurrency", "requests", "failed", "rejected",
                        "output_tokens", "wall_s", "aggregate_tok_s", "per_stream_tok_s",
                        "speedup_vs_single_stream"});
  Chart scale{.name = "tok_s_vs_concurrency",
              .title = "Output tok/s vs concurrency (1 = one stream, medium prompt)\n" +
                       targets_desc(command, "\n"),
              .xlabel = "concurrent requests",
              .ylabel = "output tok/s",
              .kind = ChartKind::lines,
              .logx = true,
              .series = {}};
  std::vector<TimingGroup> all;
  for (std::size_t i = 0; i < res.size(); ++i) {
    const auto& target = command.targets[i];
    const TargetResult& result = res[i];
    ChartSeries series{target.name, {}};
    TimingGroup group{target.name, {}};
    for (const char* size : kSizes) {
      const Measured& measured = result.serial.at(size);
      double min_tok_s = NAN, max_tok_s = NAN;
      if (!measured.tok_s.empty()) {
        min_tok_s = *std::min_element(measured.tok_s.begin(), measured.tok_s.end());
        max_tok_s = *std::max_element(measured.tok_s.begin(), measured.tok_s.end());
      }
      serial_csv.add_row({target.name, target.url.str(), size,
                          std::to_string(measured.prompt_tokens), std::to_string(measured.requests),
                          std::to_string(measured.failed), std::to_string(measured.rejected),
                          detail::csv_num(measured.mean), detail::csv_num(min_tok_s),
                          detail::csv_num(max_tok_s)});
      for (const auto& rec : measured.records) group.ts.push_back(rec.t);
    }
    const double single = result.serial.at("medium").mean;
    if (std::isfinite(single)) series.points.emplace_back(1, single);
    for (const auto& [level, measured] : result.levels) {
      const double concurrency = static_cast<double>(level);
      concurrent_csv.add_row({target.name, target.url.str(), std::to_string(level),
                              std::to_string(measured.requests), std::to_string(measured.failed),
                              std::to_string(measured.rejected), std::to_string(measured.tokens),
                              detail::csv_num(measured.wall_s), detail::csv_num(measured.mean),
                              detail::csv_num(measured.mean / concurrency),
                              detail::csv_num(measured.mean / single)});
      if (std::isfinite(measured.mean)) series.points.emplace_back(concurrency, measured.mean);
      for (const auto& rec : measured.records) group.ts.push_back(rec.t);
    }
    scale.series.push_back(std::move(series));
    all.push_back(std::move(group));
  }
  parts.csv = {{"serial", std::move(serial_csv)}, {"concurrent", std::move(concurrent_csv)}};
  parts.charts.push_back(std::move(scale));
  for (std::size_t level : command.levels) {
    std::vector<TimingGroup> groups;
    for (std::size_t i = 0; i < res.size(); ++i) {
      TimingGroup group{command.targets[i].name, {}};
      for (const auto& rec : res[i].levels.at(level).records) group.ts.push_back(rec.t);
      groups.push_back(std::move(group));
    }
    for (auto& chart : detail::distribution_charts(
             groups, fmt::format("n{}", level),
             fmt::format("at N={}\n{}", level, targets_desc(command, "\n"))))
      parts.charts.push_back(std::move(chart));
  }
  parts.charts.push_back(detail::tok_s_time_chart(
      all, start_ns,
      "Output tok/s over time (serial prompts, then each N)\n" + targets_desc(command, "\n")));
  parts.html.title = "llmux bench throughput: " + targets_desc(command);
  parts.html.intro = fmt::format(
      "Model {}, max_tokens {}, temperature 0, non-streaming /v1/completions (no TTFT or ITL: "
      "the distributions are of whole requests).",
      res.empty() ? "" : res.front().model, command.max_tokens);
  parts.html.sections.push_back({"Single-stream decode (tok/s)", serial_t, {}});
  parts.html.sections.push_back({"Concurrent aggregate (tok/s)", conc_t, verdicts});
  return parts;
}

}  // namespace

int bench_throughput(const ThroughputCommand& command, std::ostream& markdown) {
  std::vector<TargetResult> res;
  const std::size_t steps = command.targets.size() * (3 + command.levels.size());
  std::size_t step = 0;
  const std::int64_t start_ns = mono_ns();
  for (const auto& target : command.targets) {
    TargetResult target_result;
    target_result.model = resolve_model(command.model, target.url, command.client);
    for (const char* size : kSizes) {
      auto options = seed_options(target, target_result.model, command.max_tokens, command.client,
                                  fmt::format("tp-{}-{}", target.name, size));
      options.progress = command.out.progress;
      options.label =
          step_label("throughput", ++step, steps, fmt::format("{} serial {}", target.name, size));
      target_result.serial[size] = serial(options, seed_prompt(size), command.repeat);
    }
    for (std::size_t level : command.levels) {
      auto options = seed_options(target, target_result.model, command.max_tokens, command.client,
                                  fmt::format("tp-{}-n{}", target.name, level));
      options.progress = command.out.progress;
      options.label =
          step_label("throughput", ++step, steps, fmt::format("{} N={}", target.name, level));
      target_result.levels[level] = burst(options, seed_prompt("medium"), level);
    }
    res.push_back(std::move(target_result));
  }
  Tally tally;
  for (const auto& result : res) {
    for (const auto& [size, measured] : result.serial) tally.add(measured);
    for (const auto& [level, measured] : result.levels) tally.add(measured);
  }

  markdown << fmt::format(
      "### llmux bench throughput ({}, max_tokens {}, temperature 0, non-streaming "
      "/v1/completions)\n\n",
      res.empty() ? "" : res.front().model, command.max_tokens);
  std::vector<std::string> header{"Prompt", "prompt tokens"};
  for (const auto& target : command.targets) header.push_back(target.name);
  Table serial_t(header);
  for (const char* size : kSizes) {
    std::vector<std::string> row{size, std::to_string(res.front().serial[size].prompt_tokens)};
    for (auto& result : res) {
      const Measured& measured = result.serial[size];
      row.push_back(figure_cell(measured.mean, measured.failed, measured.requests));
    }
    serial_t.add_row(row);
  }
  markdown << to_markdown(
      serial_t, MarkdownOptions{.title = fmt::format("Single-stream decode (tok/s = completion "
                                                     "tokens / request time, mean of {} runs)",
                                                     command.repeat),
                                .heading_level = 4,
                                .notes = {}});
  std::vector<std::string> concurrent_header{"Concurrency"};
  for (const auto& target : command.targets) concurrent_header.push_back(target.name);
  concurrent_header.push_back(fmt::format("per stream ({})", command.targets.front().name));
  concurrent_header.push_back(fmt::format("x single stream ({})", command.targets.front().name));
  Table conc_t(concurrent_header);
  for (std::size_t level : command.levels) {
    std::vector<std::string> row{fmt::format("N={}", level)};
    for (auto& result : res) {
      const Measured& measured = result.levels[level];
      row.push_back(figure_cell(measured.mean, measured.failed, measured.requests));
    }
    const Measured& measured = res.front().levels[level];
    const double agg = measured.mean, single = res.front().serial["medium"].mean;
    row.push_back(
        figure_cell(agg / static_cast<double>(level), measured.failed, measured.requests));
    const double speedup = agg / single;
    row.push_back(std::isfinite(speedup) ? fmt::format("{:.1f}x", speedup) : "-");
    conc_t.add_row(row);
  }
  markdown << "\n"
           << to_markdown(conc_t,
                          MarkdownOptions{.title = fmt::format(
                                              "Concurrent aggregate (medium prompt, max_tokens "
                                              "{}; tok/s = all tokens / wall time until the "
                                              "last request ends)",
                                              command.max_tokens),
                                          .heading_level = 4,
                                          .notes = {}});
  std::vector<std::string> notes, verdicts;
  if (command.targets.size() > 1) {
    markdown << "\n";
    auto verdict = [&](const std::string& what, const std::vector<double>& values) {
      const bool incomplete = std::any_of(values.begin(), values.end(), [](double value) {
        return !std::isfinite(value) || value <= 0;
      });
      const double relative_spread = spread(values);
      std::string vals;
      for (std::size_t i = 0; i < values.size(); ++i)
        vals += fmt::format("{}{} {}", i ? ", " : "", command.targets[i].name, fmt_num(values[i]));
      std::string line =
          incomplete
              ? fmt::format("{}: {} tok/s: INCOMPLETE (a target has no figure: see the errors)",
                            what, vals)
              : fmt::format("{}: {} tok/s: {} (spread {:.1f}%, threshold {:g}%)", what, vals,
                            relative_spread <= command.agree ? "AGREE" : "DIFFER",
                            relative_spread * 100, command.agree * 100);
      markdown << "- " << line << "\n";
      verdicts.push_back(std::move(line));
    };
    {
      std::vector<double> values;
      for (auto& result : res) values.push_back(result.serial["medium"].mean);
      verdict("serial (medium)", values);
    }
    for (std::size_t level : command.levels) {
      std::vector<double> values;
      for (auto& result : res) values.push_back(result.levels[level].mean);
      verdict(fmt::format("N={}", level), values);
    }
  }
  for (std::size_t i = 0; i < res.size(); ++i) {
    for (auto& [size, measured] : res[i].serial)
      if (measured.failed) {
        notes.push_back(fmt::format("{} serial {}: {} failed ({})", command.targets[i].name, size,
                                    measured.failed, measured.first_error));
      }
    for (auto& [level, measured] : res[i].levels)
      if (measured.failed) {
        notes.push_back(fmt::format("{} N={}: {} failed ({})", command.targets[i].name, level,
                                    measured.failed, measured.first_error));
      }
  }
  notes.insert(notes.begin(),
               fmt::format("Method (the seed's qwen36-throughput.py): each prompt {} times one "
                           "after the other, then N requests started together; {} connections; "
                           "output tokens from usage.completion_tokens.",
                           command.repeat, to_string(command.client.mode)));

  json::object doc;
  doc["tool"] = "llmux bench throughput";
  doc["version"] = kVersion;
  doc["created_unix"] = unix_seconds();
  json::object settings{
      {"model", res.front().model}, {"max_tokens", command.max_tokens},
      {"repeat", command.repeat},   {"levels", json::value_from(command.levels)},
      {"agree", command.agree},     {"connection", to_string(command.client.mode)}};
  json::array targets;
  for (const auto& target : command.targets)
    targets.push_back(json::object{{"name", target.name}, {"url", target.url.str()}});
  settings["targets"] = std::move(targets);
  doc["settings"] = std::move(settings);
  json::object summary, raw;
  for (std::size_t i = 0; i < res.size(); ++i) {
    json::object target_summary, target_records;
    json::object ser;
    for (auto& [size, measured] : res[i].serial) {
      ser[size] = json::object{{"tok_s", json_number(measured.mean)},
                               {"runs_tok_s", json::value_from(measured.tok_s)},
                               {"prompt_tokens", measured.prompt_tokens},
                               {"requests", measured.requests},
                               {"failed", measured.failed},
                               {"rejected", measured.rejected}};
      target_records["serial_" + size] = records_json(measured.records, "serial_" + size);
    }
    target_summary["serial"] = std::move(ser);
    for (auto& [level, measured] : res[i].levels) {
      target_summary[fmt::format("n{}", level)] =
          json::object{{"tok_s", json_number(measured.mean)},
                       {"tokens", measured.tokens},
                       {"wall_s", json_number(measured.wall_s)},
                       {"requests", measured.requests},
                       {"failed", measured.failed},
                       {"rejected", measured.rejected}};
      target_records[fmt::format("n{}", level)] =
          records_json(measured.records, fmt::format("n{}", level));
    }
    summary[command.targets[i].name] = std::move(target_summary);
    raw[command.targets[i].name] = std::move(target_records);
  }
  const detail::Outcome outcome =
      detail::outcome(tally.requests, tally.failed, tally.rejected, tally.kinds(), command.out);
  doc["outcome"] = json::object{{"requests", tally.requests},
                                {"failed", tally.failed},
                                {"rejected", tally.rejected},
                                {"exit_status", outcome.status}};
  doc["summary"] = std::move(summary);
  doc["requests"] = std::move(raw);
  if (!command.out.out_dir.empty()) {
    auto [csv, html, charts] =
        throughput_report(command, res, serial_t, conc_t, verdicts, start_ns);
    html.status.push_back(outcome.line);
    html.failed = outcome.status != 0;
    html.notes = notes;
    write_outputs(command.out, "throughput", std::move(doc), csv, std::move(html), charts, notes);
  }
  markdown << "\n";
  report_outcome(outcome, markdown, "bench throughput");
  for (const auto& note : notes) markdown << note << "\n\n";
  return outcome.status;
}

}  // namespace llmux::bench
