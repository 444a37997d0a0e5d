// SPDX-License-Identifier: Apache-2.0
// `llmux gateway`: wiring. Builds the backends and routes from the validated config, starts the
// workers (one io_context and thread each, an SO_REUSEPORT acceptor per listener, a pool per
// backend), accepts connections into sessions, ticks the deadlines, and drains on SIGTERM.
//
// The rooms along the life of a request (docs/architecture.md draws them):
//   session.cpp (read, limits, timeouts, lingering close) → router.cpp (route table) →
//   proxy.cpp (policy pick + slot, each attempt's request built by http_rules.cpp, sent by
//   upstream_attempt.cpp, retry decision from upstream/outcome) → relay.cpp (response to the
//   client, taps.cpp on the way) ‖ client_connection.cpp (the watch on the client, local answers);
//   models.cpp answers /v1/models.
#include "gateway/gateway.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "config/preflight.hpp"
#include "config/summary.hpp"
#include "core/block_cache.hpp"
#include "core/clock.hpp"
#include "core/cpus.hpp"
#include "core/openai_error.hpp"
#include "core/signals.hpp"
#include "gateway/admin.hpp"
#include "gateway/fleet.hpp"
#include "gateway/health_checker.hpp"
#include "gateway/session.hpp"
#include "gateway/worker.hpp"
#include "http/linger.hpp"
#include "policy/policy.hpp"
#include "state/redis_quota.hpp"

namespace llmux::gateway {
namespace {

using net::awaitable;

// ---------------------------------------------------------------------------------------------

class Gateway {
 public:
  Gateway(config::GatewayConfig cfg, ConfigLoader reload)
      : start_cfg_(std::move(cfg)), reload_(std::move(reload)) {}

