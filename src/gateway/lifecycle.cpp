// SPDX-License-Identifier: Apache-2.0
// The gateway process's life (gateway/gateway_process.hpp): start-up, the threads, the stop.
//
// The rooms along the life of a request (docs/architecture.md walks them):
//   listeners.cpp (accept) → session.cpp (read, limits, timeouts, lingering close) →
//   router.cpp (route table) → proxy.cpp (the stages in order, and the retry decision):
//   admit.cpp (key, quotas, the queue) → pick.cpp (affinity, the policy's choice + slot) →
//   upstream_attempt.cpp (connect or pool, the request built by http_rules.cpp, the response
//   head) → relay.cpp (response to the client, taps.cpp on the way) → finish.cpp (error answer,
//   usage, metrics, access log) ‖ client_connection.cpp (the watch on the client, local
//   answers); models.cpp answers /v1/models.
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include "config/summary.hpp"
#include "core/block_cache.hpp"
#include "core/clock.hpp"
#include "core/cpus.hpp"
#include "core/signals.hpp"
#include "gateway/gateway_process.hpp"
#include "state/redis_quota.hpp"

namespace llmux::gateway {

using net::awaitable;

int GatewayProcess::run() {
  std::string error;
  if (!state_.log.open(start_config_.access_log.target, error)) {
    spdlog::error("{}", error);
    return 2;
  }
  // Backends (resolved once here; a reload resolves the ones it adds) and routes.
  auto built = build_fleet(std::move(start_config_), nullptr, slots_);
  if (!built.fleet) {
    for (const auto& message : built.errors) spdlog::error("{}", message);
    return 2;
  }
  fleet_ = std::move(built.fleet);
  const auto& config = fleet_->cfg;
  // Before the first thread starts (Redis's, below): signals go to the control thread alone.
  hold_signals_for_control();
  make_response_store(config);
  make_quotas_and_usage(config);

  // threads: 0 → one worker per CPU this process may use (its affinity mask and cgroup
  // quota), not per core of the machine.
  const CpuBudget cpus = usable_cpus();
  const int thread_count = config.threads > 0 ? config.threads : cpus.cpus;
  spdlog::info("{} worker thread{} ({}; CPUs usable here: {})", thread_count,
               thread_count == 1 ? "" : "s",
               config.threads > 0 ? fmt::format("threads: {}", config.threads)
                                  : std::string("threads: 0, one per usable CPU"),
               cpus.describe());
  state_.metrics.start_mono_ns = mono_ns();
  state_.metrics.start_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
  state_.control = &control_;
  state_.change_fleet = [this](const AdminChange& change, int& status) {
    return change_fleet(change, status);
  };
  make_workers(thread_count);

  std::vector<std::uint16_t> ports;
  if (const int exit_code = open_listeners(config, ports); exit_code != 0) return exit_code;
  PidFile pid_file;
  if (!config.pid_file.empty() && !pid_file.write(config.pid_file, error)) {
    spdlog::error("{}", error);
    return 1;
  }
  serve(ports);
  spdlog::info("llmux gateway: stopped");
  return 0;
}

void GatewayProcess::make_response_store(const config::GatewayConfig& config) {
  if (!config.state.redis()) {
    state_.responses_memory = std::make_unique<state::MemoryResponseStore>(
        static_cast<std::size_t>(config.affinity.max_entries), config.affinity.ttl);
    state_.responses = state_.responses_memory.get();
    return;
  }
  // Held in common by the replicas (issue 15): a request never waits more than state.timeout for
  // Redis, and goes on with what this process knows when Redis is slow or away.
  state::RedisOptions redis_options;
  redis_options.url = *state::RedisUrl::parse(config.state.url);  // validated
  state_.redis = std::make_shared<state::RedisClient>(redis_options);
  state::RedisResponseStoreOptions store_options;
  store_options.prefix = config.state.prefix;
  store_options.ttl = config.affinity.ttl;
  store_options.cache_entries = static_cast<std::size_t>(config.affinity.max_entries);
  store_options.lookup_timeout = config.state.timeout;
  state_.responses_redis = std::make_unique<state::RedisResponseStore>(state_.redis, store_options);
  state_.responses = state_.responses_redis.get();
  spdlog::info("state: Redis at {} (keys {}*), {} ms at most per lookup", redis_options.url.str(),
               config.state.prefix, config.state.timeout.count());
}

void GatewayProcess::make_quotas_and_usage(const config::GatewayConfig& config) {
  const auto retention =
      std::chrono::duration_cast<std::chrono::hours>(config.auth.usage_retention);
  if (!state_.redis) {
    state_.quotas = std::make_unique<auth::QuotaLimiter>(nullptr, 1.0);
    state_.usage = std::make_unique<auth::MemoryUsageLedger>(retention);
    return;
  }
  state::RedisQuotaOptions quota_options;
  quota_options.prefix = config.state.prefix;
  auto quota_counters = std::make_shared<state::RedisQuotaCounters>(state_.redis, quota_options);
  state_.quota_redis = quota_counters.get();  // kept by the limiter for the process's life
  state_.quotas = std::make_unique<auth::QuotaLimiter>(std::move(quota_counters),
                                                       auth::local_share(config.quotas, 1));
  state::RedisUsageOptions usage_options;
  usage_options.prefix = config.state.prefix;
  usage_options.retention = retention;
  auto ledger = std::make_unique<state::RedisUsageLedger>(state_.redis, usage_options);
  state_.usage_redis = ledger.get();
  state_.usage = std::move(ledger);
  // Without quotas.local_share, each replica takes 1 / the replicas alive of each limit while
  // Redis is away: the last count seen before it went.
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  state_.replicas = std::make_unique<state::ReplicaPresence>(
      state_.redis, config.state.prefix, fmt::format("{}:{}", host.data(), ::getpid()),
      std::chrono::seconds(15),
      [quotas = state_.quotas.get(), fixed = config.quotas.local_share.has_value()](int alive) {
        spdlog::info("state: {} gateway replica{} share Redis", alive, alive == 1 ? "" : "s");
        if (!fixed) quotas->set_local_share(1.0 / alive);
      });
}

void GatewayProcess::make_workers(int count) {
  workers_.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    auto worker = std::make_unique<Worker>();
    worker->worker_metrics = &state_.metrics.add_worker();
    worker->fleet_handle = std::make_shared<const FleetHandle>(FleetHandle{fleet_});
    workers_.push_back(std::move(worker));
  }
}

