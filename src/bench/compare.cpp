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
std::string paths_desc(const CompareCommand& c) {
  std::vector<std::pair<std::string, std::string>> urls;
  for (const auto& p : c.paths) {
    auto it = std::find_if(urls.begin(), urls.end(),
                           [&](const auto& u) { return u.first == p.url.str(); });
    if (it == urls.end())
      urls.emplace_back(p.url.str(), p.name);
    else
      it->second += ", " + p.name;
  }
  std::string s;
  for (const auto& [url, names] : urls)
    s += fmt::format("{}{}: {}", s.empty() ? "" : "\n", url, names);
  return s;
}

std::string ms_cell(double v) {
  return std::isfinite(v) ? fmt::format("{:+.1f}", v) : "-";
}

/// Each gateway path against the direct path of its endpoint, per level.
std::vector<GatewayRow> gateway_rows(const CompareCommand& c,
                                     const std::vector<PathMeasured>& res) {
  std::vector<GatewayRow> rows;
  for (std::size_t i = 0; i < c.paths.size(); ++i) {
    if (c.paths[i].name.starts_with("direct")) continue;
    std::optional<std::size_t> d;
    for (std::size_t j = 0; j < c.paths.size(); ++j)
      if (c.paths[j].name.starts_with("direct") && c.paths[j].dialect == c.paths[i].dialect) d = j;
    if (!d) continue;
    rows.push_back(detail::gateway_row(c.paths[i].name, c.paths[*d].name, res[i], res[*d], 0));
    for (std::size_t n : c.levels)
      rows.push_back(detail::gateway_row(c.paths[i].name, c.paths[*d].name, res[i], res[*d], n));
  }
  return rows;
}

}  // namespace

