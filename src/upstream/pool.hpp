// SPDX-License-Identifier: Apache-2.0
#pragma once
// Connections to backends and the per-worker keep-alive pool of one backend.
//
// A pooled connection is invisible to clients when the backend closes it: take() looks at the
// socket without blocking (MSG_PEEK, unless the worker's ReadinessSet watches it and saw no event
// since its last read drained it: http/readiness.hpp) and drops one with EOF, an error or stray
// bytes waiting; sweep(), which the worker runs every 200 ms, closes the idle ones the backend
// closed (one MSG_PEEK each, so none lingers in CLOSE_WAIT), and its idle timeout closes an idle
// connection. Nothing is kept pending on an idle connection: a read there would cost a failed
// system call and a cancellation per request. Connections are put back only after a complete
// final response that did not end by close (the caller decides).
//
// One worker thread only. Connections are shared_ptr: a request and the pool hand them over.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "http/deadline.hpp"
#include "http/stream.hpp"

namespace llmux::upstream {

struct BackendConnection {
  BackendConnection(const boost::asio::ip::tcp::socket::executor_type& executor,
                    http::DeadlineList& list)
      : sock(executor), dl(list, sock) {}
  http::Stream sock;  // TLS on it for an https:// backend (gateway::connect() shakes hands)
  boost::beast::flat_buffer buf;
  bool reused = false;  // taken from the pool (it carried an earlier exchange)
  http::ScopedDeadline dl;
  // Pool bookkeeping (UpstreamPool only).
  bool pooled = false;
};

class Pool {
 public:
  explicit Pool(std::size_t max_idle = 256) : max_idle_(max_idle) {}
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  /// Keeps `connection` for reuse for at most `idle_timeout`. `connection` must be open with no
  /// operation pending and nothing left unread; a full pool closes it instead.
  void put(std::shared_ptr<BackendConnection> connection, std::chrono::milliseconds idle_timeout);
  /// The most recently returned live connection (marked reused), or nullptr when none is.
  std::shared_ptr<BackendConnection> take();
  std::size_t size() const { return idle_.size(); }
  /// Closes and forgets the idle connections the backend closed (or their timeout did): one
  /// MSG_PEEK each.
  void sweep();
  /// Closes every idle connection.
  void close_all();

 private:
  std::vector<std::shared_ptr<BackendConnection>> idle_;
  std::size_t max_idle_;
};

}  // namespace llmux::upstream
