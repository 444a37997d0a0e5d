// SPDX-License-Identifier: Apache-2.0
// The gateway's control thread (gateway/gateway_process.hpp): signals, reloads (SIGHUP), the
// admin API's run-time changes and the drain (SIGTERM). Each may block (a reload resolves the
// hosts of new backends), so none runs on a worker; a new configuration reaches the workers as a
// FleetHandle posted to each, taken between requests.
#include <pthread.h>

#include <array>
#include <atomic>
#include <csignal>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/clock.hpp"
#include "core/signals.hpp"
#include "gateway/admin.hpp"
#include "gateway/gateway_process.hpp"

namespace llmux::gateway {

using net::awaitable;

void GatewayProcess::start_control(net::signal_set& signals) {
  add_signals(signals);
  net::co_spawn(control_, signal_loop(signals), net::detached);
  if (state_.replicas) net::co_spawn(control_, replica_beat(*state_.replicas), net::detached);
}

namespace {
/// Every signal whose default would end the process, except the crashes (fatal_signal_report)
/// and SIGPIPE (ignored: a write to a closed pipe fails instead); then the real-time ones.
constexpr std::array kControlSignals{SIGHUP,  SIGINT,    SIGQUIT,   SIGTERM, SIGUSR1,
                                     SIGUSR2, SIGALRM,   SIGVTALRM, SIGPROF, SIGIO,
                                     SIGPWR,  SIGSTKFLT, SIGXCPU,   SIGXFSZ};

sigset_t control_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal_number : kControlSignals) sigaddset(&set, signal_number);
  for (int signal_number = SIGRTMIN; signal_number <= SIGRTMAX; ++signal_number)
    sigaddset(&set, signal_number);
  return set;
}
}  // namespace

void GatewayProcess::add_signals(net::signal_set& signals) {
  for (int signal_number : kControlSignals) signals.add(signal_number);
  for (int signal_number = SIGRTMIN; signal_number <= SIGRTMAX; ++signal_number) {
    boost::system::error_code ec;
    signals.add(signal_number, ec);  // beyond what Asio handles: left as it is
  }
}

