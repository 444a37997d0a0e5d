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
#include "config/claude_settings.hpp"
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
    std::ifstream file(config_path, std::ios::binary);
    return config::lint(
        std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()));
  }
  std::vector<config::ConfigWarning> out;
  for (const auto& backend : cfg.backends)
    if (auto warning = config::lint_backend_url("--backend " + backend.name, backend.url))
      out.push_back(*warning);
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
    for (const auto& warning : warnings) std::cout << "  " << warning.to_string() << "\n";
  }
  std::vector<std::string> problems;
  auto print = [&](const config::CheckResult& result) {
    std::cout << (result.ok ? "  ok    " : "  FAIL  ") << result.to_string() << "\n";
    if (!result.ok) problems.push_back(result.to_string());
  };
  std::cout << "start-up checks:\n";
  std::vector<const config::Backend*> resolved;
  for (const auto& backend : cfg.backends) {
    const auto result = config::check_resolves(backend);
    if (result.ok) resolved.push_back(&backend);
    print(result);
  }
  print(config::check_access_log(cfg.access_log.target));
  for (const auto& listener : cfg.listeners) print(config::check_listener(listener));
  if (probe) {
    std::cout << "probe (each request within " << config::format_duration(kProbeTimeout) << "):\n";
    std::cout.flush();
    for (const auto& result : config::probe_backends(resolved, kProbeTimeout)) print(result);
    for (const auto& backend : cfg.backends)
      if (std::find(resolved.begin(), resolved.end(), &backend) == resolved.end())
        std::cout << "  skip  backend " << backend.name
                  << ": not probed (its host does not resolve)\n";
  }
  if (problems.empty()) {
    std::cout << "check OK";
    if (!warnings.empty())
      std::cout << " (" << warnings.size() << " warning" << (warnings.size() == 1 ? "" : "s")
                << ")";
    std::cout << "\n";
    return 0;
  }
  const std::string summary =
      std::to_string(problems.size()) + (problems.size() == 1 ? " problem" : " problems");
  std::cout << "check FAILED: " << summary << "\n";
  std::cout.flush();
  std::cerr << "llmux gateway --check: " << summary << ":\n";
  for (const auto& problem : problems) std::cerr << "  " << problem << "\n";
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
  auto options = std::make_shared<Opts>();
  sub->add_option("-c,--config", options->config_path,
                  "YAML config file (docs/config.md; examples/seed.yaml is the seed's gateway)");
  sub->add_option("--port", options->port, "Quick form: port to listen on (0 = a free port)")
      ->capture_default_str();
  sub->add_option("--backend", options->backends,
                  "Quick form: NAME=URL of a backend (repeat); every path is round-robined over "
                  "them. Example: --backend server1=http://127.0.0.1:30001");
  sub->add_option("--threads", options->threads,
                  "Worker threads (default: from the config, else one per core)");
  sub->add_option("--access-log", options->access_log,
                  "stdout, off, or a file path (overrides the config)");
  sub->add_flag("--check", options->check,
                "Check the configuration and everything start-up would (backend hosts resolve, "
                "the access log can be opened, the listen ports are free), print it all, and "
                "exit: 0 all passed, 1 a check failed, 2 the configuration is invalid");
  sub->add_flag("--probe", options->probe,
                "With --check (implied): also ask each backend GET <health path> and GET "
                "/v1/models (2 s each); one failing exits 1");
  sub->add_option("--pid-file", options->pid_file,
                  "Write the gateway's pid here at start (overrides the config's pid_file); with "
                  "--reload, the pid file of the gateway to reload");
  sub->add_flag("--reload", options->reload,
                "Tell the running gateway to load its configuration again: checks --config "
                "first (an invalid one is reported here and not sent), then sends SIGHUP to the "
                "pid in --pid-file or the config's pid_file. The gateway logs what changed");

  sub->add_option("--log-format", options->log_format,
                  "Log lines on stderr: json (one JSON object per line), text (readable), or "
                  "auto (text on a terminal, json otherwise; the default, or LLMUX_LOG_FORMAT)")
      ->check(CLI::IsMember({"auto", "text", "json"}));

  return [options]() -> int {
    if (!options->log_format.empty()) logging::apply(*logging::parse_format(options->log_format));
    if (!options->config_path.empty() && !options->backends.empty()) {
      spdlog::error("give either --config or --backend, not both");
      return 2;
    }
    if (options->config_path.empty() && options->backends.empty()) {
      spdlog::error("nothing to serve: give --config FILE or at least one --backend NAME=URL");
      return 2;
    }
    // What start-up reads, and a reload reads again: the file (or the quick form) with the
    // command line's overrides, validated, and its warnings.
    auto load = [options]() {
      gateway::LoadedConfig out;
      if (!options->config_path.empty()) {
        out.cfg = config::load_and_validate_file(options->config_path, out.errors);
      } else {
        out.cfg = config::quick_config(static_cast<std::uint16_t>(options->port), options->backends,
                                       out.errors);
      }
      if (options->threads >= 0) out.cfg.threads = options->threads;
      if (!options->access_log.empty()) out.cfg.access_log.target = options->access_log;
      if (!options->pid_file.empty()) out.cfg.pid_file = options->pid_file;
      if (out.errors.empty()) out.errors = config::validate(out.cfg);
      if (out.errors.empty())
        for (const auto& warning : warnings_for(options->config_path, out.cfg))
          out.warnings.push_back(warning.to_string());
      return out;
    };
    gateway::LoadedConfig loaded = load();
    if (!loaded.errors.empty()) {
      std::cerr << "llmux gateway: invalid configuration (" << loaded.errors.size() << " error"
                << (loaded.errors.size() == 1 ? "" : "s") << "):\n";
      for (const auto& error : loaded.errors) std::cerr << "  " << error.to_string() << "\n";
      return 2;
    }
    if (options->reload) return send_reload(loaded.cfg, options->config_path);
    if (options->check || options->probe) {
      std::vector<config::ConfigWarning> warnings = warnings_for(options->config_path, loaded.cfg);
      return run_check(loaded.cfg, warnings, options->probe);
    }
    for (const auto& warning : loaded.warnings) spdlog::warn("configuration: {}", warning);
    gateway::ConfigLoader reload;
    if (!options->config_path.empty()) reload = load;
    return gateway::run_gateway(std::move(loaded.cfg), std::move(reload));
  };
}

