#include "bench/commands.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/report.hpp"
#include "core/clock.hpp"

namespace llmux::bench {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kVersion = "0.1.0";

std::string ms(double s, int d = 2) {
  return fmt_num(s * 1e3, d);
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("cannot write {}", p.string()));
  f << text;
}

bool have_gnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
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

json::object record_json(const Record& r, const std::string& level) {
  json::object o;
  o["level"] = level;
  o["index"] = r.index;
  o["request_id"] = r.request_id;
  o["response_id"] = r.response_id;
  o["warmup"] = r.warmup;
  o["prompt"] = r.prompt;
  json::object t = to_json(r.t);
  for (auto& kv : t) o[kv.key()] = kv.value();
  return o;
}

std::vector<std::string> request_csv_header() {
  return {"level",         "index",         "request_id",
          "response_id",   "warmup",        "ok",
          "error",         "http_status",   "start_ns",
          "ttfb_ms",       "ttft_ms",       "tpot_ms",
          "e2e_ms",        "output_tokens", "output_tokens_estimated",
          "prompt_tokens", "token_events"};
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
                             std::to_string(r.t.events.size())};
  return csv_record(f);
}

struct LevelResult {
  std::string label;  // "c8" / "r10"
  double load = 0;    // concurrency or rate
  RunResult run;
  Aggregate agg;
};

std::string load_cell(const RunCommand& c, const LevelResult& l) {
  if (c.load.mode == LoadSpec::Mode::open) return fmt::format("{:g} req/s", l.load);
  return fmt::format("{:g}", l.load);
}

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
                             "E2E p50 ms"};
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
                                 ms(a.e2e.p50)};
    if (!c.slo.empty()) row.push_back(fmt_num(a.goodput_req_s, 2));
    t.add_row(row);
  }
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

double spread(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  return *mx > 0 ? (*mx - *mn) / *mx : 0;
}

std::vector<std::size_t> parse_levels(const std::string& s) {
  std::vector<std::size_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto dots = item.find("..");
    try {
      if (dots != std::string::npos) {
        std::size_t a = std::stoul(item.substr(0, dots)), b = std::stoul(item.substr(dots + 2));
        if (a == 0 || b < a) throw std::invalid_argument(item);
        for (std::size_t x = a; x <= b; x *= 2) out.push_back(x);
        continue;
      }
      std::size_t pos = 0;
      const long v = std::stol(item, &pos);
      if (pos != item.size() || v <= 0) throw std::invalid_argument(item);
      out.push_back(static_cast<std::size_t>(v));
    } catch (const std::logic_error&) {
      throw std::invalid_argument(
          fmt::format("bad level '{}' (positive integers, e.g. 4,8 or 1..64)", item));
    }
  }
  if (out.empty()) throw std::invalid_argument("no levels given");
  return out;
}