void GatewayProcess::serve(const std::vector<std::uint16_t>& ports) {
  start_accepting();
  for (auto& worker : workers_) {
    // Worker 0's ticker also writes out the access log's buffer.
    net::co_spawn(worker->ioc,
                  deadline_ticker(*worker, worker == workers_[0] ? &state_.log : nullptr),
                  net::detached);
  }
  // The configuration the gateway starts with, read here only: once the threads run, the
  // control thread may replace fleet_ (a reload, an admin change) at any time.
  const std::shared_ptr<const Fleet> initial = fleet_;
  state_.generation.store(initial->generation, std::memory_order_release);
  // Active health checks on a thread of their own, given the backends before a change can come.
  checker_.start();
  checker_.update(*initial);
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < workers_.size(); ++i) {
    threads.emplace_back([worker = workers_[i].get()] { worker->ioc.run(); });
  }
  // Signals, reloads and the drain run on a control thread of their own (a reload resolves
  // new backends' hosts, which blocks); the main thread runs worker 0.
  net::signal_set signals(control_);
  start_control(signals);
  std::thread control([this] {
    take_signals_on_this_thread();
    control_.run();
  });
  const auto& config = initial->cfg;
  spdlog::info("llmux gateway: listening on {} ({} backends, {} routes, {} threads{})",
               config::listen_addresses(config.listeners, ports), initial->backends.size(),
               initial->routes.size(), workers_.size(),
               config.pid_file.empty() ? std::string() : ", pid file " + config.pid_file);
  std::cout << fmt::format(R"({{"event":"ready","ports":[{}],"port":{},"pid":{}{}}})",
                           fmt::join(ports, ","), ports.empty() ? 0 : ports[0], ::getpid(),
                           metrics_acceptor_ ? fmt::format(R"(,"metrics_port":{})", metrics_port_)
                                             : std::string())
            << std::endl;
  workers_[0]->ioc.run();
  for (auto& thread : threads) thread.join();
  checker_.stop();
  control_work_.reset();
  control_.stop();
  control.join();
}

/// Says this replica is alive to the others every 5 s (control thread).
awaitable<void> GatewayProcess::replica_beat(state::ReplicaPresence& presence) {
  net::steady_timer timer(co_await net::this_coro::executor);
  for (;;) {
    presence.beat(unix_ms());
    timer.expires_after(std::chrono::seconds(5));
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec) co_return;
  }
}

/// One ticker per worker: fires its expired deadlines, starts the client watches of requests
/// served for a tick, sweeps its pools and trims its block cache.
awaitable<void> GatewayProcess::deadline_ticker(Worker& worker, AccessLog* log) {
  net::steady_timer timer(worker.ioc);
  for (std::uint64_t tick = 1;; ++tick) {
    timer.expires_after(std::chrono::milliseconds(50));
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec) co_return;
    worker.deadlines.fire_expired(coarse_ns());
    worker.deferred_starts.run_due(
        ++worker.tick);                       // the client watches of requests served for a tick
    if (tick % 4 == 0) worker.sweep_pools();  // idle connections the backends closed
    if (tick % 4 == 0) core::thread_blocks().trim();  // freed blocks no request took back
    if (log && tick % 2 == 0) log->flush();           // the access log's lines, 100 ms at most late
  }
}

int run_gateway(config::GatewayConfig config, ConfigLoader reload) {
  // A write to a closed stdout (the access log piped into a program that ended) fails with
  // EPIPE instead of ending the gateway; sockets never raise it (Asio sends with MSG_NOSIGNAL).
  ::signal(SIGPIPE, SIG_IGN);
  install_fatal_signal_report();
  GatewayProcess process(std::move(config), std::move(reload));
  return process.run();
}

}  // namespace llmux::gateway
