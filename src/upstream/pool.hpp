#pragma once
// Upstream connections and the per-worker keep-alive pool of one backend.
//
// A pooled connection is invisible to clients when the backend closes it: while idle it is
// watched (a read is kept pending on it), and EOF, stray bytes, an error or its idle timeout
// closes and drops it at once; take() also checks the socket once more without blocking, for a
// close that arrived but whose watch handler has not run yet. Connections are put back only
// after a complete final response that did not end by close (the caller decides).
//
// One worker thread only. Connections are shared_ptr because the idle watch's pending handler
// keeps the one it watches alive until it runs, even after the pool let it go.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "http/deadline.hpp"

namespace llmux::upstream {

struct Upstream {
  Upstream(boost::asio::any_io_executor ex, http::DeadlineList& list) : sock(ex), dl(list, sock) {}
  boost::asio::ip::tcp::socket sock;
  boost::beast::flat_buffer buf;
  bool reused = false;  // taken from the pool (it carried an earlier exchange)
  http::ScopedDeadline dl;
  // Pool bookkeeping (UpstreamPool only).
  bool pooled = false;
  std::uint32_t pool_generation = 0;
  char probe = 0;
};

class Pool {
 public:
  explicit Pool(std::size_t max_idle = 256) : max_idle_(max_idle) {}
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  /// Keeps `up` for reuse for at most `idle_timeout` and watches it meanwhile. `up` must be
  /// open with no operation pending and nothing left unread; a full pool closes it instead.
  void put(std::shared_ptr<Upstream> up, std::chrono::milliseconds idle_timeout);
  /// The most recently returned live connection (marked reused), or nullptr when none is.
  std::shared_ptr<Upstream> take();
  std::size_t size() const { return idle_.size(); }
  /// Closes every idle connection (their watches then end on their own).
  void close_all();

 private:
  void drop(Upstream* up);
  std::vector<std::shared_ptr<Upstream>> idle_;
  std::size_t max_idle_;
};

}  // namespace llmux::upstream