Runner add_client_config(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "client-config",
      "Client configuration for using the gateway (Codex profiles, Claude Code settings).");
  auto* codex = sub->add_subcommand(
      "codex",
      "Codex CLI profiles as current Codex reads them (tried with 0.171): the providers in "
      "config.toml, and NAME.config.toml (`codex --profile NAME`: through the gateway) and "
      "NAME-direct.config.toml (straight to one server), as in the seed. Printed, or written "
      "into --codex-home (config.toml merged: the user's other settings kept).");
  sub->require_subcommand(1);
  struct Opts {
    config::CodexOptions codex;
    std::vector<std::string> headers;
    long long context_window = 0;
    std::string codex_home;
  };
  auto options = std::make_shared<Opts>();
  codex
      ->add_option("--gateway", options->codex.gateway,
                   "Gateway base URL, e.g. http://192.168.200.1:8080")
      ->required();
  codex
      ->add_option("--direct", options->codex.direct,
                   "One vLLM server's base URL, e.g. http://192.168.200.1:30000")
      ->required();
  codex->add_option("--model", options->codex.model, "Model name")->capture_default_str();
  codex->add_option("--name", options->codex.name, "Profile name (NAME and NAME-direct)")
      ->capture_default_str();
  codex->add_option("--env-key", options->codex.env_key,
                    "Environment variable holding the API key Codex sends (Authorization: "
                    "Bearer); none by default");
  codex->add_option("--header", options->headers,
                    "Extra HTTP header for every request, NAME=VALUE (repeatable)");
  codex
      ->add_option("--context-window", options->context_window,
                   "Also set model_context_window in config.toml's top level (it applies to "
                   "every model there; Codex ignores it in profile files)")
      ->check(CLI::PositiveNumber);
  codex->add_option("--codex-home", options->codex_home,
                    "Write the files into this directory (e.g. ~/.codex) instead of printing them");
  auto* claude = sub->add_subcommand(
      "claude",
      "Claude Code (tried with 2.1.332) through the gateway: settings.json's env entries "
      "(ANTHROPIC_BASE_URL, the credential, every model variable, non-essential traffic off), "
      "printed, or merged into --settings FILE (the user's other settings kept, FILE.bak left).");
  struct ClaudeOpts {
    config::ClaudeOptions claude;
    long long context_window = 0;
    std::string settings;
  };
  auto claude_options = std::make_shared<ClaudeOpts>();
  claude
      ->add_option("--gateway", claude_options->claude.gateway,
                   "Gateway base URL, e.g. http://192.168.200.1:8080 (no /v1: Claude Code "
                   "appends /v1/messages)")
      ->required();
  claude->add_option("--model", claude_options->claude.model, "Model name for every model tier")
      ->capture_default_str();
  auto* token = claude->add_option(
      "--token", claude_options->claude.token,
      "The gateway key, written as ANTHROPIC_AUTH_TOKEN (sent as Authorization: Bearer); by "
      "default a placeholder for a gateway without keys");
  claude
      ->add_option("--token-env", claude_options->claude.token_env,
                   "Instead of --token: the environment variable holding the gateway key, read "
                   "when Claude Code starts (apiKeyHelper `printenv VAR`); no key is written")
      ->excludes(token);
  claude
      ->add_option("--context-window", claude_options->context_window,
                   "The model's context window in tokens (CLAUDE_CODE_MAX_CONTEXT_TOKENS; "
                   "Claude Code assumes 1M for a model it does not know)")
      ->check(CLI::PositiveNumber);
  claude->add_option("--settings", claude_options->settings,
                     "Merge into this settings.json (e.g. ~/.claude/settings.json) instead of "
                     "printing");
  Runner run_claude = [claude_options]() -> int {
    try {
      if (claude_options->context_window > 0)
        claude_options->claude.context_window = claude_options->context_window;
      const config::ClaudeSettings settings = config::claude_settings(claude_options->claude);
      if (claude_options->settings.empty()) {
        std::cout << config::print_claude_settings(settings);
        return 0;
      }
      for (const auto& line : config::write_claude_settings(claude_options->settings, settings))
        std::cout << line << "\n";
      return 0;
    } catch (const std::exception& error) {
      std::cerr << "llmux client-config claude: " << error.what() << "\n";
      return 2;
    }
  };
  Runner run_codex = [options]() -> int {
    try {
      for (const auto& header : options->headers) {
        const auto equals_sign = header.find('=');
        if (equals_sign == std::string::npos || equals_sign == 0)
          throw std::invalid_argument(fmt::format("--header '{}': write it as NAME=VALUE", header));
        options->codex.headers.emplace_back(header.substr(0, equals_sign),
                                            header.substr(equals_sign + 1));
      }
      if (options->context_window > 0) options->codex.context_window = options->context_window;
      const config::CodexFiles files = config::codex_files(options->codex);
      if (options->codex_home.empty()) {
        std::cout << config::print_codex_files(files);
        return 0;
      }
      for (const auto& line : config::write_codex_home(options->codex_home, files))
        std::cout << line << "\n";
      std::cout << "codex --profile " << options->codex.name << "          (through the gateway)\n"
                << "codex --profile " << options->codex.name
                << "-direct   (straight to one server)\n";
      return 0;
    } catch (const std::exception& error) {
      std::cerr << "llmux client-config codex: " << error.what() << "\n";
      return 2;
    }
  };
  return [claude, run_claude, run_codex]() -> int {
    return claude->parsed() ? run_claude() : run_codex();
  };
}

}  // namespace llmux::cli
