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
std::string targets_desc(const ThroughputCommand& c, const char* sep = ", ") {
  std::string s;
  for (const auto& t : c.targets)
    s += fmt::format("{}{} ({})", s.empty() ? "" : sep, t.name, t.url.str());
  return s;
}

/// The CSV tables (numbers only, units in the headers), the charts and the HTML page.
ReportParts throughput_report(const ThroughputCommand& c, const std::vector<TargetResult>& res,
                              const Table& serial_t, const Table& conc_t,
                              const std::vector<std::string>& verdicts, std::int64_t t0) {
  ReportParts p;
  Table st({"target", "url", "prompt", "prompt_tokens", "requests", "failed", "rejected",
            "mean_tok_s", "min_tok_s", "max_tok_s"});
  Table ct({"target", "url", "concurrency", "requests", "failed", "rejected", "output_tokens",
            "wall_s", "aggregate_tok_s", "per_stream_tok_s", "speedup_vs_single_stream"});
  Chart scale{.name = "tok_s_vs_concurrency",
              .title = "Output tok/s vs concurrency (1 = one stream, medium prompt)\n" +
                       targets_desc(c, "\n"),
              .xlabel = "concurrent requests",
              .ylabel = "output tok/s",
              .kind = ChartKind::lines,
              .logx = true,
              .series = {}};
  std::vector<TimingGroup> all;
  for (std::size_t i = 0; i < res.size(); ++i) {
    const auto& t = c.targets[i];
    const TargetResult& r = res[i];
    ChartSeries cs{t.name, {}};
    TimingGroup g{t.name, {}};
    for (const char* size : kSizes) {
      const Measured& m = r.serial.at(size);
      double mn = NAN, mx = NAN;
      if (!m.tok_s.empty()) {
        mn = *std::min_element(m.tok_s.begin(), m.tok_s.end());
        mx = *std::max_element(m.tok_s.begin(), m.tok_s.end());
      }
      st.add_row({t.name, t.url.str(), size, std::to_string(m.prompt_tokens),
                  std::to_string(m.requests), std::to_string(m.failed), std::to_string(m.rejected),
                  detail::csv_num(m.mean), detail::csv_num(mn), detail::csv_num(mx)});
      for (const auto& rec : m.records) g.ts.push_back(rec.t);
    }
    const double single = r.serial.at("medium").mean;
    if (std::isfinite(single)) cs.points.emplace_back(1, single);
    for (const auto& [n, m] : r.levels) {
      const double nn = static_cast<double>(n);
      ct.add_row({t.name, t.url.str(), std::to_string(n), std::to_string(m.requests),
                  std::to_string(m.failed), std::to_string(m.rejected), std::to_string(m.tokens),
                  detail::csv_num(m.wall_s), detail::csv_num(m.mean), detail::csv_num(m.mean / nn),
                  detail::csv_num(m.mean / single)});
      if (std::isfinite(m.mean)) cs.points.emplace_back(nn, m.mean);
      for (const auto& rec : m.records) g.ts.push_back(rec.t);
    }
    scale.series.push_back(std::move(cs));
    all.push_back(std::move(g));
  }
  p.csv = {{"serial", std::move(st)}, {"concurrent", std::move(ct)}};
  p.charts.push_back(std::move(scale));
  for (std::size_t n : c.levels) {
    std::vector<TimingGroup> groups;
    for (std::size_t i = 0; i < res.size(); ++i) {
      TimingGroup g{c.targets[i].name, {}};
      for (const auto& rec : res[i].levels.at(n).records) g.ts.push_back(rec.t);
      groups.push_back(std::move(g));
    }
    for (auto& ch : detail::distribution_charts(
             groups, fmt::format("n{}", n), fmt::format("at N={}\n{}", n, targets_desc(c, "\n"))))
      p.charts.push_back(std::move(ch));
  }
  p.charts.push_back(detail::tok_s_time_chart(
      all, t0, "Output tok/s over time (serial prompts, then each N)\n" + targets_desc(c, "\n")));
  p.html.title = "llmux bench throughput: " + targets_desc(c);
  p.html.intro = fmt::format(
      "Model {}, max_tokens {}, temperature 0, non-streaming /v1/completions (no TTFT or ITL: "
      "the distributions are of whole requests).",
      res.empty() ? "" : res.front().model, c.max_tokens);
  p.html.sections.push_back({"Single-stream decode (tok/s)", serial_t, {}});
  p.html.sections.push_back({"Concurrent aggregate (tok/s)", conc_t, verdicts});
  return p;
}

}  // namespace