int bench_compare(const CompareCommand& c, std::ostream& md) {
  std::vector<PathMeasured> res;
  std::string model;
  const std::size_t steps = c.paths.size() * (1 + c.levels.size());
  std::size_t step = 0;
  const std::int64_t t0 = mono_ns();
  for (const auto& p : c.paths) {
    PathMeasured pr;
    model = resolve_model(c.model, p.url, c.client);
    const std::string slug = [&] {
      std::string s = p.name;
      for (char& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    }();
    auto ro = seed_options(p, model, c.max_tokens, c.client, "cmp-" + slug + "-serial");
    ro.progress = c.out.progress;
    ro.label = step_label("compare", ++step, steps, p.name + " serial");
    pr.serial = serial(ro, seed_prompt(c.prompt), c.repeat);
    for (std::size_t n : c.levels) {
      ro = seed_options(p, model, c.max_tokens, c.client, fmt::format("cmp-{}-n{}", slug, n));
      ro.progress = c.out.progress;
      ro.label = step_label("compare", ++step, steps, fmt::format("{} N={}", p.name, n));
      pr.levels[n] = burst(ro, seed_prompt(c.prompt), n);
    }
    res.push_back(std::move(pr));
  }
  Tally tally;
  for (const auto& r : res) {
    tally.add(r.serial);
    for (const auto& [n, m] : r.levels) tally.add(m);
  }
  md << fmt::format(
      "### llmux bench compare ({} prompt, max_tokens {}, temperature 0, "
      "non-streaming)\n\n",
      c.prompt, c.max_tokens);
  std::vector<std::string> h{"Path", "Endpoint", "URL",
                             fmt::format("Serial tok/s (mean of {})", c.repeat)};
  for (std::size_t n : c.levels) h.push_back(fmt::format("N={} tok/s", n));
  std::vector<Align> al(h.size(), Align::right);
  al[0] = al[1] = al[2] = Align::left;
  Table t(h, al);
  Table pcsv({"path", "endpoint", "url", "serial", "concurrency", "requests", "failed", "rejected",
              "tok_s", "e2e_p50_ms", "e2e_p99_ms"});
  for (std::size_t i = 0; i < c.paths.size(); ++i) {
    const auto& p = c.paths[i];
    const Measured& s = res[i].serial;
    std::vector<std::string> row{p.name, std::string(endpoint_path(p.dialect)), p.url.str(),
                                 figure_cell(s.mean, s.failed, s.requests)};
    auto csv_row = [&](const Measured& m, bool ser, std::size_t n) {
      pcsv.add_row({p.name, std::string(endpoint_path(p.dialect)), p.url.str(), ser ? "1" : "0",
                    std::to_string(n), std::to_string(m.requests), std::to_string(m.failed),
                    std::to_string(m.rejected), csv_num(m.mean), csv_num(m.agg.e2e.p50 * 1e3),
                    csv_num(m.agg.e2e.p99 * 1e3)});
    };
    csv_row(s, true, 1);
    for (std::size_t n : c.levels) {
      const Measured& m = res[i].levels[n];
      row.push_back(figure_cell(m.mean, m.failed, m.requests));
      csv_row(m, false, n);
    }
    t.add_row(row);
  }
  md << to_markdown(t);

  const std::vector<GatewayRow> rows = gateway_rows(c, res);
  Table gt({"Path", "Level", "Backends", "tok/s ratio", "Added latency p50 ms",
            "Added latency p99 ms", "Reading"},
           {Align::left, Align::left, Align::left, Align::right, Align::right, Align::right,
            Align::left});
  Table gcsv({"path", "baseline", "serial", "concurrency", "backends_used", "scale_out",
              "tok_s_ratio", "per_machine_ratio", "added_latency_p50_ms", "added_latency_p99_ms",
              "latency_baseline_concurrency"});
  for (const GatewayRow& r : rows) {
    gt.add_row({r.path, r.level ? fmt::format("N={}", r.level) : "serial",
                detail::backends_cell(r.backends),
                std::isfinite(r.tok_s_ratio) ? fmt::format("{:.3f}x", r.tok_s_ratio) : "-",
                ms_cell(r.added_p50_ms), ms_cell(r.added_p99_ms), r.reading});
    gcsv.add_row({r.path, r.baseline, r.level ? "0" : "1", std::to_string(r.level ? r.level : 1),
                  std::to_string(r.backends.size()), r.scale_out ? "1" : "0",
                  csv_num(r.tok_s_ratio, 4), csv_num(r.per_machine, 4), csv_num(r.added_p50_ms),
                  csv_num(r.added_p99_ms),
                  r.latency_level ? std::to_string(*r.latency_level ? *r.latency_level : 1) : ""});
  }
  const std::string gt_title =
      "Gateway vs direct: tok/s ratio and the latency the gateway adds per request";
  if (!rows.empty())
    md << "\n"
       << to_markdown(gt, MarkdownOptions{.title = gt_title, .heading_level = 4, .notes = {}});
  std::vector<std::string> notes;
  notes.push_back(fmt::format(
      "Method (the seed's qwen36-gateway-vs-direct.py): serial = {} requests one after the other, "
      "tok/s = completion tokens / request time (mean); N=k = k requests started together, tok/s = "
      "all tokens / wall time until the last ends; {} connections.",
      c.repeat, to_string(c.client.mode)));
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
      notes.push_back(fmt::format("{} serial: {} failed ({})", c.paths[i].name,
                                  res[i].serial.failed, res[i].serial.first_error));
    for (auto& [n, m] : res[i].levels)
      if (m.failed)
        notes.push_back(
            fmt::format("{} N={}: {} failed ({})", c.paths[i].name, n, m.failed, m.first_error));
  }
  const detail::Outcome oc =
      detail::outcome(tally.requests, tally.failed, tally.rejected, tally.kinds(), c.out);

  json::object doc;
  doc["tool"] = "llmux bench compare";
  doc["version"] = kVersion;
  doc["created_unix"] = unix_seconds();
  json::array paths;
  for (const auto& p : c.paths)
    paths.push_back(json::object{
        {"name", p.name}, {"url", p.url.str()}, {"endpoint", endpoint_path(p.dialect)}});
  doc["settings"] =
      json::object{{"paths", std::move(paths)}, {"max_tokens", c.max_tokens},
                   {"repeat", c.repeat},        {"levels", json::value_from(c.levels)},
                   {"prompt", c.prompt},        {"connection", to_string(c.client.mode)}};
  doc["outcome"] = json::object{{"requests", tally.requests},
                                {"failed", tally.failed},
                                {"rejected", tally.rejected},
                                {"exit_status", oc.status}};
  json::object summary, raw;
  for (std::size_t i = 0; i < res.size(); ++i) {
    json::object s{{"serial_tok_s", json_number(res[i].serial.mean)}};
    json::object r{{"serial", records_json(res[i].serial.records, "serial")}};
    std::size_t failed = res[i].serial.failed, rejected = res[i].serial.rejected;
    for (auto& [n, m] : res[i].levels) {
      s[fmt::format("n{}_tok_s", n)] = json_number(m.mean);
      r[fmt::format("n{}", n)] = records_json(m.records, fmt::format("n{}", n));
      failed += m.failed;
      rejected += m.rejected;
    }
    s["failed"] = failed;
    s["rejected"] = rejected;
    json::object vs;
    for (const GatewayRow& g : rows) {
      if (g.path != c.paths[i].name) continue;
      json::object b;
      for (const auto& [name, n] : g.backends) b[name] = n;
      vs[g.level ? fmt::format("n{}", g.level) : "serial"] =
          json::object{{"tok_s_ratio", json_number(g.tok_s_ratio)},
                       {"added_latency_p50_ms", json_number(g.added_p50_ms)},
                       {"added_latency_p99_ms", json_number(g.added_p99_ms)},
                       {"scale_out", g.scale_out},
                       {"per_machine_ratio", json_number(g.per_machine)},
                       {"backends", std::move(b)}};
    }
    if (!vs.empty()) s["vs_direct"] = std::move(vs);
    summary[c.paths[i].name] = std::move(s);
    raw[c.paths[i].name] = std::move(r);
  }
  doc["summary"] = std::move(summary);
  doc["requests"] = std::move(raw);
  if (!c.out.out_dir.empty()) {
    HtmlReport html;
    std::string title_desc = paths_desc(c);
    std::replace(title_desc.begin(), title_desc.end(), '\n', ';');
    html.title = "llmux bench compare: " + title_desc;
    html.intro = fmt::format(
        "Model {}, {} prompt, max_tokens {}, temperature 0, non-streaming (no TTFT or ITL: the "
        "distributions are of whole requests).",
        model, c.prompt, c.max_tokens);
    html.status.push_back(oc.line);
    html.failed = oc.status != 0;
    html.sections.push_back({"Output tok/s per path", t, {}});
    if (!rows.empty()) html.sections.push_back({gt_title, gt, {}});
    html.notes = notes;
    std::vector<Chart> charts;
    Chart scale{.name = "tok_s_vs_concurrency",
                .title = "Output tok/s vs concurrency (1 = serial)\n" + paths_desc(c),
                .xlabel = "concurrent requests",
                .ylabel = "output tok/s",
                .kind = ChartKind::lines,
                .logx = true,
                .series = {}};
    std::vector<TimingGroup> all;
    for (std::size_t i = 0; i < res.size(); ++i) {
      ChartSeries cs{c.paths[i].name, {}};
      TimingGroup g{c.paths[i].name, {}};
      if (std::isfinite(res[i].serial.mean)) cs.points.emplace_back(1, res[i].serial.mean);
      for (const auto& rec : res[i].serial.records) g.ts.push_back(rec.t);
      for (const auto& [n, m] : res[i].levels) {
        if (std::isfinite(m.mean)) cs.points.emplace_back(static_cast<double>(n), m.mean);
        for (const auto& rec : m.records) g.ts.push_back(rec.t);
      }
      scale.series.push_back(std::move(cs));
      all.push_back(std::move(g));
    }
    charts.push_back(std::move(scale));
    for (std::size_t k = 0; k <= c.levels.size(); ++k) {
      std::vector<TimingGroup> groups;
      for (std::size_t i = 0; i < res.size(); ++i) {
        const Measured& m = k ? res[i].levels[c.levels[k - 1]] : res[i].serial;
        TimingGroup g{c.paths[i].name, {}};
        for (const auto& rec : m.records) g.ts.push_back(rec.t);
        groups.push_back(std::move(g));
      }
      const std::string lv =
          k ? fmt::format("at N={}", c.levels[k - 1]) : std::string("of the serial requests");
      for (auto& ch :
           detail::distribution_charts(groups, k ? fmt::format("n{}", c.levels[k - 1]) : "serial",
                                       fmt::format("{}\n{}", lv, paths_desc(c))))
        charts.push_back(std::move(ch));
    }
    charts.push_back(detail::tok_s_time_chart(
        all, t0, "Output tok/s over time (each path serial, then each N)\n" + paths_desc(c)));
    detail::write_outputs(c.out, "compare", std::move(doc),
                          {{"paths", std::move(pcsv)}, {"gateway", std::move(gcsv)}},
                          std::move(html), charts, notes);
  }
  md << "\n";
  detail::report_outcome(oc, md, "bench compare");
  for (const auto& n : notes) md << n << "\n\n";
  return oc.status;
}

}  // namespace llmux::bench
