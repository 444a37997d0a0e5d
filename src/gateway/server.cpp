// `llmux gateway`: wiring. Builds the backends and routes from the validated config, starts the
// workers (one io_context and thread each, an SO_REUSEPORT acceptor per listener, a pool per
// backend), accepts connections into sessions, ticks the deadlines, and drains on SIGTERM.
//
// The rooms along the life of a request (docs/architecture.md draws them):
//   session.cpp (read, limits, timeouts, lingering close) → router.cpp (route table) →
//   proxy.cpp (policy pick + slot, each attempt's request built by http_rules.cpp, send, retry
//   decision from upstream/outcome) → relay.cpp (response to the client, taps.cpp on the way)
//   ‖ client.cpp (the watch on the client, local answers); models.cpp answers /v1/models.
#include "gateway/gateway.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "config/preflight.hpp"
#include "core/clock.hpp"
#include "core/openai_error.hpp"
#include "gateway/health.hpp"
#include "gateway/session.hpp"
#include "gateway/worker.hpp"
#include "http/linger.hpp"
#include "policy/policy.hpp"

namespace llmux::gateway {
namespace {

using net::awaitable;

// ---------------------------------------------------------------------------------------------

class Gateway {
 public:
  explicit Gateway(config::GatewayConfig cfg) { shared_.cfg = std::move(cfg); }

  int run() {
    auto& cfg = shared_.cfg;
    std::string err;
    if (!shared_.log.open(cfg.access_log.target, err)) {
      spdlog::error("{}", err);
      return 2;
    }
    // Backends: resolve once at start.
    net::io_context tmp;
    tcp::resolver resolver(tmp);
    for (std::size_t i = 0; i < cfg.backends.size(); ++i) {
      auto b = std::make_unique<upstream::Backend>();
      const auto& bc = cfg.backends[i];
      b->name = bc.name;
      b->index = static_cast<int>(i);
      b->weight = bc.weight;
      b->max_inflight = bc.max_inflight;
      b->url = bc.url;
      b->host = bc.host;
      b->port = bc.port;
      b->base_path = bc.base_path;
      b->pool_idle_timeout = bc.pool_idle_timeout;
      b->host_header = bc.port == 80 ? bc.host : fmt::format("{}:{}", bc.host, bc.port);
      if (!bc.api_key.empty()) b->authorization = "Bearer " + bc.api_key;
      boost::system::error_code ec;
      auto results = resolver.resolve(bc.host, std::to_string(bc.port), ec);
      if (ec) {
        spdlog::error("backend {}: cannot resolve '{}': {}", bc.name, bc.host, ec.message());
        return 2;
      }
      for (auto& r : results) b->endpoints.push_back(r.endpoint());
      shared_.backends.push_back(std::move(b));
    }
    const auto& od = cfg.outlier_detection;
    shared_.outlier = {od.enabled, od.consecutive_failures, od.base_ejection, od.max_ejection};
    for (const auto& rc : cfg.routes) {
      RouteRt r;
      r.cfg = &rc;
      r.retry_budget = std::make_unique<upstream::RetryBudget>(cfg.retries.budget,
                                                               cfg.retries.min_retries_per_second);
      std::string why;
      r.policy = policy::make_policy(rc.policy, rc.policy_options, &why);
      if (!r.policy) {
        spdlog::error("route {}: {}", rc.name, why);
        return 2;
      }
      for (const auto& name : rc.backends) {
        for (auto& b : shared_.backends) {
          if (b->name == name) r.backends.push_back(b.get());
        }
      }
      shared_.routes.push_back(std::move(r));
    }

    const int nthreads =
        cfg.threads > 0 ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
    workers_.reserve(nthreads);
    for (int i = 0; i < nthreads; ++i) {
      auto w = std::make_unique<Worker>();
      for (std::size_t b = 0; b < shared_.backends.size(); ++b)
        w->pools.push_back(std::make_unique<upstream::Pool>());
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

    for (auto& w : workers_) {
      for (auto& acc : w->acceptors) net::co_spawn(w->ioc, accept_loop(*w, *acc), net::detached);
      net::co_spawn(w->ioc, deadline_ticker(*w), net::detached);
    }
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < workers_.size(); ++i) {
      threads.emplace_back([w = workers_[i].get()] { w->ioc.run(); });
    }
    // The main thread runs worker 0 and the signal handling.
    net::signal_set signals(workers_[0]->ioc, SIGINT, SIGTERM);
    signals.async_wait([this](auto ec, int sig) {
      if (!ec) begin_drain(sig);
    });
    // SIGHUP would end the process by default; configuration reload does not exist yet.
    net::signal_set hup(workers_[0]->ioc, SIGHUP);
    net::co_spawn(workers_[0]->ioc, ignore_hangups(hup), net::detached);
    // Active health checks on a thread of their own.
    std::vector<upstream::Backend*> checked;
    std::vector<const config::HealthChecks*> settings;
    for (std::size_t i = 0; i < shared_.backends.size(); ++i) {
      checked.push_back(shared_.backends[i].get());
      settings.push_back(&cfg.backends[i].health);
    }
    HealthChecker checker(std::move(checked), std::move(settings));
    checker.start();
    spdlog::info("llmux gateway: {} backends, {} routes, {} threads, listening on port(s) {}",
                 shared_.backends.size(), shared_.routes.size(), nthreads, fmt::join(ports, ","));
    std::cout << fmt::format(R"({{"event":"ready","ports":[{}],"port":{},"pid":{}}})",
                             fmt::join(ports, ","), ports.empty() ? 0 : ports[0], ::getpid())
              << std::endl;
    workers_[0]->ioc.run();
    for (auto& t : threads) t.join();
    checker.stop();
    spdlog::info("llmux gateway: stopped");
    return 0;
  }

