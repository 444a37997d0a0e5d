// SPDX-License-Identifier: Apache-2.0
#include "sim/listener.hpp"

#include <boost/asio.hpp>

#include <spdlog/spdlog.h>

#include "core/use_tuple.hpp"

namespace llmux::sim {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using core::use_tuple;
using net::awaitable;

/// Accepts on `acc` until it is closed; each socket goes to `on_accept`. The loop owns its
/// acceptor, so a loop left over from before a refuse/resume never accepts on the new one.
awaitable<void> accept_loop(std::shared_ptr<tcp::acceptor> acc,
                            const Listener::OnAccept& on_accept) {
  for (;;) {
    auto [ec, sock] = co_await acc->async_accept(use_tuple);
    if (!acc->is_open()) co_return;  // closed meanwhile (refusing): `sock` closes with this frame
    if (ec) {
      if (ec == net::error::operation_aborted) co_return;
      spdlog::warn("accept: {}", ec.message());
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    on_accept(std::move(sock));
  }
}

}  // namespace

Listener::Listener(net::io_context& ioc, OnAccept on_accept)
    : ioc_(ioc), on_accept_(std::move(on_accept)) {}

boost::system::error_code Listener::open(const tcp::endpoint& endpoint) {
  auto acc = std::make_shared<tcp::acceptor>(ioc_);
  boost::system::error_code ec;
  acc->open(endpoint.protocol(), ec);
  if (!ec) acc->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc->bind(endpoint, ec);
  if (!ec) acc->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return ec;
  ep_ = acc->local_endpoint(ec);
  if (ec) return ec;
  acceptor_ = acc;
  net::co_spawn(ioc_, accept_loop(std::move(acc), on_accept_), net::detached);
  return {};
}

boost::system::error_code Listener::listen(const tcp::endpoint& endpoint) {
  return open(endpoint);
}

void Listener::refuse() {
  if (refusing_) return;
  refusing_ = true;
  boost::system::error_code ec;
  if (acceptor_) acceptor_->close(ec);
  acceptor_.reset();
  std::size_t closed = 0;
  for (Conn* connection : *conns_) {
    if (connection->idle && !connection->admin) {
      connection->stream.cancel();  // the session's header read ends: it closes the connection
      ++closed;
    }
  }
  spdlog::info("refusing new connections on port {} ({} idle connections closed)", ep_.port(),
               closed);
}

boost::system::error_code Listener::resume() {
  if (!refusing_) return {};
  if (auto ec = open(ep_)) return ec;
  refusing_ = false;
  spdlog::info("listening again on port {}", ep_.port());
  return {};
}

Listener::Tracked Listener::track(Conn& connection) {
  conns_->insert(&connection);
  return Tracked(conns_, &connection);
}

Listener::Tracked::~Tracked() {
  if (auto set = set_.lock()) set->erase(c_);
}

}  // namespace llmux::sim
