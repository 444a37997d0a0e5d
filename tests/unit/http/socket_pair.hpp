// SPDX-License-Identifier: Apache-2.0
#pragma once
// A connected loopback pair for tests of the readiness machinery (http/readiness.hpp): a plain
// client socket and the accepted side as an http::Stream, on one io_context the test runs by hand.
#include <chrono>
#include <string>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "http/stream.hpp"

namespace llmux::test {

struct SocketPair {
  boost::asio::io_context ioc{1};
  boost::asio::ip::tcp::socket client{ioc};
  http::Stream server{ioc.get_executor()};
  SocketPair() {
    namespace net = boost::asio;
    net::ip::tcp::acceptor acc(ioc, {net::ip::make_address("127.0.0.1"), 0});
    client.connect(acc.local_endpoint());
    server = http::Stream(acc.accept());
  }
  void send(const std::string& s) { boost::asio::write(client, boost::asio::buffer(s)); }
  /// Runs the reactor for `d`: events for the server socket are seen (and their reads done).
  /// Restarted first: the io_context stops itself whenever it runs out of work, as it does when
  /// the guard of the spin before goes.
  /// For what must not happen within `d`; spin_until() waits for what must.
  void spin(std::chrono::milliseconds d = std::chrono::milliseconds(50)) {
    ioc.restart();
    auto guard = boost::asio::make_work_guard(ioc);
    ioc.run_for(d);
  }
  /// Runs the io_context, a handler at a time, until `done()` holds: true then, false when it
  /// still does not after `limit` (a generous bound: sanitizers and a loaded machine are slow).
  template <typename Condition>
  bool spin_until(Condition done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    ioc.restart();
    auto guard = boost::asio::make_work_guard(ioc);
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= end) return false;
      ioc.run_one_for(std::chrono::milliseconds(10));
    }
    return true;
  }
};

}  // namespace llmux::test