  int run() {
    std::string err;
    if (!shared_.log.open(start_cfg_.access_log.target, err)) {
      spdlog::error("{}", err);
      return 2;
    }
    // Backends (resolved once here; a reload resolves the ones it adds) and routes.
    auto built = build_fleet(std::move(start_cfg_), nullptr, slots_);
    if (!built.fleet) {
      for (const auto& e : built.errors) spdlog::error("{}", e);
      return 2;
    }
    fleet_ = std::move(built.fleet);
    const auto& cfg = fleet_->cfg;
    if (cfg.state.redis()) {
      // Shared by the replicas (issue 15): a request never waits more than state.timeout for
      // Redis, and goes on with what this process knows when Redis is slow or away.
      state::RedisOptions ro;
      ro.url = *state::RedisUrl::parse(cfg.state.url);  // validated
      shared_.redis = std::make_shared<state::RedisClient>(ro);
      state::RedisResponseStoreOptions so;
      so.prefix = cfg.state.prefix;
      so.ttl = cfg.affinity.ttl;
      so.cache_entries = static_cast<std::size_t>(cfg.affinity.max_entries);
      so.lookup_timeout = cfg.state.timeout;
      shared_.responses_redis = std::make_unique<state::RedisResponseStore>(shared_.redis, so);
      shared_.responses = shared_.responses_redis.get();
      spdlog::info("state: Redis at {} (keys {}*), {} ms at most per lookup", ro.url.str(),
                   cfg.state.prefix, cfg.state.timeout.count());
    } else {
      shared_.responses_memory = std::make_unique<state::MemoryResponseStore>(
          static_cast<std::size_t>(cfg.affinity.max_entries), cfg.affinity.ttl);
      shared_.responses = shared_.responses_memory.get();
    }
    make_quotas_and_usage(cfg);

    // threads: 0 → one worker per CPU this process may use (its affinity mask and cgroup
    // quota), not per core of the machine.
    const CpuBudget cpus = usable_cpus();
    const int nthreads = cfg.threads > 0 ? cfg.threads : cpus.cpus;
    spdlog::info("{} worker thread{} ({}; CPUs usable here: {})", nthreads,
                 nthreads == 1 ? "" : "s",
                 cfg.threads > 0 ? fmt::format("threads: {}", cfg.threads)
                                 : std::string("threads: 0, one per usable CPU"),
                 cpus.describe());
    workers_.reserve(nthreads);
    shared_.metrics.start_mono_ns = mono_ns();
    shared_.metrics.start_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count();
    shared_.control = &control_;
    shared_.change_fleet = [this](const AdminChange& ch, int& status) {
      return change_fleet(ch, status);
    };
    for (int i = 0; i < nthreads; ++i) {
      auto w = std::make_unique<Worker>();
      w->m = &shared_.metrics.add_worker();
      w->fleet_handle = std::make_shared<const FleetHandle>(FleetHandle{fleet_});
      workers_.push_back(std::move(w));
    }
    // Listeners: every worker gets an SO_REUSEPORT acceptor on every listener's port; the
    // first binds (port 0 → a free port), the others join it.
    std::vector<std::uint16_t> ports;
    for (const auto& l : cfg.listeners) {
      boost::system::error_code ec;
      auto addr = net::ip::make_address(l.address, ec);
      if (ec) {
        spdlog::error("listen address '{}': {}", l.address, ec.message());
        return 2;
      }
      std::uint16_t port = l.port;
      // Fails at once when another process listens there: SO_REUSEPORT would otherwise let this
      // gateway join that process's port and silently take a share of its connections. The
      // port is shared only among this process's own workers (`--check` runs the same probe).
      if (const auto probe = config::check_listener(l); !probe.ok) {
        spdlog::error("cannot {}", probe.to_string());
        return 1;
      }
      for (auto& w : workers_) {
        auto acc = std::make_unique<tcp::acceptor>(w->ioc);
        tcp::endpoint ep(addr, port);
        acc->open(ep.protocol(), ec);
        if (!ec) acc->set_option(net::socket_base::reuse_address(true), ec);
        if (!ec) {
          int one = 1;
          ::setsockopt(acc->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        }
        if (!ec) acc->bind(ep, ec);
        if (!ec) acc->listen(net::socket_base::max_listen_connections, ec);
        if (ec) {
          spdlog::error("cannot listen on {}:{}: {}", l.address, port, ec.message());
          return 1;
        }
        port = acc->local_endpoint().port();
        w->acceptors.push_back(std::move(acc));
      }
      ports.push_back(port);
    }
    // metrics.listen: /metrics and /dashboard on an address of their own, on worker 0.
    for (const auto& l : cfg.metrics.listen) {
      boost::system::error_code ec;
      auto addr = net::ip::make_address(l.address, ec);
      auto acc = std::make_unique<tcp::acceptor>(workers_[0]->ioc);
      tcp::endpoint ep(addr, l.port);
      if (!ec) acc->open(ep.protocol(), ec);
      if (!ec) acc->set_option(net::socket_base::reuse_address(true), ec);
      if (!ec) acc->bind(ep, ec);
      if (!ec) acc->listen(net::socket_base::max_listen_connections, ec);
      if (ec) {
        spdlog::error("cannot listen on {}:{} (metrics.listen): {}", l.address, l.port,
                      ec.message());
        return 1;
      }
      metrics_port_ = acc->local_endpoint().port();
      metrics_acceptor_ = std::move(acc);
      spdlog::info("metrics and dashboard on {}:{} (metrics.listen)", l.address, metrics_port_);
    }
    PidFile pid_file;
    if (!cfg.pid_file.empty() && !pid_file.write(cfg.pid_file, err)) {
      spdlog::error("{}", err);
      return 1;
    }

    for (auto& w : workers_) {
      for (std::size_t i = 0; i < w->acceptors.size(); ++i)
        net::co_spawn(w->ioc, accept_loop(*w, *w->acceptors[i], false, static_cast<int>(i)),
                      net::detached);
      // Worker 0's ticker also writes out the access log's buffer.
      net::co_spawn(w->ioc, deadline_ticker(*w, w == workers_[0] ? &shared_.log : nullptr),
                    net::detached);
    }
    if (metrics_acceptor_)
      net::co_spawn(workers_[0]->ioc, accept_loop(*workers_[0], *metrics_acceptor_, true, -1),
                    net::detached);
    // The configuration the gateway starts with, read here only: once the threads run, the
    // control thread may replace fleet_ (a reload, an admin change) at any time.
    const std::shared_ptr<const Fleet> initial = fleet_;
    shared_.generation.store(initial->generation, std::memory_order_release);
    // Active health checks on a thread of their own, given the backends before a change can come.
    checker_.start();
    checker_.update(*initial);
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < workers_.size(); ++i) {
      threads.emplace_back([w = workers_[i].get()] { w->ioc.run(); });
    }
    // Signals, reloads and the drain run on a control thread of their own (a reload resolves
    // new backends' hosts, which blocks); the main thread runs worker 0.
    net::signal_set signals(control_);
    add_signals(signals);
    net::co_spawn(control_, signal_loop(signals), net::detached);
    if (shared_.replicas) net::co_spawn(control_, replica_beat(*shared_.replicas), net::detached);
    std::thread control([this] { control_.run(); });
    spdlog::info("llmux gateway: listening on {} ({} backends, {} routes, {} threads{})",
                 config::listen_addresses(cfg.listeners, ports), initial->backends.size(),
                 initial->routes.size(), nthreads,
                 cfg.pid_file.empty() ? std::string() : ", pid file " + cfg.pid_file);
    std::cout << fmt::format(R"({{"event":"ready","ports":[{}],"port":{},"pid":{}{}}})",
                             fmt::join(ports, ","), ports.empty() ? 0 : ports[0], ::getpid(),
                             metrics_acceptor_ ? fmt::format(R"(,"metrics_port":{})", metrics_port_)
                                               : std::string())
              << std::endl;
    workers_[0]->ioc.run();
    for (auto& t : threads) t.join();
    checker_.stop();
    control_work_.reset();
    control_.stop();
    control.join();
    spdlog::info("llmux gateway: stopped");
    return 0;
  }