std::vector<double> parse_percentiles(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (item.front() == 'p' || item.front() == 'P') item.erase(0, 1);
    std::size_t pos = 0;
    double v = 0;
    try {
      v = std::stod(item, &pos);
    } catch (const std::logic_error&) {
      pos = 0;
    }
    if (pos != item.size() || v < 0 || v > 100)
      throw std::invalid_argument(fmt::format("bad percentile '{}' (0..100)", item));
    out.push_back(v);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// run

int bench_run(const RunCommand& c, std::ostream& md) {
  std::vector<LevelResult> levels;
  std::vector<SweepPoint> points;
  std::vector<std::size_t> conc = c.sweep;
  const bool open = c.load.mode == LoadSpec::Mode::open;
  if (conc.empty()) conc.push_back(c.load.concurrency);
  AggregateOptions aopt;
  aopt.extra_percentiles = c.out.percentiles;
  aopt.slo = c.slo;
  for (std::size_t n : conc) {
    LoadSpec spec = c.load;
    if (!c.sweep.empty()) spec.concurrency = n;
    RunOptions ro = c.run;
    LevelResult l;
    l.load = open ? spec.request_rate : static_cast<double>(spec.concurrency);
    l.label = open ? fmt::format("r{:g}", spec.request_rate) : fmt::format("c{}", spec.concurrency);
    ro.label = fmt::format("[{}]", l.label);
    ro.progress = c.out.progress;
    ro.request_id_prefix =
        fmt::format("{}-{}-{}", c.run.request_id_prefix, mono_ns() % 1000000, l.label);
    l.run = run_load(ro, spec, c.prompts);
    const auto measured = l.run.measured();
    aopt.wall_s = l.run.wall_s;
    l.agg = aggregate(measured, aopt);
    points.push_back(SweepPoint{l.load, l.agg.output_tok_s});
    levels.push_back(std::move(l));
    if (!c.sweep.empty() && sweep_should_stop(points, c.knee)) break;
  }

  // Markdown.
  const auto& b = c.run.body;
  md << fmt::format("### llmux bench run: {} {} ({})\n\n", c.run.url.str(),
                    endpoint_path(b.dialect), b.model);
  std::string load;
  if (open)
    load = fmt::format(
        "open loop, Poisson arrivals at {:g} req/s{}", c.load.request_rate,
        c.load.concurrency ? fmt::format(" (at most {} in flight)", c.load.concurrency) : "");
  else if (!c.sweep.empty())
    load = "closed loop, concurrency sweep";
  else
    load = fmt::format("closed loop, concurrency {}", c.load.concurrency);
  std::string bound;
  if (c.load.num_requests) bound = fmt::format("{} requests", c.load.num_requests);
  if (c.load.duration_s > 0)
    bound += fmt::format("{}{:g} s", bound.empty() ? "" : ", at most ", c.load.duration_s);
  if (bound.empty()) bound = "one round";
  std::string warm;
  if (c.load.warmup_requests)
    warm = fmt::format(", warm-up {} requests excluded", c.load.warmup_requests);
  if (c.load.warmup_s > 0) warm = fmt::format(", warm-up {:g} s excluded", c.load.warmup_s);
  md << fmt::format("Load: {} ({} per level{}). Workload: {}. {}; {} connections.\n\n", load, bound,
                    warm, c.workload_desc,
                    b.stream ? "Streaming with stream_options.include_usage" : "Non-streaming",
                    to_string(c.run.client.mode));
  md << to_markdown(summary_table(c, levels));

  std::vector<std::string> notes;
  KneeResult knee;
  if (levels.size() > 1) {
    knee = detect_knee(points, c.knee);
    if (knee.saturated)
      notes.push_back(fmt::format(
          "Saturation knee at {} {:g} ({} tok/s): the next level gained less than {:g}% of linear "
          "scaling; the sweep stopped there.",
          open ? "rate" : "concurrency", knee.knee_concurrency, fmt_num(knee.knee_tok_s),
          c.knee.min_efficiency * 100));
    else
      notes.push_back("No saturation knee within the levels swept.");
    if (knee.peak_index)
      notes.push_back(
          fmt::format("Peak: {} tok/s at {} {:g}.", fmt_num(points[*knee.peak_index].tok_s),
                      open ? "rate" : "concurrency", points[*knee.peak_index].concurrency));
  }
  const LevelResult& last = levels.back();
  if (levels.size() == 1) {
    md << "\n";
    md << to_markdown(
        detail_table(last.agg, c.out.percentiles),
        MarkdownOptions{.title = "Latency distribution", .heading_level = 4, .notes = {}});
  }
  notes.push_back(
      "TTFT = request start to the first content token (a chat stream's role-only first chunk "
      "does not count); ITL counts a chunk of k tokens as k tokens of gap/k each; TPOT = (E2E - "
      "TTFT) / (output tokens - 1); per-stream tok/s = 1/TPOT; aggregate tok/s = all output "
      "tokens / wall time.");
  std::size_t est = 0, okn = 0;
  for (const auto& l : levels) {
    est += l.agg.estimated_requests;
    okn += l.agg.ok;
  }
  notes.push_back(est ? fmt::format("Output tokens: estimated with llmux's tokenizer for {} of {} "
                                    "requests (the server sent no usage); the rest from usage.",
                                    est, okn)
                      : "Output tokens: from the server's usage.");
  for (const auto& l : levels) {
    if (l.agg.failed) {
      auto ts = l.run.measured();
      notes.push_back(fmt::format("Errors at {}: {}; first: {}", l.label, error_summary(l.agg),
                                  first_error(ts)));
    }
  }
  if (!c.slo.empty()) {
    std::string s;
    if (c.slo.ttft_s) s += fmt::format(" TTFT <= {:g} ms", *c.slo.ttft_s * 1e3);
    if (c.slo.tpot_s) s += fmt::format(" TPOT <= {:g} ms", *c.slo.tpot_s * 1e3);
    if (c.slo.e2e_s) s += fmt::format(" E2E <= {:g} ms", *c.slo.e2e_s * 1e3);
    notes.push_back("Goodput: successful requests per second meeting every SLO:" + s + ".");
  }

  // Ground truth.
  json::object gt_json;
  if (c.sim_ground_truth) {
    std::vector<Record> all;
    for (const auto& l : levels) all.insert(all.end(), l.run.records.begin(), l.run.records.end());
    GroundTruthCheck g = check_against_sim(c.run.url, all);
    const Summary te = summarize(g.ttft_err_s), ie = summarize(g.itl_err_s),
                  ke = summarize(g.token_err_s), rd = summarize(g.request_delay_s);
    auto abs_of = [](std::vector<double> v) {
      for (auto& x : v) x = std::fabs(x);
      return summarize(v);
    };
    const Summary tea = abs_of(g.ttft_err_s), iea = abs_of(g.itl_err_s);
    md << "\n";
    Table t({"Timing error vs llmux sim ground truth", "samples", "p50 ms", "p99 ms",
             "|err| p50 ms", "|err| p99 ms", "max |err| ms"});
    t.add_row({"TTFT (client - sim)", std::to_string(te.count), ms(te.p50, 3), ms(te.p99, 3),
               ms(tea.p50, 3), ms(tea.p99, 3), ms(tea.max, 3)});
    t.add_row({"ITL per token (client gap - sim gap)", std::to_string(ie.count), ms(ie.p50, 3),
               ms(ie.p99, 3), ms(iea.p50, 3), ms(iea.p99, 3), ms(iea.max, 3)});
    t.add_row({"Token arrival (client read - sim send)", std::to_string(ke.count), ms(ke.p50, 3),
               ms(ke.p99, 3), "", "", ""});
    t.add_row({"Request delivery (sim arrival - client start)", std::to_string(rd.count),
               ms(rd.p50, 3), ms(rd.p99, 3), "", "", ""});
    md << to_markdown(t);
    gt_json["requests"] = g.requests;
    gt_json["missing"] = g.missing;
    gt_json["ttft_err_ms"] = to_json(te, 1e3);
    gt_json["ttft_abs_err_ms"] = to_json(tea, 1e3);
    gt_json["itl_err_ms"] = to_json(ie, 1e3);
    gt_json["itl_abs_err_ms"] = to_json(iea, 1e3);
    gt_json["token_arrival_err_ms"] = to_json(ke, 1e3);
    gt_json["request_delay_ms"] = to_json(rd, 1e3);
  }

  if (!c.out.out_dir.empty()) {
    const fs::path dir(c.out.out_dir);
    fs::create_directories(dir);
    json::object doc;
    doc["tool"] = "llmux bench run";
    doc["version"] = kVersion;
    doc["created_unix"] = unix_seconds();
    doc["settings"] = settings_json(c);
    json::object summary;
    for (const auto& l : levels) summary[l.label] = to_json(l.agg);
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
  md << "\n";
  for (const auto& n : notes) md << n << "\n\n";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// throughput and compare (the seed's scripts)

namespace {

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

RunOptions seed_options(const NamedUrl& t, const std::string& model, std::uint32_t max_tokens,
                        const http::ClientOptions& client, const std::string& id) {
  RunOptions ro;
  ro.url = t.url;
  ro.body.dialect = t.dialect;
  ro.body.model = model;
  ro.body.stream = false;
  ro.body.temperature = 0.0;
  ro.body.max_tokens = max_tokens;
  ro.client = client;
  ro.request_id_prefix = id;
  return ro;
}

Measured serial(const RunOptions& ro, std::string_view prompt, std::size_t repeat) {
  PromptItem p;
  p.text = std::string(prompt);
  LoadSpec spec;
  spec.concurrency = 1;
  spec.num_requests = repeat;
  Measured m;
  RunResult r = run_load(ro, spec, std::span<const PromptItem>(&p, 1));
  for (const auto& rec : r.records) {
    const RequestMetrics rm = derive(rec.t);
    if (rec.t.ok() && rm.e2e_tok_s) {
      m.tok_s.push_back(*rm.e2e_tok_s);
      m.prompt_tokens = rec.t.prompt_tokens.value_or(0);
    } else if (!rec.t.ok()) {
      ++m.failed;
      if (m.first_error.empty()) m.first_error = rec.t.error_message;
    }
  }
  double sum = 0;
  for (double v : m.tok_s) sum += v;
  m.mean = m.tok_s.empty() ? NAN : sum / m.tok_s.size();
  m.records = std::move(r.records);
  return m;
}

Measured burst(const RunOptions& ro, std::string_view prompt, std::size_t n) {
  PromptItem p;
  p.text = std::string(prompt);
  LoadSpec spec;
  spec.concurrency = n;
  spec.burst = true;
  RunResult r = run_load(ro, spec, std::span<const PromptItem>(&p, 1));
  Measured m;
  const auto ts = r.measured();
  Aggregate a = aggregate(ts);
  m.mean = a.ok ? a.output_tok_s : NAN;
  m.tok_s.push_back(m.mean);
  m.failed = a.failed;
  m.first_error = first_error(ts);
  m.wall_s = a.wall_s;
  m.tokens = a.output_tokens;
  m.records = std::move(r.records);
  return m;
}

std::string resolve_model(const std::string& given, const http::Url& url) {
  if (!given.empty()) return given;
  std::string err;
  std::string m = discover_model(url, &err);
  if (m.empty())
    throw std::runtime_error(
        fmt::format("cannot find the model of {} ({}); pass --model", url.str(), err));
  return m;
}

json::array records_json(const std::vector<Record>& rs, const std::string& level) {
  json::array a;
  for (const auto& r : rs) a.push_back(record_json(r, level));
  return a;
}

void write_outputs(const OutputOptions& out, const std::string& stem, json::object doc,
                   const std::vector<std::pair<std::string, Table>>& tables,
                   std::vector<std::string>& notes) {
  if (out.out_dir.empty()) return;
  const fs::path dir(out.out_dir);
  fs::create_directories(dir);
  write_file(dir / (stem + ".json"), pretty_json(doc));
  std::string files = (dir / (stem + ".json")).string();
  for (const auto& [name, t] : tables) {
    write_file(dir / (stem + "_" + name + ".csv"), to_csv(t));
    files += ", " + (dir / (stem + "_" + name + ".csv")).string();
  }
  notes.push_back("Written: " + files + ".");
}

}  // namespace

int bench_throughput(const ThroughputCommand& c, std::ostream& md) {
  struct TargetResult {
    std::string model;
    std::map<std::string, Measured> serial;
    std::map<std::size_t, Measured> levels;
  };
  static const char* kSizes[] = {"short", "medium", "long"};
  std::vector<TargetResult> res;
  for (const auto& t : c.targets) {
    TargetResult tr;
    tr.model = resolve_model(c.model, t.url);
    for (const char* size : kSizes) {
      auto ro =
          seed_options(t, tr.model, c.max_tokens, c.client, fmt::format("tp-{}-{}", t.name, size));
      tr.serial[size] = serial(ro, seed_prompt(size), c.repeat);
    }
    for (std::size_t n : c.levels) {
      auto ro =
          seed_options(t, tr.model, c.max_tokens, c.client, fmt::format("tp-{}-n{}", t.name, n));
      tr.levels[n] = burst(ro, seed_prompt("medium"), n);
    }
    res.push_back(std::move(tr));
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
    for (auto& r : res) row.push_back(fmt_num(r.serial[size].mean));
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
    for (auto& r : res) row.push_back(fmt_num(r.levels[n].mean));
    const double agg = res.front().levels[n].mean, single = res.front().serial["medium"].mean;
    row.push_back(fmt_num(agg / static_cast<double>(n)));
    row.push_back(fmt::format("{:.1f}x", agg / single));
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
  std::vector<std::string> notes;
  if (c.targets.size() > 1) {
    md << "\n";
    auto verdict = [&](const std::string& what, const std::vector<double>& v) {
      const bool incomplete =
          std::any_of(v.begin(), v.end(), [](double x) { return !std::isfinite(x) || x <= 0; });
      const double s = spread(v);
      std::string vals;
      for (std::size_t i = 0; i < v.size(); ++i)
        vals += fmt::format("{}{} {}", i ? ", " : "", c.targets[i].name, fmt_num(v[i]));
      if (incomplete) {
        md << fmt::format("- {}: {} tok/s: INCOMPLETE (a target has no figure: see the errors)\n",
                          what, vals);
        return;
      }
      md << fmt::format("- {}: {} tok/s: {} (spread {:.1f}%, threshold {:g}%)\n", what, vals,
                        s <= c.agree ? "AGREE" : "DIFFER", s * 100, c.agree * 100);
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
  std::size_t failed = 0;
  for (std::size_t i = 0; i < res.size(); ++i) {
    for (auto& [k, m] : res[i].serial)
      if (m.failed) {
        failed += m.failed;
        notes.push_back(fmt::format("{} serial {}: {} failed ({})", c.targets[i].name, k, m.failed,
                                    m.first_error));
      }
    for (auto& [k, m] : res[i].levels)
      if (m.failed) {
        failed += m.failed;
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
                            {"failed", m.failed}};
      r["serial_" + k] = records_json(m.records, "serial_" + k);
    }
    s["serial"] = std::move(ser);
    for (auto& [n, m] : res[i].levels) {
      s[fmt::format("n{}", n)] = json::object{{"tok_s", json_number(m.mean)},
                                              {"tokens", m.tokens},
                                              {"wall_s", json_number(m.wall_s)},
                                              {"failed", m.failed}};
      r[fmt::format("n{}", n)] = records_json(m.records, fmt::format("n{}", n));
    }
    summary[c.targets[i].name] = std::move(s);
    raw[c.targets[i].name] = std::move(r);
  }
  doc["summary"] = std::move(summary);
  doc["requests"] = std::move(raw);
  write_outputs(c.out, "throughput", std::move(doc), {{"serial", serial_t}, {"concurrent", conc_t}},
                notes);
  md << "\n";
  for (const auto& n : notes) md << n << "\n\n";
  return failed ? 1 : 0;
}

std::vector<NamedUrl> seed_paths(const http::Url& direct, const http::Url& gateway) {
  return {{"direct completions", direct, Dialect::completions},
          {"gateway completions", gateway, Dialect::completions},
          {"direct chat", direct, Dialect::chat},
          {"gateway chat", gateway, Dialect::chat}};
}

int bench_compare(const CompareCommand& c, std::ostream& md) {
  struct PathResult {
    std::string model;
    Measured serial;
    std::map<std::size_t, Measured> levels;
  };
  std::vector<PathResult> res;
  for (const auto& p : c.paths) {
    PathResult pr;
    pr.model = resolve_model(c.model, p.url);
    const std::string slug = [&] {
      std::string s = p.name;
      for (char& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    }();
    pr.serial = serial(seed_options(p, pr.model, c.max_tokens, c.client, "cmp-" + slug + "-serial"),
                       seed_prompt(c.prompt), c.repeat);
    for (std::size_t n : c.levels)
      pr.levels[n] = burst(
          seed_options(p, pr.model, c.max_tokens, c.client, fmt::format("cmp-{}-n{}", slug, n)),
          seed_prompt(c.prompt), n);
    res.push_back(std::move(pr));
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
  for (std::size_t i = 0; i < c.paths.size(); ++i) {
    const auto& p = c.paths[i];
    std::vector<std::string> row{p.name, std::string(endpoint_path(p.dialect)), p.url.str(),
                                 fmt_num(res[i].serial.mean)};
    for (std::size_t n : c.levels) row.push_back(fmt_num(res[i].levels[n].mean));
    t.add_row(row);
  }
  md << to_markdown(t);
  // Ratios: each non-direct path against the direct path of the same endpoint.
  std::vector<std::string> rh{"Path", "vs"};
  rh.push_back("Serial");
  for (std::size_t n : c.levels) rh.push_back(fmt::format("N={}", n));
  Table rt(rh);
  for (std::size_t i = 0; i < c.paths.size(); ++i) {
    if (c.paths[i].name.starts_with("direct")) continue;
    std::optional<std::size_t> d;
    for (std::size_t j = 0; j < c.paths.size(); ++j)
      if (c.paths[j].name.starts_with("direct") && c.paths[j].dialect == c.paths[i].dialect) d = j;
    if (!d) continue;
    std::vector<std::string> row{c.paths[i].name, c.paths[*d].name,
                                 fmt::format("{:.3f}x", res[i].serial.mean / res[*d].serial.mean)};
    for (std::size_t n : c.levels)
      row.push_back(fmt::format("{:.3f}x", res[i].levels[n].mean / res[*d].levels[n].mean));
    rt.add_row(row);
  }
  if (!rt.rows().empty())
    md << "\n"
       << to_markdown(rt, MarkdownOptions{.title = "Ratio to the direct path (tok/s)",
                                          .heading_level = 4,
                                          .notes = {}});
  std::vector<std::string> notes;
  notes.push_back(fmt::format(
      "Method (the seed's qwen36-gateway-vs-direct.py): serial = {} requests one after the other, "
      "tok/s = completion tokens / request time (mean); N=k = k requests started together, tok/s = "
      "all tokens / wall time until the last ends; {} connections.",
      c.repeat, to_string(c.client.mode)));
  std::size_t failed = 0;
  for (std::size_t i = 0; i < res.size(); ++i) {
    if (res[i].serial.failed) {
      failed += res[i].serial.failed;
      notes.push_back(fmt::format("{} serial: {} failed ({})", c.paths[i].name,
                                  res[i].serial.failed, res[i].serial.first_error));
    }
    for (auto& [n, m] : res[i].levels)
      if (m.failed) {
        failed += m.failed;
        notes.push_back(
            fmt::format("{} N={}: {} failed ({})", c.paths[i].name, n, m.failed, m.first_error));
      }
  }
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
  json::object summary, raw;
  for (std::size_t i = 0; i < res.size(); ++i) {
    json::object s{{"serial_tok_s", json_number(res[i].serial.mean)}};
    json::object r{{"serial", records_json(res[i].serial.records, "serial")}};
    for (auto& [n, m] : res[i].levels) {
      s[fmt::format("n{}_tok_s", n)] = json_number(m.mean);
      r[fmt::format("n{}", n)] = records_json(m.records, fmt::format("n{}", n));
    }
    summary[c.paths[i].name] = std::move(s);
    raw[c.paths[i].name] = std::move(r);
  }
  doc["summary"] = std::move(summary);
  doc["requests"] = std::move(raw);
  write_outputs(c.out, "compare", std::move(doc), {{"paths", t}, {"ratios", rt}}, notes);
  md << "\n";
  for (const auto& n : notes) md << n << "\n\n";
  return failed ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------
// report

int bench_report(const std::string& a_path, const std::string& b_path, double threshold,
                 bool show_all, std::ostream& md) {
  auto load = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) throw std::runtime_error(fmt::format("cannot open {}", p));
    std::stringstream ss;
    ss << f.rdbuf();
    boost::system::error_code ec;
    json::value v = json::parse(ss.str(), ec);
    if (ec || !v.is_object()) throw std::runtime_error(fmt::format("{}: not a JSON result", p));
    return v;
  };
  const json::value a = load(a_path), b = load(b_path);
  auto summary = [](const json::value& v) -> const json::value& {
    const json::value* s = v.get_object().if_contains("summary");
    return s ? *s : v;
  };
  const Comparison cmp =
      compare(flatten_numbers(summary(a)), flatten_numbers(summary(b)), {}, threshold);
  md << fmt::format("### llmux bench report: {} (A) vs {} (B)\n\n", a_path, b_path);
  md << fmt::format(
      "{} metrics compared, {} changed by more than {:g}%: {} regressions, {} "
      "improvements.\n\n",
      cmp.changes.size(), cmp.flagged, threshold * 100, cmp.regressions, cmp.improvements);
  if (cmp.flagged || show_all) md << to_markdown(comparison_table(cmp, !show_all));
  return cmp.flagged ? 1 : 0;
}

}  // namespace llmux::bench
