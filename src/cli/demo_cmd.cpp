// SPDX-License-Identifier: Apache-2.0
// `llmux demo`: the seed's whole experiment on one machine. Starts two simulated DGX Sparks and
// the gateway with the seed's routing on free loopback ports (children of this process, started
// from this very binary), runs both seed benchmarks with `llmux bench`, prints the report beside
// the seed's published figures, and stops everything it started — also on Ctrl-C.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/commands.hpp"
#include "bench/html_report.hpp"
#include "cli/commands.hpp"
#include "cli/demo_agent.hpp"
#include "core/process.hpp"

namespace llmux::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// Children to kill if the demo is interrupted (async-signal-safe access only).
constexpr int kMaxChildren = 8;
std::atomic<pid_t> g_children[kMaxChildren];
// The temporary directory to remove if the demo is interrupted ("" = none: --out was given).
char g_temp_dir[4096];

void on_interrupt(int sig) {
  for (auto& c : g_children) {
    pid_t p = c.load();
    if (p > 0) ::kill(p, SIGTERM);
  }
  if (g_temp_dir[0]) {
    // fork, execve and waitpid are async-signal-safe; std::filesystem is not.
    const pid_t rm = ::fork();
    if (rm == 0) {
      char* const argv[] = {const_cast<char*>("rm"), const_cast<char*>("-rf"), g_temp_dir, nullptr};
      ::execve("/bin/rm", argv, ::environ);
      ::_exit(127);
    }
    if (rm > 0) ::waitpid(rm, nullptr, 0);
  }
  static constexpr char kMsg[] =
      "\nllmux demo: interrupted, stopped the simulators and the gateway\n";
  ssize_t ignored = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  (void)ignored;
  ::_exit(128 + sig);
}

/// A child process of this binary that prints a JSON ready line with its port. Its stderr goes
/// to `log` (or, if that cannot be opened, to the demo's own); it dies with the demo (SIGTERM).
class Child {
 public:
  Child(const std::string& name, const std::vector<std::string>& args, const fs::path& log)
      : name_(name) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    std::vector<std::string> argv{"/proc/self/exe"};
    argv.insert(argv.end(), args.begin(), args.end());
    try {
      pid_ = proc::spawn(argv, {.stdin_fd = proc::kInherit,
                                .stdout_fd = out[1],
                                .stderr_fd = err >= 0 ? err : proc::kInherit,
                                .death_signal = SIGTERM});  // never outlive the demo
    } catch (...) {
      ::close(out[0]);
      ::close(out[1]);
      if (err >= 0) ::close(err);
      throw;
    }
    ::close(out[1]);
    if (err >= 0) ::close(err);
    fd_ = out[0];
    for (auto& c : g_children) {
      pid_t expected = 0;
      if (c.compare_exchange_strong(expected, pid_)) break;
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(); }

  /// Waits for the ready line (the first stdout line that is a JSON object with "port"; other
  /// lines are skipped); returns the port.
  int wait_ready(std::chrono::seconds timeout) {
    const auto deadline = proc::Clock::now() + timeout;
    std::string buffer, line;
    while (proc::read_line(fd_, buffer, line, deadline) == proc::LineStatus::line) {
      boost::system::error_code ec;
      auto v = json::parse(line, ec);
      if (!ec && v.is_object() && v.as_object().contains("port")) {
        return static_cast<int>(v.at("port").to_number<std::int64_t>());
      }
    }
    throw std::runtime_error(fmt::format("{} did not become ready", name_));
  }

  /// SIGTERM, up to 2 s to exit, then SIGKILL; reaps it.
  void stop() {
    if (pid_ <= 0) return;
    proc::stop(pid_, std::chrono::seconds(2));
    forget();
  }