void GatewayProcess::hold_signals_for_control() {
  const sigset_t set = control_signal_set();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void GatewayProcess::take_signals_on_this_thread() {
  const sigset_t set = control_signal_set();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

awaitable<void> GatewayProcess::signal_loop(net::signal_set& signals) {
  for (;;) {
    auto [ec, signal_number] = co_await signals.async_wait(use_tuple);
    if (ec) co_return;
    switch (signal_number) {
      case SIGINT:
      case SIGTERM:
      case SIGQUIT:
        if (!state_.draining.load()) {
          begin_drain(signal_number);
        } else {
          spdlog::warn("signal {} ({}) while draining: stopping now, {} running requests cut off",
                       signal_number, signal_name(signal_number), state_.active.load());
          for (auto& worker : workers_) worker->ioc.stop();
        }
        break;
      case SIGHUP:
        reload();
        break;
      case SIGUSR1: {
        std::string err;
        if (state_.log.reopen(err))
          spdlog::info("signal {} (SIGUSR1): access log reopened", signal_number);
        else
          spdlog::error("signal {} (SIGUSR1): {}", signal_number, err);
        break;
      }
      default:
        spdlog::warn("signal {} ({}): ignored", signal_number, signal_name(signal_number));
    }
  }
}

void GatewayProcess::reload() {
  if (!reload_) {
    spdlog::warn(
        "SIGHUP: the gateway was started without a config file (--backend): nothing to reload");
    return;
  }
  if (state_.draining.load()) {
    spdlog::warn("SIGHUP while draining: no reload");
    return;
  }
  LoadedConfig next = reload_();
  if (!next.errors.empty()) {
    spdlog::error(
        "reload: the new configuration is invalid ({} error{}); still serving configuration "
        "generation {}",
        next.errors.size(), next.errors.size() == 1 ? "" : "s", fleet_->generation);
    for (const auto& problem : next.errors) spdlog::error("reload:   {}", problem.to_string());
    return;
  }
  for (const auto& warning : next.warnings) spdlog::warn("reload: configuration: {}", warning);
  for (const auto& warning : keep_restart_only(fleet_->cfg, next.cfg))
    spdlog::warn("reload: {}", warning);
  auto built = build_fleet(std::move(next.cfg), fleet_.get(), slots_);
  if (built.fleet) {
    // The admin API's changes were run-time only: the file's configuration replaces them.
    for (const auto& backend : built.fleet->backends) backend->draining.store(false);
    if (!runtime_changes_.empty()) {
      spdlog::info("reload: replaces {} run-time change{} made through the admin API:",
                   runtime_changes_.size(), runtime_changes_.size() == 1 ? "" : "s");
      for (const auto& change : runtime_changes_) spdlog::info("reload:   replaced: {}", change);
      runtime_changes_.clear();
    }
  }
  if (!built.fleet) {
    for (const auto& problem : built.errors) spdlog::error("reload: {}", problem);
    spdlog::error("reload: failed; still serving configuration generation {}", fleet_->generation);
    return;
  }
  install(std::move(built.fleet));
  spdlog::info("reload: configuration generation {} in use ({} backends, {} routes){}",
               fleet_->generation, fleet_->backends.size(), fleet_->routes.size(),
               built.changes.empty() ? "; nothing changed" : ":");
  for (const auto& change : built.changes) spdlog::info("reload:   {}", change);
}

void GatewayProcess::install(std::shared_ptr<const Fleet> next) {
  if (next->cfg.state.url != fleet_->cfg.state.url ||
      next->cfg.state.prefix != fleet_->cfg.state.prefix)
    spdlog::warn(
        "reload: `state` changed; the shared state in use stays as it was until the "
        "gateway restarts");
  fleet_ = std::move(next);
  state::MemoryResponseStore& table =
      state_.responses_redis ? state_.responses_redis->cache() : *state_.responses_memory;
  table.set_limits(static_cast<std::size_t>(fleet_->cfg.affinity.max_entries),
                   fleet_->cfg.affinity.ttl);
  // The last worker to switch says the generation is in use everywhere (each worker takes the
  // reloads in order, so the generations it sets only grow).
  auto left = std::make_shared<std::atomic<std::size_t>>(workers_.size());
  for (auto& worker : workers_) {
    net::post(
        worker->ioc,
        [worker = worker.get(), left, gen = fleet_->generation, &everywhere = state_.generation,
         fleet_handle = std::make_shared<const FleetHandle>(FleetHandle{fleet_})]() mutable {
          worker->set_fleet(std::move(fleet_handle));
          if (left->fetch_sub(1, std::memory_order_acq_rel) == 1)
            everywhere.store(gen, std::memory_order_release);
        });
  }
  checker_.update(*fleet_);
}

std::string GatewayProcess::change_fleet(const AdminChange& change, int& status) {
  using K = AdminChange::Kind;
  static constexpr std::string_view kVerb[] = {"drained", "undrained", "added", "removed"};
  const std::string_view verb = kVerb[static_cast<int>(change.kind)];
  if (state_.draining.load()) {
    status = 503;
    return "The gateway is shutting down: no changes.";
  }
  if (change.kind == K::drain || change.kind == K::undrain) {
    for (const auto& backend : fleet_->backends) {
      if (backend->name != change.backend) continue;
      backend->draining.store(change.kind == K::drain);
      const std::string what =
          fmt::format("backend {} {} (admin API, from {})", backend->name, verb, change.by);
      spdlog::info("{}", what);
      runtime_changes_.push_back(what);
      return admin_backends_json(state_, *fleet_);
    }
    status = 404;
    return fmt::format("No backend named '{}'.", change.backend);
  }
  config::GatewayConfig cfg = fleet_->cfg;
  std::string error;
  if (!apply_change(change, cfg, error, status)) return error;
  if (auto errors = config::validate(cfg); !errors.empty()) {
    status = 400;
    std::vector<std::string> lines;
    for (const auto& problem : errors) lines.push_back(problem.to_string());
    return fmt::format("The change makes the configuration invalid: {}", fmt::join(lines, "; "));
  }
  auto built = build_fleet(std::move(cfg), fleet_.get(), slots_);
  if (!built.fleet) {
    status = 400;
    return fmt::format("The change cannot be made: {}", fmt::join(built.errors, "; "));
  }
  install(std::move(built.fleet));
  const std::string what = change.kind == K::add
                               ? fmt::format("backend {} ({}) added (admin API, from {})",
                                             change.backend, change.add.url, change.by)
                               : fmt::format(
                                     "backend {} removed (admin API, from {}); its running "
                                     "requests finish",
                                     change.backend, change.by);
  spdlog::info("{}: configuration generation {} in use", what, fleet_->generation);
  runtime_changes_.push_back(what);
  status = change.kind == K::add ? 201 : 200;
  return admin_backends_json(state_, *fleet_);
}

void GatewayProcess::begin_drain(int signal_number) {
  spdlog::info("signal {} ({}): draining (up to {} ms for {} running requests)", signal_number,
               signal_name(signal_number), fleet_->cfg.timeouts.drain.count(),
               state_.active.load());
  state_.draining = true;
  for (auto& worker : workers_) {
    net::post(worker->ioc, [worker = worker.get()] {
      for (auto& acceptor : worker->acceptors) {
        boost::system::error_code ec;
        acceptor->close(ec);
      }
    });
  }
  if (metrics_acceptor_)
    net::post(workers_[0]->ioc, [acc = metrics_acceptor_.get()] {
      boost::system::error_code ec;
      acc->close(ec);
    });
  const auto deadline = MonoClock::now() + fleet_->cfg.timeouts.drain;
  auto timer = std::make_shared<net::steady_timer>(control_);
  auto poll = std::make_shared<std::function<void()>>();
  *poll = [this, timer, deadline, poll] {
    if (state_.active.load() == 0 || MonoClock::now() >= deadline) {
      if (state_.active.load() > 0)
        spdlog::warn("drain timeout: {} requests cut off", state_.active.load());
      for (auto& worker : workers_) worker->ioc.stop();
      *poll = nullptr;  // break the cycle
      return;
    }
    timer->expires_after(std::chrono::milliseconds(20));
    timer->async_wait([poll](auto) {
      if (*poll) (*poll)();
    });
  };
  (*poll)();
}

}  // namespace llmux::gateway
