// SPDX-License-Identifier: Apache-2.0
// The gateway's listening sockets and accept loops (gateway/gateway_process.hpp): every worker
// has an SO_REUSEPORT acceptor on every listener's port, so the kernel spreads connections over
// the workers; each accepted connection becomes a session (gateway/session.hpp) on the worker
// that accepted it, or a 503 when limits.max_connections are open.
#include <sys/socket.h>

#include <atomic>
#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "config/preflight.hpp"
#include "core/clock.hpp"
#include "core/openai_error.hpp"
#include "gateway/gateway_process.hpp"
#include "gateway/session.hpp"
#include "http/linger.hpp"

namespace llmux::gateway {

using net::awaitable;

int GatewayProcess::open_listeners(const config::GatewayConfig& config,
                                   std::vector<std::uint16_t>& ports) {
  // Every worker gets an acceptor on every listener's port: the first binds (port 0 → a free
  // port), the others join it.
  for (const auto& listener : config.listeners) {
    boost::system::error_code ec;
    const auto address = net::ip::make_address(listener.address, ec);
    if (ec) {
      spdlog::error("listen address '{}': {}", listener.address, ec.message());
      return 2;
    }
    std::uint16_t port = listener.port;
    // Fails at once when another process listens there: SO_REUSEPORT would otherwise let this
    // gateway join that process's port and silently take a share of its connections. The
    // port is shared only among this process's own workers (`--check` runs the same probe).
    if (const auto probe = config::check_listener(listener); !probe.ok) {
      spdlog::error("cannot {}", probe.to_string());
      return 1;
    }
    for (auto& worker : workers_) {
      auto acceptor = std::make_unique<tcp::acceptor>(worker->ioc);
      const tcp::endpoint endpoint(address, port);
      acceptor->open(endpoint.protocol(), ec);
      if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
      if (!ec) {
        int one = 1;
        ::setsockopt(acceptor->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
      }
      if (!ec) acceptor->bind(endpoint, ec);
      if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
      if (ec) {
        spdlog::error("cannot listen on {}:{}: {}", listener.address, port, ec.message());
        return 1;
      }
      port = acceptor->local_endpoint().port();
      worker->acceptors.push_back(std::move(acceptor));
    }
    ports.push_back(port);
  }
  // metrics.listen: /metrics and /dashboard on an address of their own, on worker 0.
  for (const auto& listener : config.metrics.listen) {
    boost::system::error_code ec;
    const auto address = net::ip::make_address(listener.address, ec);
    auto acceptor = std::make_unique<tcp::acceptor>(workers_[0]->ioc);
    const tcp::endpoint endpoint(address, listener.port);
    if (!ec) acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      spdlog::error("cannot listen on {}:{} (metrics.listen): {}", listener.address, listener.port,
                    ec.message());
      return 1;
    }
    metrics_port_ = acceptor->local_endpoint().port();
    metrics_acceptor_ = std::move(acceptor);
    spdlog::info("metrics and dashboard on {}:{} (metrics.listen)", listener.address,
                 metrics_port_);
  }
  return 0;
}

void GatewayProcess::start_accepting() {
  for (auto& worker : workers_) {
    for (std::size_t i = 0; i < worker->acceptors.size(); ++i)
      net::co_spawn(worker->ioc,
                    accept_loop(*worker, *worker->acceptors[i], false, static_cast<int>(i)),
                    net::detached);
  }
  if (metrics_acceptor_)
    net::co_spawn(workers_[0]->ioc, accept_loop(*workers_[0], *metrics_acceptor_, true, -1),
                  net::detached);
}

/// A connection over limits.max_connections: answered 503 at once (an HTTP/1.1 server may
/// answer before the request is read) and closed by lingering, so the client reads it.
awaitable<void> GatewayProcess::refuse(tcp::socket socket, int limit) {
  static std::atomic<std::int64_t> last_log_ns{0};
  const std::int64_t now = mono_ns();
  if (now - last_log_ns.exchange(now) > 1'000'000'000)
    spdlog::warn("connection refused: {} client connections open (limits.max_connections)", limit);
  const std::string body = openai_error_json(
      503, fmt::format("Too many connections: the gateway serves at most {} at once.", limit));
  const std::string response = fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nServer: llmux\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
      body.size(), body);
  co_await net::async_write(socket, net::buffer(response), use_tuple);
  co_await http::lingering_close(socket,
                                 {std::chrono::seconds(2), std::chrono::seconds(1), 1u << 20});
}

/// Accepts on `acceptor`: listener `listener` of the configuration (-1: metrics.listen).
awaitable<void> GatewayProcess::accept_loop(Worker& worker, tcp::acceptor& acceptor,
                                            bool metrics_only, int listener) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
      spdlog::warn("accept: {}", ec.message());
      if (ec == net::error::no_descriptors) {
        net::steady_timer pause(worker.ioc, std::chrono::milliseconds(50));
        co_await pause.async_wait(use_tuple);
      }
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    // A TLS listener's connections take the context of the configuration in use now.
    http::TlsContextPtr tls;
    if (const auto& contexts = worker.fleet().listener_tls;
        listener >= 0 && static_cast<std::size_t>(listener) < contexts.size())
      tls = contexts[static_cast<std::size_t>(listener)];
    const int limit = worker.fleet().cfg.limits.max_connections;
    const int open = state_.connections.fetch_add(1, std::memory_order_relaxed) + 1;
    if (limit > 0 && open > limit) {
      state_.connections.fetch_sub(1, std::memory_order_relaxed);
      if (tls) {
        // No plain-text 503 into a TLS handshake (the client could not read it): closed.
        boost::system::error_code ignored;
        socket.close(ignored);
      } else {
        net::co_spawn(worker.ioc, refuse(std::move(socket), limit), net::detached);
      }
      continue;
    }
    net::co_spawn(worker.ioc,
                  session(state_, worker, std::move(socket), metrics_only, std::move(tls)),
                  net::detached);
  }
}

}  // namespace llmux::gateway