 private:
  // ---- quotas and usage (auth/): in memory, or shared by the replicas through Redis ----
  void make_quotas_and_usage(const config::GatewayConfig& cfg) {
    const auto retention = std::chrono::duration_cast<std::chrono::hours>(cfg.auth.usage_retention);
    if (!shared_.redis) {
      shared_.quotas = std::make_unique<auth::QuotaLimiter>(nullptr, 1.0);
      shared_.usage = std::make_unique<auth::MemoryUsageLedger>(retention);
      return;
    }
    state::RedisQuotaOptions qo;
    qo.prefix = cfg.state.prefix;
    auto quota_counters = std::make_shared<state::RedisQuotaCounters>(shared_.redis, qo);
    shared_.quota_redis = quota_counters.get();  // kept by the limiter for the process's life
    shared_.quotas = std::make_unique<auth::QuotaLimiter>(std::move(quota_counters),
                                                          auth::local_share(cfg.quotas, 1));
    state::RedisUsageOptions uo;
    uo.prefix = cfg.state.prefix;
    uo.retention = retention;
    auto ledger = std::make_unique<state::RedisUsageLedger>(shared_.redis, uo);
    shared_.usage_redis = ledger.get();
    shared_.usage = std::move(ledger);
    // Without quotas.local_share, each replica takes 1 / the replicas alive of each limit while
    // Redis is away: the last count seen before it went.
    std::array<char, 256> host{};
    ::gethostname(host.data(), host.size() - 1);
    shared_.replicas = std::make_unique<state::ReplicaPresence>(
        shared_.redis, cfg.state.prefix, fmt::format("{}:{}", host.data(), ::getpid()),
        std::chrono::seconds(15),
        [quotas = shared_.quotas.get(), fixed = cfg.quotas.local_share.has_value()](int n) {
          spdlog::info("state: {} gateway replica{} share Redis", n, n == 1 ? "" : "s");
          if (!fixed) quotas->set_local_share(1.0 / n);
        });
  }

  /// Says this replica is alive to the others every 5 s (control thread).
  static awaitable<void> replica_beat(state::ReplicaPresence& presence) {
    net::steady_timer t(co_await net::this_coro::executor);
    for (;;) {
      presence.beat(unix_ms());
      t.expires_after(std::chrono::seconds(5));
      auto [ec] = co_await t.async_wait(use_tuple);
      if (ec) co_return;
    }
  }