int bench_throughput(const ThroughputCommand& c, std::ostream& md) {
  std::vector<TargetResult> res;
  const std::size_t steps = c.targets.size() * (3 + c.levels.size());
  std::size_t step = 0;
  const std::int64_t t0 = mono_ns();
  for (const auto& t : c.targets) {
    TargetResult tr;
    tr.model = resolve_model(c.model, t.url, c.client);
    for (const char* size : kSizes) {
      auto ro =
          seed_options(t, tr.model, c.max_tokens, c.client, fmt::format("tp-{}-{}", t.name, size));
      ro.progress = c.out.progress;
      ro.label = step_label("throughput", ++step, steps, fmt::format("{} serial {}", t.name, size));
      tr.serial[size] = serial(ro, seed_prompt(size), c.repeat);
    }
    for (std::size_t n : c.levels) {
      auto ro =
          seed_options(t, tr.model, c.max_tokens, c.client, fmt::format("tp-{}-n{}", t.name, n));
      ro.progress = c.out.progress;
      ro.label = step_label("throughput", ++step, steps, fmt::format("{} N={}", t.name, n));
      tr.levels[n] = burst(ro, seed_prompt("medium"), n);
    }
    res.push_back(std::move(tr));
  }
  Tally tally;
  for (const auto& r : res) {
    for (const auto& [k, m] : r.serial) tally.add(m);
    for (const auto& [k, m] : r.levels) tally.add(m);
  }

  md << fmt::format(
      "### llmux bench throughput ({}, max_tokens {}, temperature 0, non-streaming "
      "/v1/completions)\n\n",
      res.empty() ? "" : res.front().model, c.max_tokens);
  std::vector<std::string> h{"Prompt", "prompt tokens"};
  for (const auto& t : c.targets) h.push_back(t.name);
  Table serial_t(h);
  for (const char* size : kSizes) {
    std::vector<std::string> row{size, std::to_string(res.front().serial[size].prompt_tokens)};
    for (auto& r : res) {
      const Measured& m = r.serial[size];
      row.push_back(figure_cell(m.mean, m.failed, m.requests));
    }
    serial_t.add_row(row);
  }
  md << to_markdown(serial_t,
                    MarkdownOptions{.title = fmt::format("Single-stream decode (tok/s = completion "
                                                         "tokens / request time, mean of {} runs)",
                                                         c.repeat),
                                    .heading_level = 4,
                                    .notes = {}});
  std::vector<std::string> h2{"Concurrency"};
  for (const auto& t : c.targets) h2.push_back(t.name);
  h2.push_back(fmt::format("per stream ({})", c.targets.front().name));
  h2.push_back(fmt::format("x single stream ({})", c.targets.front().name));
  Table conc_t(h2);
  for (std::size_t n : c.levels) {
    std::vector<std::string> row{fmt::format("N={}", n)};
    for (auto& r : res) {
      const Measured& m = r.levels[n];
      row.push_back(figure_cell(m.mean, m.failed, m.requests));
    }
    const Measured& m = res.front().levels[n];
    const double agg = m.mean, single = res.front().serial["medium"].mean;
    row.push_back(figure_cell(agg / static_cast<double>(n), m.failed, m.requests));
    const double x = agg / single;
    row.push_back(std::isfinite(x) ? fmt::format("{:.1f}x", x) : "-");
    conc_t.add_row(row);
  }
  md << "\n"
     << to_markdown(conc_t, MarkdownOptions{.title = fmt::format(
                                                "Concurrent aggregate (medium prompt, max_tokens "
                                                "{}; tok/s = all tokens / wall time until the "
                                                "last request ends)",
                                                c.max_tokens),
                                            .heading_level = 4,
                                            .notes = {}});
  std::vector<std::string> notes, verdicts;
  if (c.targets.size() > 1) {
    md << "\n";
    auto verdict = [&](const std::string& what, const std::vector<double>& v) {
      const bool incomplete =
          std::any_of(v.begin(), v.end(), [](double x) { return !std::isfinite(x) || x <= 0; });
      const double s = spread(v);
      std::string vals;
      for (std::size_t i = 0; i < v.size(); ++i)
        vals += fmt::format("{}{} {}", i ? ", " : "", c.targets[i].name, fmt_num(v[i]));
      std::string line =
          incomplete
              ? fmt::format("{}: {} tok/s: INCOMPLETE (a target has no figure: see the errors)",
                            what, vals)
              : fmt::format("{}: {} tok/s: {} (spread {:.1f}%, threshold {:g}%)", what, vals,
                            s <= c.agree ? "AGREE" : "DIFFER", s * 100, c.agree * 100);
      md << "- " << line << "\n";
      verdicts.push_back(std::move(line));
    };
    {
      std::vector<double> v;
      for (auto& r : res) v.push_back(r.serial["medium"].mean);
      verdict("serial (medium)", v);
    }
    for (std::size_t n : c.levels) {
      std::vector<double> v;
      for (auto& r : res) v.push_back(r.levels[n].mean);
      verdict(fmt::format("N={}", n), v);
    }
  }
  for (std::size_t i = 0; i < res.size(); ++i) {
    for (auto& [k, m] : res[i].serial)
      if (m.failed) {
        notes.push_back(fmt::format("{} serial {}: {} failed ({})", c.targets[i].name, k, m.failed,
                                    m.first_error));
      }
    for (auto& [k, m] : res[i].levels)
      if (m.failed) {
        notes.push_back(
            fmt::format("{} N={}: {} failed ({})", c.targets[i].name, k, m.failed, m.first_error));
      }
  }
  notes.insert(notes.begin(),
               fmt::format("Method (the seed's qwen36-throughput.py): each prompt {} times one "
                           "after the other, then N requests started together; {} connections; "
                           "output tokens from usage.completion_tokens.",
                           c.repeat, to_string(c.client.mode)));

  json::object doc;
  doc["tool"] = "llmux bench throughput";
  doc["version"] = kVersion;
  doc["created_unix"] = unix_seconds();
  json::object settings{{"model", res.front().model}, {"max_tokens", c.max_tokens},
                        {"repeat", c.repeat},         {"levels", json::value_from(c.levels)},
                        {"agree", c.agree},           {"connection", to_string(c.client.mode)}};
  json::array targets;
  for (const auto& t : c.targets)
    targets.push_back(json::object{{"name", t.name}, {"url", t.url.str()}});
  settings["targets"] = std::move(targets);
  doc["settings"] = std::move(settings);
  json::object summary, raw;
  for (std::size_t i = 0; i < res.size(); ++i) {
    json::object s, r;
    json::object ser;
    for (auto& [k, m] : res[i].serial) {
      ser[k] = json::object{{"tok_s", json_number(m.mean)},
                            {"runs_tok_s", json::value_from(m.tok_s)},
                            {"prompt_tokens", m.prompt_tokens},
                            {"requests", m.requests},
                            {"failed", m.failed},
                            {"rejected", m.rejected}};
      r["serial_" + k] = records_json(m.records, "serial_" + k);
    }
    s["serial"] = std::move(ser);
    for (auto& [n, m] : res[i].levels) {
      s[fmt::format("n{}", n)] = json::object{
          {"tok_s", json_number(m.mean)}, {"tokens", m.tokens}, {"wall_s", json_number(m.wall_s)},
          {"requests", m.requests},       {"failed", m.failed}, {"rejected", m.rejected}};
      r[fmt::format("n{}", n)] = records_json(m.records, fmt::format("n{}", n));
    }
    summary[c.targets[i].name] = std::move(s);
    raw[c.targets[i].name] = std::move(r);
  }
  const detail::Outcome oc =
      detail::outcome(tally.requests, tally.failed, tally.rejected, tally.kinds(), c.out);
  doc["outcome"] = json::object{{"requests", tally.requests},
                                {"failed", tally.failed},
                                {"rejected", tally.rejected},
                                {"exit_status", oc.status}};
  doc["summary"] = std::move(summary);
  doc["requests"] = std::move(raw);
  if (!c.out.out_dir.empty()) {
    auto [csv, html, charts] = throughput_report(c, res, serial_t, conc_t, verdicts, t0);
    html.status.push_back(oc.line);
    html.failed = oc.status != 0;
    html.notes = notes;
    write_outputs(c.out, "throughput", std::move(doc), csv, std::move(html), charts, notes);
  }
  md << "\n";
  report_outcome(oc, md, "bench throughput");
  for (const auto& n : notes) md << n << "\n\n";
  return oc.status;
}

}  // namespace llmux::bench
