// SPDX-License-Identifier: Apache-2.0
// `llmux demo`: the seed's whole experiment on one machine. Starts two simulated DGX Sparks and
// the gateway with the seed's routing on free loopback ports (children of this process, started
// from this very binary), runs both seed benchmarks with `llmux bench`, prints the report beside
// the seed's published figures (cli/demo_report.cpp), and stops everything it started — also on
// Ctrl-C.
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
#include "cli/commands.hpp"
#include "cli/demo_agent.hpp"
#include "cli/demo_report.hpp"
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
  for (auto& child : g_children) {
    pid_t pid = child.load();
    if (pid > 0) ::kill(pid, SIGTERM);
  }
  if (g_temp_dir[0]) {
    // fork, execve and waitpid are async-signal-safe; std::filesystem is not.
    const pid_t remover = ::fork();
    if (remover == 0) {
      char* const argv[] = {const_cast<char*>("rm"), const_cast<char*>("-rf"), g_temp_dir, nullptr};
      ::execve("/bin/rm", argv, ::environ);
      ::_exit(127);
    }
    if (remover > 0) ::waitpid(remover, nullptr, 0);
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
    for (auto& child : g_children) {
      pid_t expected = 0;
      if (child.compare_exchange_strong(expected, pid_)) break;
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
      auto document = json::parse(line, ec);
      if (!ec && document.is_object() && document.as_object().contains("port")) {
        return static_cast<int>(document.at("port").to_number<std::int64_t>());
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
    for (auto& child : g_children) {
      pid_t expected = pid_;
      child.compare_exchange_strong(expected, 0);
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    pid_ = -1;
  }
  std::string name_;
  pid_t pid_ = -1;
  int fd_ = -1;
};

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
  auto options = std::make_shared<Opts>();
  sub->add_flag("--quick", options->quick,
                "Run the simulated clock 10x faster (the whole experiment in well under a minute)");
  sub->add_option("--time-scale", options->time_scale,
                  "Simulated clock speed-up (figures are reported in simulated time)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 100.0));
  sub->add_option("--out", options->out,
                  "Directory for the report (index.html), the benchmarks' JSON, CSV and charts "
                  "and the logs (default: a temporary directory, removed at the end)");
  sub->add_option("--repeat", options->repeat, "Serial runs of each prompt (the seed: 3)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--preset", options->preset,
                  "The simulators' preset (see docs/sim.md): dgx-spark-qwen3.6-35b-a3b-fp8, "
                  "calibrated to the seed, or dgx-spark-qwen3.6-35b-a3b-fp8-atlas, fitted to "
                  "inference-atlas's published sweeps")
      ->capture_default_str()
      ->check(
          CLI::IsMember({"dgx-spark-qwen3.6-35b-a3b-fp8", "dgx-spark-qwen3.6-35b-a3b-fp8-atlas"}));

  return [options]() -> int {
    double scale = options->time_scale;
    std::size_t repeat = options->repeat;
    if (options->quick) {
      scale = std::max(scale, 10.0);
    }
    const bool temp = options->out.empty();
    fs::path dir = temp ? fs::temp_directory_path() / fmt::format("llmux-demo-{}", ::getpid())
                        : fs::path(options->out);
    fs::create_directories(dir);
    TempDirGuard guard;
    if (temp) {
      guard.dir = dir;
      std::snprintf(g_temp_dir, sizeof g_temp_dir, "%s", dir.c_str());
    }
    const bool progress = ::isatty(STDERR_FILENO) != 0;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);

    const std::string scale_text = fmt::format("{}", scale);
    std::cerr << fmt::format(
        "llmux demo: starting two simulated DGX Sparks and the gateway "
        "(time scale {}), logs in {}{}\n",
        scale, dir.string(), temp ? " (removed at the end)" : "");
    int port1, port2, gateway_port;
    std::unique_ptr<Child> server1, server2, gateway;
    // The agent turn's script: only its own requests match it (demo_agent.hpp).
    const fs::path script = dir / "agent_script.yaml";
    std::ofstream(script) << demo_agent_script();
    try {
      server1 = std::make_unique<Child>(
          "server1",
          std::vector<std::string>{"sim", "--port", "0", "--preset", options->preset,
                                   "--time-scale", scale_text, "--script", script.string()},
          dir / "server1.log");
      server2 = std::make_unique<Child>(
          "server2",
          std::vector<std::string>{"sim", "--port", "0", "--preset", options->preset,
                                   "--time-scale", scale_text, "--script", script.string()},
          dir / "server2.log");
      port1 = server1->wait_ready(std::chrono::seconds(15));
      port2 = server2->wait_ready(std::chrono::seconds(15));
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
          port1, port2, (dir / "access.log").string());
      gateway = std::make_unique<Child>(
          "gateway", std::vector<std::string>{"gateway", "--config", yaml.string()},
          dir / "gateway.log");
      gateway_port = gateway->wait_ready(std::chrono::seconds(15));
      std::cerr << fmt::format(
          "llmux demo: the gateway's live dashboard: http://127.0.0.1:{}/dashboard/ (benchmark 1 "
          "shows there as each machine's running requests, benchmark 2 as tokens/s)\n",
          gateway_port);
    } catch (const std::exception& error) {
      guard.keep = true;
      spdlog::error("llmux demo: {} (see the logs in {}, kept)", error.what(), dir.string());
      return 1;
    }
    auto url = [](int port) { return *http::Url::parse(fmt::format("http://127.0.0.1:{}", port)); };

    // Benchmark 1: each machine directly (the seed's qwen36-throughput.py).
    std::cerr << "llmux demo: benchmark 1 — each machine directly (serial prompts, N=4, N=8)\n";
    bench::ThroughputCommand throughput;
    throughput.targets = {{"server1", url(port1), bench::Dialect::completions},
                          {"server2", url(port2), bench::Dialect::completions}};
    throughput.repeat = repeat;
    throughput.levels = {4, 8};
    throughput.out.out_dir = (dir / "throughput").string();
    throughput.out.plots = !temp;  // charts only where they stay
    throughput.out.progress = progress;
    std::ostringstream md1;
    const int st1 = bench::bench_throughput(throughput, md1);
    if (st1 > 1) {
      guard.keep = true;
      spdlog::error("llmux demo: benchmark 1 failed (logs kept in {}):\n{}", dir.string(),
                    md1.str());
      return 1;
    }
    // Benchmark 2: direct vs gateway (the seed's qwen36-gateway-vs-direct.py).
    std::cerr << "llmux demo: benchmark 2 — direct vs gateway (serial, N=8, N=16)\n";
    bench::CompareCommand cmp;
    cmp.paths = bench::seed_paths(url(port1), url(gateway_port));
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
    // One agent turn with a tool call through the gateway, as the Codex CLI takes it, and as
    // Claude Code does.
    std::cerr << "llmux demo: one agent turn with a tool call through the gateway\n";
    std::string agent, claude_code;
    try {
      agent = demo_agent_turn(gateway_port, dir);
      claude_code = demo_claude_code_turn(gateway_port, dir);
    } catch (const std::exception& error) {
      guard.keep = true;
      spdlog::error("llmux demo: {} (logs kept in {})", error.what(), dir.string());
      return 1;
    }
    gateway->stop();
    server1->stop();
    server2->stop();

    // The report, in simulated time (wall-clock tok/s divided by the time scale).
    DemoRun run;
    run.dir = dir;
    run.kept = !temp;
    run.time_scale = scale;
    run.preset = options->preset;
    run.server1_port = port1;
    run.server2_port = port2;
    run.gateway_port = gateway_port;
    run.throughput_markdown = md1.str();
    run.compare_markdown = md2.str();
    run.agent_markdown = agent;
    run.claude_code_markdown = claude_code;
    if (!write_demo_report(run, std::cout)) return 1;
    if (st1 || st2) {
      spdlog::error("llmux demo: requests failed (see the benchmarks' notes{})",
                    temp ? "; rerun with --out DIR to keep them" : "");
      return 1;
    }
    return 0;
  };
}

}  // namespace llmux::cli
