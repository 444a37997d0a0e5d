// bench_run's tables and output files: run.json (settings and every request), requests.csv,
// summary.csv, summary.md and, for sweeps with gnuplot on PATH, the PNG plots.
#include <boost/json.hpp>

#include <cmath>
#include <cstdlib>
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

bool have_gnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

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

void write_plots(const fs::path& dir, const RunCommand& c, const std::vector<LevelResult>& levels,
                 std::vector<std::string>& notes) {
  if (levels.size() < 2 || !c.out.plots) return;
  if (!have_gnuplot()) {
    notes.push_back("No plots: gnuplot is not installed.");
    return;
  }
  std::string dat =
      "# load output_tok_s req_s ttft_p50_ms ttft_p90_ms ttft_p99_ms itl_p50_ms "
      "itl_p90_ms itl_p99_ms\n";
  for (const auto& l : levels) {
    const Aggregate& a = l.agg;
    dat += fmt::format("{:g} {:.3f} {:.3f} {:.4f} {:.4f} {:.4f} {:.4f} {:.4f} {:.4f}\n", l.load,
                       a.output_tok_s, a.requests_per_s, a.ttft.p50 * 1e3, a.ttft.p90 * 1e3,
                       a.ttft.p99 * 1e3, a.itl.p50 * 1e3, a.itl.p90 * 1e3, a.itl.p99 * 1e3);
  }
  write_file(dir / "sweep.dat", dat);
  const std::string xl =
      c.load.mode == LoadSpec::Mode::open ? "request rate (req/s)" : "concurrency";
  const std::string gp = fmt::format(
      "set terminal png size 900,540\n"
      "set grid\nset key left top\nset logscale x 2\nset xlabel '{0}'\n"
      "set output '{1}/throughput.png'\n"
      "set title 'Output throughput vs {0}'\nset ylabel 'output tok/s'\n"
      "plot '{1}/sweep.dat' using 1:2 with linespoints lw 2 pt 7 title 'aggregate tok/s'\n"
      "set output '{1}/latency.png'\nset key left top\n"
      "set title 'TTFT and ITL percentiles vs {0}'\nset ylabel 'ms'\nset logscale y\n"
      "plot '{1}/sweep.dat' using 1:4 with linespoints lw 2 pt 7 title 'TTFT p50', "
      "'' using 1:6 with linespoints lw 2 pt 5 title 'TTFT p99', "
      "'' using 1:7 with linespoints lw 2 pt 9 title 'ITL p50', "
      "'' using 1:9 with linespoints lw 2 pt 11 title 'ITL p99'\n",
      xl, dir.string());
  write_file(dir / "plots.gp", gp);
  const std::string cmd = fmt::format("gnuplot '{}' 2>/dev/null", (dir / "plots.gp").string());
  if (std::system(cmd.c_str()) == 0)
    notes.push_back(fmt::format("Plots: {0}/throughput.png, {0}/latency.png.", dir.string()));
  else
    notes.push_back("gnuplot failed; sweep.dat and plots.gp are in the output directory.");
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
                                 fmt_num(a.output_tok_s, 1),
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
                     const KneeResult& knee, const json::object& gt_json,
                     std::vector<std::string>& notes) {
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
  write_file(dir / "summary.csv", to_csv(summary_table(c, levels)));
  write_file(dir / "summary.md", to_markdown(summary_table(c, levels)));
  write_plots(dir, c, levels, notes);
  notes.push_back(
      fmt::format("Written: {0}/run.json (settings and every request's timings), "
                  "{0}/requests.csv, {0}/summary.csv.",
                  dir.string()));
}

}  // namespace llmux::bench::detail
