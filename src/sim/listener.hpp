// SPDX-License-Identifier: Apache-2.0
#pragma once
// The simulator's listening socket and its open connections: the accept loop; refusing new
// connections (runtime fault `refuse_new`: the listening socket is closed, so connecting gets
// ECONNREFUSED, and idle keep-alive connections other than admin ones are closed) while the
// requests already running finish; and listening again on the same address and port.
//
// Thread safety: one thread, the io_context's (the simulator is single-threaded). Ownership: the
// server owns the Listener; each accept loop holds its own acceptor, and each session registers
// its Conn with a Tracked guard that may outlive the Listener (at shutdown, when the io_context
// destroys the pending sessions after the Listener is gone).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <functional>
#include <memory>
#include <unordered_set>

#include "sim/http_io.hpp"

namespace llmux::sim {

class Listener {
 public:
  /// Called with each accepted socket (no_delay set).
  using OnAccept = std::function<void(boost::asio::ip::tcp::socket)>;

  Listener(boost::asio::io_context& ioc, OnAccept on_accept);

  /// Binds and listens on `endpoint` (port 0: a free port) and starts accepting.
  boost::system::error_code listen(const boost::asio::ip::tcp::endpoint& endpoint);
  /// The port listened on (also while refusing).
  unsigned short port() const { return ep_.port(); }

  /// Closes the listening socket and every idle connection (waiting for its next request) that
  /// never carried an admin request. Running requests go on.
  void refuse();
  /// Listens again on the same address and port; the error when that fails (then still
  /// refusing).
  boost::system::error_code resume();
  bool refusing() const { return refusing_; }

  /// Registers a session's connection for as long as the guard lives.
  class Tracked {
   public:
    Tracked(const Tracked&) = delete;
    Tracked& operator=(const Tracked&) = delete;
    ~Tracked();

   private:
    friend class Listener;
    Tracked(std::weak_ptr<std::unordered_set<Conn*>> set, Conn* connection)
        : set_(std::move(set)), c_(connection) {}
    std::weak_ptr<std::unordered_set<Conn*>> set_;
    Conn* c_;
  };
  [[nodiscard]] Tracked track(Conn& connection);

 private:
  boost::system::error_code open(const boost::asio::ip::tcp::endpoint& endpoint);

  boost::asio::io_context& ioc_;
  OnAccept on_accept_;
  boost::asio::ip::tcp::endpoint ep_;  // the bound endpoint (port resolved)
  std::shared_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  bool refusing_ = false;
  std::shared_ptr<std::unordered_set<Conn*>> conns_ = std::make_shared<std::unordered_set<Conn*>>();
};

}  // namespace llmux::sim
