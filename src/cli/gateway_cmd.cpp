// SPDX-License-Identifier: Apache-2.0
// `llmux gateway` and `llmux client-config`.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <thread>

#include "cli/commands.hpp"
#include "config/codex_profiles.hpp"
#include "config/config.hpp"
#include "config/lint.hpp"
#include "config/preflight.hpp"
#include "config/summary.hpp"
#include "core/cpus.hpp"
#include "core/logging.hpp"
#include "core/signals.hpp"
#include "gateway/gateway.hpp"

namespace llmux::cli {
namespace {

constexpr config::Millis kProbeTimeout{2000};

/// The warnings about what was given: lint() of the file's text, or the quick form's URLs.
std::vector<config::ConfigWarning> warnings_for(const std::string& config_path,
                                                const config::GatewayConfig& cfg) {
  if (!config_path.empty()) {
    std::ifstream in(config_path, std::ios::binary);
    return config::lint(
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  std::vector<config::ConfigWarning> out;
  for (const auto& b : cfg.backends)
    if (auto w = config::lint_backend_url("--backend " + b.name, b.url)) out.push_back(*w);
  return out;
}

/// `--check [--probe]` on a valid config: what it says, what start-up would find on this
/// machine, and (probe) what each backend answers. Exit status: 0 when every check passed
/// (warnings allowed), 1 when one failed. docs/config.md shows the output.
int run_check(const config::GatewayConfig& cfg, const std::vector<config::ConfigWarning>& warnings,
              bool probe) {
  std::cout << config::describe(cfg, static_cast<unsigned>(usable_cpus().cpus));
  if (!warnings.empty()) {
    std::cout << "warnings:\n";
    for (const auto& w : warnings) std::cout << "  " << w.to_string() << "\n";
  }
  std::vector<std::string> problems;
  auto print = [&](const config::CheckResult& r) {
    std::cout << (r.ok ? "  ok    " : "  FAIL  ") << r.to_string() << "\n";
    if (!r.ok) problems.push_back(r.to_string());
  };
  std::cout << "start-up checks:\n";
  std::vector<const config::Backend*> resolved;
  for (const auto& b : cfg.backends) {
    const auto r = config::check_resolves(b);
    if (r.ok) resolved.push_back(&b);
    print(r);
  }
  print(config::check_access_log(cfg.access_log.target));
  for (const auto& l : cfg.listeners) print(config::check_listener(l));
  if (probe) {
    std::cout << "probe (each request within " << config::format_duration(kProbeTimeout) << "):\n";
    std::cout.flush();
    for (const auto& r : config::probe_backends(resolved, kProbeTimeout)) print(r);
    for (const auto& b : cfg.backends)
      if (std::find(resolved.begin(), resolved.end(), &b) == resolved.end())
        std::cout << "  skip  backend " << b.name << ": not probed (its host does not resolve)\n";
  }
  if (problems.empty()) {
    std::cout << "check OK";
    if (!warnings.empty())
      std::cout << " (" << warnings.size() << " warning" << (warnings.size() == 1 ? "" : "s")
                << ")";
    std::cout << "\n";
    return 0;
  }
  const std::string n =
      std::to_string(problems.size()) + (problems.size() == 1 ? " problem" : " problems");
  std::cout << "check FAILED: " << n << "\n";
  std::cout.flush();
  std::cerr << "llmux gateway --check: " << n << ":\n";
  for (const auto& p : problems) std::cerr << "  " << p << "\n";
  return 1;
}

/// `--reload`: the configuration was checked; SIGHUP to the gateway named by the pid file.
int send_reload(const config::GatewayConfig& cfg, const std::string& config_path) {
  if (config_path.empty()) {
    spdlog::error(
        "--reload needs --config FILE: a gateway started with --backend has no file to reload");
    return 2;
  }
  if (cfg.pid_file.empty()) {
    spdlog::error("--reload: no pid file; set pid_file in {} or give --pid-file", config_path);
    return 2;
  }
  std::string err;
  const pid_t pid = read_pid_file(cfg.pid_file, err);
  if (pid < 0) {
    spdlog::error("--reload: {}", err);
    return 1;
  }
  if (::kill(pid, SIGHUP) != 0) {
    spdlog::error("--reload: cannot signal process {}: {}", pid, std::strerror(errno));
    return 1;
  }
  std::cout << "configuration " << config_path << " is valid; sent SIGHUP to the gateway (pid "
            << pid << "), which logs what changed\n";
  return 0;
}

}  // namespace

Runner add_gateway(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "gateway",
      "Run the OpenAI-compatible gateway in front of vLLM (or llmux sim) servers: routes by path, "
      "method and model, streams without buffering, retries what was never sent, and answers "
      "every failure in the OpenAI error shape.");
  struct Opts {
    std::string config_path;
    int port = 8080;
    std::vector<std::string> backends;
    int threads = -1;
    std::string access_log;
    bool check = false;
    bool probe = false;
    bool reload = false;
    std::string pid_file;
    std::string log_format;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("-c,--config", o->config_path,
                  "YAML config file (docs/config.md; examples/seed.yaml is the seed's gateway)");
  sub->add_option("--port", o->port, "Quick form: port to listen on (0 = a free port)")
      ->capture_default_str();
  sub->add_option("--backend", o->backends,
                  "Quick form: NAME=URL of a backend (repeat); every path is round-robined over "
                  "them. Example: --backend server1=http://127.0.0.1:30001");
  sub->add_option("--threads", o->threads,
                  "Worker threads (default: from the config, else one per core)");
  sub->add_option("--access-log", o->access_log,
                  "stdout, off, or a file path (overrides the config)");
  sub->add_flag("--check", o->check,
                "Check the configuration and everything start-up would (backend hosts resolve, "
                "the access log can be opened, the listen ports are free), print it all, and "
                "exit: 0 all passed, 1 a check failed, 2 the configuration is invalid");
  sub->add_flag("--probe", o->probe,
                "With --check (implied): also ask each backend GET <health path> and GET "
                "/v1/models (2 s each); one failing exits 1");
  sub->add_option("--pid-file", o->pid_file,
                  "Write the gateway's pid here at start (overrides the config's pid_file); with "
                  "--reload, the pid file of the gateway to reload");
  sub->add_flag("--reload", o->reload,
                "Tell the running gateway to load its configuration again: checks --config "
                "first (an invalid one is reported here and not sent), then sends SIGHUP to the "
                "pid in --pid-file or the config's pid_file. The gateway logs what changed");

  sub->add_option("--log-format", o->log_format,
                  "Log lines on stderr: json (one JSON object per line), text (readable), or "
                  "auto (text on a terminal, json otherwise; the default, or LLMUX_LOG_FORMAT)")
      ->check(CLI::IsMember({"auto", "text", "json"}));

  return [o]() -> int {
    if (!o->log_format.empty()) logging::apply(*logging::parse_format(o->log_format));
    if (!o->config_path.empty() && !o->backends.empty()) {
      spdlog::error("give either --config or --backend, not both");
      return 2;
    }
    if (o->config_path.empty() && o->backends.empty()) {
      spdlog::error("nothing to serve: give --config FILE or at least one --backend NAME=URL");
      return 2;
    }
    // What start-up reads, and a reload reads again: the file (or the quick form) with the
    // command line's overrides, validated, and its warnings.
    auto load = [o]() {
      gateway::LoadedConfig out;
      if (!o->config_path.empty()) {
        out.cfg = config::load_and_validate_file(o->config_path, out.errors);
      } else {
        out.cfg =
            config::quick_config(static_cast<std::uint16_t>(o->port), o->backends, out.errors);
      }
      if (o->threads >= 0) out.cfg.threads = o->threads;
      if (!o->access_log.empty()) out.cfg.access_log.target = o->access_log;
      if (!o->pid_file.empty()) out.cfg.pid_file = o->pid_file;
      if (out.errors.empty()) out.errors = config::validate(out.cfg);
      if (out.errors.empty())
        for (const auto& w : warnings_for(o->config_path, out.cfg))
          out.warnings.push_back(w.to_string());
      return out;
    };
    gateway::LoadedConfig loaded = load();
    if (!loaded.errors.empty()) {
      std::cerr << "llmux gateway: invalid configuration (" << loaded.errors.size() << " error"
                << (loaded.errors.size() == 1 ? "" : "s") << "):\n";
      for (const auto& e : loaded.errors) std::cerr << "  " << e.to_string() << "\n";
      return 2;
    }
    if (o->reload) return send_reload(loaded.cfg, o->config_path);
    if (o->check || o->probe) {
      std::vector<config::ConfigWarning> warnings = warnings_for(o->config_path, loaded.cfg);
      return run_check(loaded.cfg, warnings, o->probe);
    }
    for (const auto& w : loaded.warnings) spdlog::warn("configuration: {}", w);
    gateway::ConfigLoader reload;
    if (!o->config_path.empty()) reload = load;
    return gateway::run_gateway(std::move(loaded.cfg), std::move(reload));
  };
}

Runner add_client_config(CLI::App& app) {
  auto* sub = app.add_subcommand("client-config",
                                 "Client configuration for using the gateway (Codex profiles).");
  auto* codex = sub->add_subcommand(
      "codex",
      "Codex CLI profiles as current Codex reads them (tried with 0.171): the providers in "
      "config.toml, and NAME.config.toml (`codex --profile NAME`: through the gateway) and "
      "NAME-direct.config.toml (straight to one server), as in the seed. Printed, or written "
      "into --codex-home (config.toml merged: the user's other settings kept).");
  sub->require_subcommand(1);
  struct Opts {
    config::CodexOptions c;
    std::vector<std::string> headers;
    long long context_window = 0;
    std::string codex_home;
  };
  auto o = std::make_shared<Opts>();
  codex->add_option("--gateway", o->c.gateway, "Gateway base URL, e.g. http://192.168.200.1:8080")
      ->required();
  codex
      ->add_option("--direct", o->c.direct,
                   "One vLLM server's base URL, e.g. http://192.168.200.1:30000")
      ->required();
  codex->add_option("--model", o->c.model, "Model name")->capture_default_str();
  codex->add_option("--name", o->c.name, "Profile name (NAME and NAME-direct)")
      ->capture_default_str();
  codex->add_option("--env-key", o->c.env_key,
                    "Environment variable holding the API key Codex sends (Authorization: "
                    "Bearer); none by default");
  codex->add_option("--header", o->headers,
                    "Extra HTTP header for every request, NAME=VALUE (repeatable)");
  codex
      ->add_option("--context-window", o->context_window,
                   "Also set model_context_window in config.toml's top level (it applies to "
                   "every model there; Codex ignores it in profile files)")
      ->check(CLI::PositiveNumber);
  codex->add_option("--codex-home", o->codex_home,
                    "Write the files into this directory (e.g. ~/.codex) instead of printing them");
  return [o]() -> int {
    try {
      for (const auto& h : o->headers) {
        const auto eq = h.find('=');
        if (eq == std::string::npos || eq == 0)
          throw std::invalid_argument(fmt::format("--header '{}': write it as NAME=VALUE", h));
        o->c.headers.emplace_back(h.substr(0, eq), h.substr(eq + 1));
      }
      if (o->context_window > 0) o->c.context_window = o->context_window;
      const config::CodexFiles files = config::codex_files(o->c);
      if (o->codex_home.empty()) {
        std::cout << config::print_codex_files(files);
        return 0;
      }
      for (const auto& line : config::write_codex_home(o->codex_home, files))
        std::cout << line << "\n";
      std::cout << "codex --profile " << o->c.name << "          (through the gateway)\n"
                << "codex --profile " << o->c.name << "-direct   (straight to one server)\n";
      return 0;
    } catch (const std::exception& e) {
      std::cerr << "llmux client-config codex: " << e.what() << "\n";
      return 2;
    }
  };
}

}  // namespace llmux::cli