 private:
  void forget() {
    for (auto& c : g_children) {
      pid_t expected = pid_;
      c.compare_exchange_strong(expected, 0);
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    pid_ = -1;
  }
  std::string name_;
  pid_t pid_ = -1;
  int fd_ = -1;
};

json::value read_json(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

double num(const json::value& v, std::initializer_list<std::string_view> path) {
  const json::value* cur = &v;
  for (auto k : path) {
    if (!cur->is_object() || !cur->as_object().contains(k)) return NAN;
    cur = &cur->as_object().at(k);
  }
  return cur->is_number() ? cur->to_number<double>() : NAN;
}

std::string verdict(bool ok) {
  return ok ? "yes" : "**no**";
}

/// What a preset's simulators are checked against: the figures it was fitted to.
struct Reference {
  std::string source;         // who measured them
  double single = 0, n8 = 0;  // tok/s: one stream, eight (the seed's method)
  std::string n16;            // what N=16 on one machine did
  bool n16_saturates = true;  // true: at most 1.2x N=8; false: above it
};

Reference reference_for(const std::string& preset) {
  if (preset == "dgx-spark-qwen3.6-35b-a3b-fp8-atlas")
    return {"inference-atlas, one Spark", 54.5, 174.3, "keeps gaining (249 vs 174 tok/s, 1.43x)",
            false};
  return {"seed", 50.0, 300.0, "one machine saturates", true};
}

/// Removes the demo's temporary directory when the demo ends, unless told to keep it.
struct TempDirGuard {
  fs::path dir;
  bool keep = false;
  ~TempDirGuard() {
    g_temp_dir[0] = '\0';
    if (dir.empty() || keep) return;
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

Runner add_demo(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "demo",
      "The seed's whole experiment on one machine: two simulated DGX Sparks, the gateway with the "
      "seed's routing, both seed benchmarks, one report beside the seed's published figures.");
  struct Opts {
    bool quick = false;
    double time_scale = 1.0;
    std::string out;
    std::size_t repeat = 3;
    std::string preset = "dgx-spark-qwen3.6-35b-a3b-fp8";
  };
  auto o = std::make_shared<Opts>();
  sub->add_flag("--quick", o->quick,
                "Run the simulated clock 10x faster (the whole experiment in well under a minute)");
  sub->add_option("--time-scale", o->time_scale,
                  "Simulated clock speed-up (figures are reported in simulated time)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 100.0));
  sub->add_option("--out", o->out,
                  "Directory for the report (index.html), the benchmarks' JSON, CSV and charts "
                  "and the logs (default: a temporary directory, removed at the end)");
  sub->add_option("--repeat", o->repeat, "Serial runs of each prompt (the seed: 3)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--preset", o->preset,
                  "The simulators' preset (see docs/sim.md): dgx-spark-qwen3.6-35b-a3b-fp8, "
                  "calibrated to the seed, or dgx-spark-qwen3.6-35b-a3b-fp8-atlas, fitted to "
                  "inference-atlas's published sweeps")
      ->capture_default_str()
      ->check(
          CLI::IsMember({"dgx-spark-qwen3.6-35b-a3b-fp8", "dgx-spark-qwen3.6-35b-a3b-fp8-atlas"}));

  return [o]() -> int {
    double scale = o->time_scale;
    std::size_t repeat = o->repeat;
    if (o->quick) {
      scale = std::max(scale, 10.0);
    }
    const bool temp = o->out.empty();
    fs::path dir = temp ? fs::temp_directory_path() / fmt::format("llmux-demo-{}", ::getpid())
                        : fs::path(o->out);
    fs::create_directories(dir);
    TempDirGuard guard;
    if (temp) {
      guard.dir = dir;
      std::snprintf(g_temp_dir, sizeof g_temp_dir, "%s", dir.c_str());
    }
    const bool progress = ::isatty(STDERR_FILENO) != 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);

    const std::string ts = fmt::format("{}", scale);
    std::cerr << fmt::format(
        "llmux demo: starting two simulated DGX Sparks and the gateway "
        "(time scale {}), logs in {}{}\n",
        scale, dir.string(), temp ? " (removed at the end)" : "");
    int p1, p2, pg;
    std::unique_ptr<Child> s1, s2, gw;
    // The agent turn's script: only its own requests match it (demo_agent.hpp).
    const fs::path script = dir / "agent_script.yaml";
    std::ofstream(script) << demo_agent_script();
    try {
      s1 = std::make_unique<Child>(
          "server1",
          std::vector<std::string>{"sim", "--port", "0", "--preset", o->preset, "--time-scale", ts,
                                   "--script", script.string()},
          dir / "server1.log");
      s2 = std::make_unique<Child>(
          "server2",
          std::vector<std::string>{"sim", "--port", "0", "--preset", o->preset, "--time-scale", ts,
                                   "--script", script.string()},
          dir / "server2.log");
      p1 = s1->wait_ready(std::chrono::seconds(15));
      p2 = s2->wait_ready(std::chrono::seconds(15));
      // The seed's gateway (examples/seed.yaml) with the simulators' loopback addresses.
      const fs::path yaml = dir / "gateway.yaml";
      std::ofstream(yaml) << fmt::format(
          "listen: \"127.0.0.1:0\"\n"
          "threads: 2\n"
          "backends:\n"
          "  - {{name: server1, url: \"http://127.0.0.1:{}\"}}\n"
          "  - {{name: server2, url: \"http://127.0.0.1:{}\"}}\n"
          "routes:\n"
          "  - {{name: responses, match: {{path_prefix: /v1/responses}}, backends: [server1], "
          "policy: first}}\n"
          "  - {{name: chat, match: {{path: /v1/chat/completions}}, backends: [server1, server2], "
          "policy: round_robin}}\n"
          "  - {{name: default, match: {{path_prefix: /}}, backends: [server1], policy: first}}\n"
          "access_log: {}\n"
          // The dashboard shows each machine's own running/waiting counts, so benchmark 1
          // (each machine directly, not through the gateway) is seen there too.
          "backend_metrics: {{enabled: true}}\n",
          p1, p2, (dir / "access.log").string());
      gw = std::make_unique<Child>("gateway",
                                   std::vector<std::string>{"gateway", "--config", yaml.string()},
                                   dir / "gateway.log");
      pg = gw->wait_ready(std::chrono::seconds(15));
      std::cerr << fmt::format(
          "llmux demo: the gateway's live dashboard: http://127.0.0.1:{}/dashboard/ (benchmark 1 "
          "shows there as each machine's running requests, benchmark 2 as tokens/s)\n",
          pg);
    } catch (const std::exception& e) {
      guard.keep = true;
      spdlog::error("llmux demo: {} (see the logs in {}, kept)", e.what(), dir.string());
      return 1;
    }
    auto url = [](int port) { return *http::Url::parse(fmt::format("http://127.0.0.1:{}", port)); };

    // Benchmark 1: each machine directly (the seed's qwen36-throughput.py).
    std::cerr << "llmux demo: benchmark 1 — each machine directly (serial prompts, N=4, N=8)\n";
    bench::ThroughputCommand tp;
    tp.targets = {{"server1", url(p1), bench::Dialect::completions},
                  {"server2", url(p2), bench::Dialect::completions}};
    tp.repeat = repeat;
    tp.levels = {4, 8};
    tp.out.out_dir = (dir / "throughput").string();
    tp.out.plots = !temp;  // charts only where they stay
    tp.out.progress = progress;
    std::ostringstream md1;
    const int st1 = bench::bench_throughput(tp, md1);
    if (st1 > 1) {
      guard.keep = true;
      spdlog::error("llmux demo: benchmark 1 failed (logs kept in {}):\n{}", dir.string(),
                    md1.str());
      return 1;
    }
    // Benchmark 2: direct vs gateway (the seed's qwen36-gateway-vs-direct.py).
    std::cerr << "llmux demo: benchmark 2 — direct vs gateway (serial, N=8, N=16)\n";
    bench::CompareCommand cmp;
    cmp.paths = bench::seed_paths(url(p1), url(pg));
    cmp.repeat = repeat;
    cmp.levels = {8, 16};
    cmp.out.out_dir = (dir / "compare").string();
    cmp.out.plots = !temp;
    cmp.out.progress = progress;
    std::ostringstream md2;
    const int st2 = bench::bench_compare(cmp, md2);
    if (st2 > 1) {
      guard.keep = true;
      spdlog::error("llmux demo: benchmark 2 failed (logs kept in {}):\n{}", dir.string(),
                    md2.str());
      return 1;
    }
    // One agent turn with a tool call through the gateway, as the Codex CLI takes it.
    std::cerr << "llmux demo: one agent turn with a tool call through the gateway\n";
    std::string agent;
    try {
      agent = demo_agent_turn(pg, dir);
    } catch (const std::exception& e) {
      guard.keep = true;
      spdlog::error("llmux demo: {} (logs kept in {})", e.what(), dir.string());
      return 1;
    }
    gw->stop();
    s1->stop();
    s2->stop();

    // The report, in simulated time (wall-clock tok/s divided by the time scale).
    json::value t, c;
    try {
      t = read_json(dir / "throughput" / "throughput.json");
      c = read_json(dir / "compare" / "compare.json");
    } catch (const std::exception& e) {
      spdlog::error("llmux demo: cannot read the benchmark results: {}", e.what());
      return 1;
    }
    const json::value& ts_ = t.at("summary");
    const json::value& cs = c.at("summary");
    auto tok = [&](double v) { return v / scale; };
    const double s1_single = tok(num(ts_, {"server1", "serial", "medium", "tok_s"}));
    const double s2_single = tok(num(ts_, {"server2", "serial", "medium", "tok_s"}));
    const double s1_n8 = tok(num(ts_, {"server1", "n8", "tok_s"}));
    const double s2_n8 = tok(num(ts_, {"server2", "n8", "tok_s"}));
    const double agree = std::abs(s1_single - s2_single) / std::max(s1_single, s2_single);
    const double dc = tok(num(cs, {"direct completions", "serial_tok_s"}));
    const double gc = tok(num(cs, {"gateway completions", "serial_tok_s"}));
    const double dh = tok(num(cs, {"direct chat", "serial_tok_s"}));
    const double gh = tok(num(cs, {"gateway chat", "serial_tok_s"}));
    const double d16 = tok(num(cs, {"direct chat", "n16_tok_s"}));
    const double g16 = tok(num(cs, {"gateway chat", "n16_tok_s"}));
    const double g8 = tok(num(cs, {"gateway chat", "n8_tok_s"}));
    const double both = s1_n8 + s2_n8;
    const double d8 = tok(num(cs, {"direct chat", "n8_tok_s"}));
    const double s1_n4 = tok(num(ts_, {"server1", "n4", "tok_s"}));
    auto ovh = [](double direct, double via) { return (direct - via) / direct; };
    // The gateway's own cost per request (wall clock: the gateway does not run on the simulated
    // clock), from compare's added latency.
    auto added = [&](const char* path) {
      const double p50 = num(cs, {path, "vs_direct", "serial", "added_latency_p50_ms"});
      return std::isfinite(p50) ? fmt::format(" ({:+.1f} ms p50 per request, wall clock)", p50)
                                : std::string();
    };
    const Reference refs = reference_for(o->preset);
    const bool seed_ref = refs.source == "seed";
    // The seed column's calibration cells, or the preset's own reference figures.
    auto refd = [&](std::string text) {
      return seed_ref ? text : fmt::format("{}: {}", refs.source, text);
    };
    auto near = [](double v, double ref) { return std::abs(v - ref) <= 0.1 * ref; };
    const std::string busy = fmt::format(
        "The simulators ({}) are calibrated to the {} figures; a figure this far off means the "
        "machine running the demo was too busy to keep the simulated clock (try without "
        "--quick, or on an idle machine).",
        o->preset, seed_ref ? "seed's" : refs.source);

    // The full table (HTML) and the Markdown one, whose explanations are numbered notes below it.
    const std::string ref_col =
        seed_ref ? "Seed (two real Sparks)" : "Seed (two real Sparks) or " + refs.source;
    bench::Table fig({"Figure", ref_col, "llmux demo", "Matches", "Why it differs from the seed"},
                     {bench::Align::left, bench::Align::left, bench::Align::right,
                      bench::Align::left, bench::Align::left});
    bench::Table fig_md({"Figure", ref_col, "llmux demo", "Matches", "Why"},
                        {bench::Align::left, bench::Align::left, bench::Align::right,
                         bench::Align::left, bench::Align::left});
    std::vector<std::string> whys;
    auto add = [&](std::vector<std::string> cells) {
      std::string ref;
      if (!cells[4].empty()) {
        whys.push_back(fmt::format("[{}] {}: {}", whys.size() + 1, cells[0], cells[4]));
        ref = fmt::format("[{}]", whys.size());
      }
      fig_md.add_row({cells[0], cells[1], cells[2], cells[3], ref});
      fig.add_row(std::move(cells));
    };
    auto row = [&](std::string what, std::string seed, std::string demo, bool ok, std::string why) {
      add({std::move(what), std::move(seed), std::move(demo), verdict(ok),
           ok ? std::string() : std::move(why)});
    };
    const std::string single_ref = refd(fmt::format("~{:.0f} tok/s", refs.single));
    row("Single stream, server1 (medium prompt)", single_ref,
        fmt::format("{:.1f} tok/s", s1_single), near(s1_single, refs.single), busy);
    row("Single stream, server2", single_ref, fmt::format("{:.1f} tok/s", s2_single),
        near(s2_single, refs.single), busy);
    row("The two machines agree", "within 2%", fmt::format("{:.1f}% apart", agree * 100),
        agree <= 0.02, busy);
    row("N=8 aggregate, per machine", refd(fmt::format("~{:.0f} tok/s", refs.n8)),
        fmt::format("{:.0f} / {:.0f} tok/s", s1_n8, s2_n8),
        near(s1_n8, refs.n8) && near(s2_n8, refs.n8), busy);
    row("Gateway overhead, serial, completions", "< 5%",
        fmt::format("{:+.2f}%{}", ovh(dc, gc) * 100, added("gateway completions")),
        ovh(dc, gc) < 0.05, busy);
    row("Gateway overhead, serial, chat", "< 5%",
        fmt::format("{:+.2f}%{}", ovh(dh, gh) * 100, added("gateway chat")), ovh(dh, gh) < 0.05,
        busy);
    // These two always differ from the seed in size: say why.
    add({"N=8 via gateway, chat (4 + 4)", "slightly above direct",
         fmt::format("{:.0f} tok/s ({:.2f}× direct N=8)", g8, g8 / d8), verdict(g8 > d8),
         fmt::format("Above one machine's N=8 ({:.0f} tok/s) because it spans two: round "
                     "robin sends 4 requests to each machine, so this is two machines' N=4 "
                     "(server1's N=4: {:.0f} tok/s), scale-out rather than a faster path. The "
                     "seed only reports \"slightly above\"; its client reached the machines "
                     "over Tailscale from a laptop, which the demo's loopback does not have.",
                     d8, s1_n4)});
    add({"N=16 via gateway, chat, vs both machines' N=8 sum", "~485 of ~600 tok/s (81%)",
         fmt::format("{:.0f} of {:.0f} tok/s ({:.0f}%)", g16, both, g16 / both * 100),
         verdict(g16 / both >= 0.81),
         g16 / both > 0.9
             ? std::string(
                   "Near 100% where the seed had 81%: the two simulated machines are identical "
                   "and nothing else uses them, so round robin splits the burst of 16 into "
                   "exactly 8 + 8 and each machine runs its N=8; the gateway's own cost is the "
                   "serial rows' added latency. The seed lost ~19% to an uneven split and the "
                   "Python proxy.")
             : std::string(g16 / both >= 0.81 ? "" : busy)});
    row("N=16 direct to server1, chat", refd(refs.n16),
        fmt::format("{:.0f} tok/s ({:.2f}× its N=8)", d16, d16 / s1_n8),
        refs.n16_saturates ? d16 / s1_n8 <= 1.2 : d16 / s1_n8 > 1.2, busy);

    const std::string intro = fmt::format(
        "Two simulated DGX Sparks (`llmux sim --preset {}`, "
        "Qwen3.6-35B-A3B) on 127.0.0.1:{} and :{}, and `llmux gateway` with the seed's routing "
        "(`/v1/responses*` → server1, chat round-robin, the rest → server1) on :{}. "
        "Non-streaming requests as the seed's scripts send them (fresh connection each, "
        "temperature 0, max_tokens 128); tok/s = completion_tokens / wall time.{}{}",
        o->preset, p1, p2, pg,
        seed_ref ? std::string()
                 : " The calibration rows compare with inference-atlas's published sweep of the "
                   "same model on one Spark, which this preset is fitted to (docs/sim.md); the "
                   "other rows with the seed.",
        scale != 1.0
            ? fmt::format(" Simulated clock {}× faster; figures are in simulated time.", scale)
            : std::string());
    const std::string closing =
        "The seed lost ~19% of the two machines at N=16 to round-robin imbalance and proxy "
        "overhead; a ratio near 100% here means the gateway adds no measurable cost and round "
        "robin splits a burst of 16 evenly (8 + 8).";
    std::ostream& out = std::cout;
    out << "# llmux demo — the seed's experiment on one machine\n\n" << intro << "\n\n";
    out << bench::to_markdown(fig_md) << "\n";
    for (const auto& w : whys) out << w << "\n\n";
    out << closing << "\n";
    out << "\n## One agent turn with a tool call, through the gateway\n\n"
        << "What the Codex CLI does on each tool call (docs/codex.md), played by the demo; the "
           "simulators answer it from a script (`llmux sim --script`).\n\n"
        << agent;
    if (scale == 1.0) {
      out << "\n## Benchmark 1: each machine directly (`llmux bench throughput`)\n\n"
          << md1.str() << "\n## Benchmark 2: direct vs gateway (`llmux bench compare`)\n\n"
          << md2.str();
    } else if (!temp) {
      out << fmt::format(
          "\nThe two benchmarks' own reports (in wall-clock units, ×{}) and every "
          "request's timings: {}/throughput and {}/compare.\n",
          scale, dir.string(), dir.string());
    }
    if (!temp) {
      bench::HtmlReport html;
      html.title = "llmux demo — the seed's experiment on one machine";
      html.intro = intro;
      html.sections.push_back({"Beside the seed's published figures", fig, {closing}});
      for (const char* c :
           {"throughput/charts/tok_s_vs_concurrency.svg", "compare/charts/tok_s_vs_concurrency.svg",
            "compare/charts/n16_e2e.svg", "compare/charts/tok_s_over_time.svg"})
        if (fs::exists(dir / c)) html.charts.push_back(c);
      if (html.charts.empty())
        html.notes.push_back(
            "Charts skipped: gnuplot is not installed (apt-get install "
            "gnuplot-nox); the data are in throughput/ and compare/.");
      html.files = {{"throughput/index.html", "benchmark 1, each machine directly (wall clock)"},
                    {"compare/index.html", "benchmark 2, direct vs gateway (wall clock)"},
                    {"gateway.log", "the gateway's log"},
                    {"access.log", "the gateway's access log"}};
      std::ofstream(dir / "index.html") << bench::to_html(html);
      out << fmt::format("\nReport with charts: {}\n", (dir / "index.html").string());
    }
    if (st1 || st2) {
      spdlog::error("llmux demo: requests failed (see the benchmarks' notes{})",
                    temp ? "; rerun with --out DIR to keep them" : "");
      return 1;
    }
    return 0;
  };
}

}  // namespace llmux::cli