 private:
  // ---- drain ----
  void begin_drain(int sig) {
    spdlog::info("signal {}: draining (up to {} ms for {} running requests)", sig,
                 shared_.cfg.timeouts.drain.count(), shared_.active.load());
    shared_.draining = true;
    for (auto& w : workers_) {
      net::post(w->ioc, [w = w.get()] {
        for (auto& a : w->acceptors) {
          boost::system::error_code ec;
          a->close(ec);
        }
      });
    }
    const auto deadline = MonoClock::now() + shared_.cfg.timeouts.drain;
    auto timer = std::make_shared<net::steady_timer>(workers_[0]->ioc);
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

  static awaitable<void> ignore_hangups(net::signal_set& hup) {
    for (;;) {
      auto [ec, sig] = co_await hup.async_wait(use_tuple);
      if (ec) co_return;
      spdlog::warn(
          "SIGHUP: configuration reload is not supported yet; ignored (restart the "
          "gateway to apply a new configuration)");
    }
  }

  // ---- timeouts: one ticker per worker fires its expired deadlines ----
  static awaitable<void> deadline_ticker(Worker& w) {
    net::steady_timer t(w.ioc);
    for (;;) {
      t.expires_after(std::chrono::milliseconds(50));
      auto [ec] = co_await t.async_wait(use_tuple);
      if (ec) co_return;
      w.deadlines.fire_expired(mono_ns());
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

  awaitable<void> accept_loop(Worker& w, tcp::acceptor& acc) {
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
      const int limit = shared_.cfg.limits.max_connections;
      const int open = shared_.connections.fetch_add(1, std::memory_order_relaxed) + 1;
      if (limit > 0 && open > limit) {
        shared_.connections.fetch_sub(1, std::memory_order_relaxed);
        net::co_spawn(w.ioc, refuse(std::move(sock), limit), net::detached);
        continue;
      }
      net::co_spawn(w.ioc, session(shared_, w, std::move(sock)), net::detached);
    }
  }

  Shared shared_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace

int run_gateway(config::GatewayConfig cfg) {
  Gateway g(std::move(cfg));
  return g.run();
}

}  // namespace llmux::gateway