  // ---- signals ----
  /// Every signal whose default would end the process, except the crashes (fatal_signal_report)
  /// and SIGPIPE (ignored: a write to a closed pipe fails instead).
  static void add_signals(net::signal_set& set) {
    for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF,
                    SIGIO, SIGPWR, SIGSTKFLT, SIGXCPU, SIGXFSZ})
      set.add(sig);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) {
      boost::system::error_code ec;
      set.add(sig, ec);  // beyond what Asio handles: left as it is
    }
  }

  awaitable<void> signal_loop(net::signal_set& set) {
    for (;;) {
      auto [ec, sig] = co_await set.async_wait(use_tuple);
      if (ec) co_return;
      switch (sig) {
        case SIGINT:
        case SIGTERM:
        case SIGQUIT:
          if (!shared_.draining.load()) {
            begin_drain(sig);
          } else {
            spdlog::warn("signal {} ({}) while draining: stopping now, {} running requests cut off",
                         sig, signal_name(sig), shared_.active.load());
            for (auto& w : workers_) w->ioc.stop();
          }
          break;
        case SIGHUP:
          reload();
          break;
        case SIGUSR1: {
          std::string err;
          if (shared_.log.reopen(err))
            spdlog::info("signal {} (SIGUSR1): access log reopened", sig);
          else
            spdlog::error("signal {} (SIGUSR1): {}", sig, err);
          break;
        }
        default:
          spdlog::warn("signal {} ({}): ignored", sig, signal_name(sig));
      }
    }
  }

  // ---- reload (control thread) ----
  void reload() {
    if (!reload_) {
      spdlog::warn(
          "SIGHUP: the gateway was started without a config file (--backend): nothing to reload");
      return;
    }
    if (shared_.draining.load()) {
      spdlog::warn("SIGHUP while draining: no reload");
      return;
    }
    LoadedConfig next = reload_();
    if (!next.errors.empty()) {
      spdlog::error(
          "reload: the new configuration is invalid ({} error{}); still serving configuration "
          "generation {}",
          next.errors.size(), next.errors.size() == 1 ? "" : "s", fleet_->generation);
      for (const auto& e : next.errors) spdlog::error("reload:   {}", e.to_string());
      return;
    }
    for (const auto& w : next.warnings) spdlog::warn("reload: configuration: {}", w);
    for (const auto& w : keep_restart_only(fleet_->cfg, next.cfg)) spdlog::warn("reload: {}", w);
    auto built = build_fleet(std::move(next.cfg), fleet_.get(), slots_);
    if (built.fleet) {
      // The admin API's changes were run-time only: the file's configuration replaces them.
      for (const auto& b : built.fleet->backends) b->draining.store(false);
      if (!runtime_changes_.empty()) {
        spdlog::info("reload: replaces {} run-time change{} made through the admin API:",
                     runtime_changes_.size(), runtime_changes_.size() == 1 ? "" : "s");
        for (const auto& c : runtime_changes_) spdlog::info("reload:   replaced: {}", c);
        runtime_changes_.clear();
      }
    }
    if (!built.fleet) {
      for (const auto& e : built.errors) spdlog::error("reload: {}", e);
      spdlog::error("reload: failed; still serving configuration generation {}",
                    fleet_->generation);
      return;
    }
    install(std::move(built.fleet));
    spdlog::info("reload: configuration generation {} in use ({} backends, {} routes){}",
                 fleet_->generation, fleet_->backends.size(), fleet_->routes.size(),
                 built.changes.empty() ? "; nothing changed" : ":");
    for (const auto& c : built.changes) spdlog::info("reload:   {}", c);
  }

  /// Puts a new fleet in use: every worker switches to it between requests.
  void install(std::shared_ptr<const Fleet> next) {
    if (next->cfg.state.url != fleet_->cfg.state.url ||
        next->cfg.state.prefix != fleet_->cfg.state.prefix)
      spdlog::warn(
          "reload: `state` changed; the shared state in use stays as it was until the "
          "gateway restarts");
    fleet_ = std::move(next);
    state::MemoryResponseStore& table =
        shared_.responses_redis ? shared_.responses_redis->cache() : *shared_.responses_memory;
    table.set_limits(static_cast<std::size_t>(fleet_->cfg.affinity.max_entries),
                     fleet_->cfg.affinity.ttl);
    // The last worker to switch says the generation is in use everywhere (each worker takes the
    // reloads in order, so the generations it sets only grow).
    auto left = std::make_shared<std::atomic<std::size_t>>(workers_.size());
    for (auto& w : workers_) {
      net::post(
          w->ioc,
          [w = w.get(), left, gen = fleet_->generation, &everywhere = shared_.generation,
           fleet_handle = std::make_shared<const FleetHandle>(FleetHandle{fleet_})]() mutable {
            w->set_fleet(std::move(fleet_handle));
            if (left->fetch_sub(1, std::memory_order_acq_rel) == 1)
              everywhere.store(gen, std::memory_order_release);
          });
    }
    checker_.update(*fleet_);
  }

  // ---- admin API changes (control thread) ----
  std::string change_fleet(const AdminChange& ch, int& status) {
    using K = AdminChange::Kind;
    static constexpr std::string_view kVerb[] = {"drained", "undrained", "added", "removed"};
    const std::string_view verb = kVerb[static_cast<int>(ch.kind)];
    if (shared_.draining.load()) {
      status = 503;
      return "The gateway is shutting down: no changes.";
    }
    if (ch.kind == K::drain || ch.kind == K::undrain) {
      for (const auto& b : fleet_->backends) {
        if (b->name != ch.backend) continue;
        b->draining.store(ch.kind == K::drain);
        const std::string what =
            fmt::format("backend {} {} (admin API, from {})", b->name, verb, ch.by);
        spdlog::info("{}", what);
        runtime_changes_.push_back(what);
        return admin_backends_json(shared_, *fleet_);
      }
      status = 404;
      return fmt::format("No backend named '{}'.", ch.backend);
    }
    config::GatewayConfig cfg = fleet_->cfg;
    std::string error;
    if (!apply_change(ch, cfg, error, status)) return error;
    if (auto errors = config::validate(cfg); !errors.empty()) {
      status = 400;
      std::vector<std::string> lines;
      for (const auto& e : errors) lines.push_back(e.to_string());
      return fmt::format("The change makes the configuration invalid: {}", fmt::join(lines, "; "));
    }
    auto built = build_fleet(std::move(cfg), fleet_.get(), slots_);
    if (!built.fleet) {
      status = 400;
      return fmt::format("The change cannot be made: {}", fmt::join(built.errors, "; "));
    }
    install(std::move(built.fleet));
    const std::string what = ch.kind == K::add
                                 ? fmt::format("backend {} ({}) added (admin API, from {})",
                                               ch.backend, ch.add.url, ch.by)
                                 : fmt::format(
                                       "backend {} removed (admin API, from {}); its running "
                                       "requests finish",
                                       ch.backend, ch.by);
    spdlog::info("{}: configuration generation {} in use", what, fleet_->generation);
    runtime_changes_.push_back(what);
    status = ch.kind == K::add ? 201 : 200;
    return admin_backends_json(shared_, *fleet_);
  }

  // ---- drain ----
  void begin_drain(int sig) {
    spdlog::info("signal {} ({}): draining (up to {} ms for {} running requests)", sig,
                 signal_name(sig), fleet_->cfg.timeouts.drain.count(), shared_.active.load());
    shared_.draining = true;
    for (auto& w : workers_) {
      net::post(w->ioc, [w = w.get()] {
        for (auto& a : w->acceptors) {
          boost::system::error_code ec;
          a->close(ec);
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
      if (shared_.active.load() == 0 || MonoClock::now() >= deadline) {
        if (shared_.active.load() > 0)
          spdlog::warn("drain timeout: {} requests cut off", shared_.active.load());
        for (auto& w : workers_) w->ioc.stop();
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

  // ---- timeouts: one ticker per worker fires its expired deadlines ----
  static awaitable<void> deadline_ticker(Worker& w, AccessLog* log) {
    net::steady_timer t(w.ioc);
    for (std::uint64_t tick = 1;; ++tick) {
      t.expires_after(std::chrono::milliseconds(50));
      auto [ec] = co_await t.async_wait(use_tuple);
      if (ec) co_return;
      w.deadlines.fire_expired(coarse_ns());
      w.deferred_starts.run_due(++w.tick);  // the client watches of requests served for a tick
      if (tick % 4 == 0) w.sweep_pools();   // idle connections the backends closed
      if (tick % 4 == 0) core::thread_blocks().trim();  // freed blocks no request took back
      if (log && tick % 2 == 0) log->flush();  // the access log's lines, 100 ms at most late
    }
  }

  // ---- accept ----
  /// A connection over limits.max_connections: answered 503 at once (an HTTP/1.1 server may
  /// answer before the request is read) and closed by lingering, so the client reads it.
  static awaitable<void> refuse(tcp::socket sock, int limit) {
    static std::atomic<std::int64_t> last_log_ns{0};
    const std::int64_t now = mono_ns();
    if (now - last_log_ns.exchange(now) > 1'000'000'000)
      spdlog::warn("connection refused: {} client connections open (limits.max_connections)",
                   limit);
    const std::string body = openai_error_json(
        503, fmt::format("Too many connections: the gateway serves at most {} at once.", limit));
    const std::string res = fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nServer: llmux\r\nContent-Type: application/json\r\n"
        "Retry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
        body.size(), body);
    co_await net::async_write(sock, net::buffer(res), use_tuple);
    co_await http::lingering_close(sock,
                                   {std::chrono::seconds(2), std::chrono::seconds(1), 1u << 20});
  }

  /// Accepts on `acc`: listener `listener` of the configuration (-1: metrics.listen).
  awaitable<void> accept_loop(Worker& w, tcp::acceptor& acc, bool metrics_only, int listener) {
    for (;;) {
      auto [ec, sock] = co_await acc.async_accept(use_tuple);
      if (ec) {
        if (ec == net::error::operation_aborted || !acc.is_open()) co_return;
        spdlog::warn("accept: {}", ec.message());
        if (ec == net::error::no_descriptors) {
          net::steady_timer t(w.ioc, std::chrono::milliseconds(50));
          co_await t.async_wait(use_tuple);
        }
        continue;
      }
      sock.set_option(tcp::no_delay(true), ec);
      // A TLS listener's connections take the context of the configuration in use now.
      http::TlsContextPtr tls;
      if (const auto& contexts = w.fleet().listener_tls;
          listener >= 0 && static_cast<std::size_t>(listener) < contexts.size())
        tls = contexts[static_cast<std::size_t>(listener)];
      const int limit = w.fleet().cfg.limits.max_connections;
      const int open = shared_.connections.fetch_add(1, std::memory_order_relaxed) + 1;
      if (limit > 0 && open > limit) {
        shared_.connections.fetch_sub(1, std::memory_order_relaxed);
        if (tls) {
          // No plain-text 503 into a TLS handshake (the client could not read it): closed.
          boost::system::error_code ignored;
          sock.close(ignored);
        } else {
          net::co_spawn(w.ioc, refuse(std::move(sock), limit), net::detached);
        }
        continue;
      }
      net::co_spawn(w.ioc, session(shared_, w, std::move(sock), metrics_only, std::move(tls)),
                    net::detached);
    }
  }

  config::GatewayConfig start_cfg_;  // moved into the first fleet by run()
  ConfigLoader reload_;
  GatewayState shared_;
  std::shared_ptr<BackendSlots> slots_ = std::make_shared<BackendSlots>();
  std::shared_ptr<const Fleet> fleet_;  // the configuration in use (control thread after start)
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<tcp::acceptor> metrics_acceptor_;  // metrics.listen (on worker 0)
  std::uint16_t metrics_port_ = 0;
  std::vector<std::string> runtime_changes_;  // admin API changes since the last reload
  HealthChecker checker_;
  net::io_context control_{1};
  net::executor_work_guard<net::io_context::executor_type> control_work_{
      net::make_work_guard(control_)};
};

}  // namespace

int run_gateway(config::GatewayConfig cfg, ConfigLoader reload) {
  // A write to a closed stdout (the access log piped into a program that ended) fails with
  // EPIPE instead of ending the gateway; sockets never raise it (Asio sends with MSG_NOSIGNAL).
  ::signal(SIGPIPE, SIG_IGN);
  install_fatal_signal_report();
  Gateway g(std::move(cfg), std::move(reload));
  return g.run();
}

}  // namespace llmux::gateway
