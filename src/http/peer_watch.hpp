// SPDX-License-Identifier: Apache-2.0
#pragma once
// Noticing a peer that leaves while its request is served: one read is kept pending on the
// connection (the gateway's client, the simulator's client). If it fails (EOF, reset), the peer
// is gone and an optional callback runs at once (the gateway closes its upstream connection
// there). If bytes arrive instead (a pipelined next request), they are committed to the
// connection's buffer, where the session's next read finds them, and the watch ends without
// the peer being gone.
//
// One per-request cost. On a plain Stream in its worker's ReadinessSet, drained (the usual case:
// the request was just read), the watch itself is parked in the set (http/readiness.hpp): no
// system call, no allocation, and stop() takes it back at once. Elsewhere start() issues one
// async_read_some with a plain completion handler (one pointer; Asio recycles its operation's
// memory per thread), and stop() cancels the read and waits for its handler, so that the buffer
// and the watch may be used again. until_gone() completes only when the peer is gone, for use
// inside `||` (Asio's experimental awaitable operators) beside the work it may abort.
//
// Thread safety and ownership: one thread, the one running the socket's executor. The watch,
// the socket, the buffer and the callback's context are the caller's and must outlive the
// read's handler: await stop() before any of them goes or the buffer is read again (when the
// io_context is destroyed first, the pending handler is destroyed without running).
#include <cstddef>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "http/readiness.hpp"

namespace llmux::http {

class Stream;

class PeerWatch final : public ReadyWaiter {
 public:
  /// Called from the read's handler, once, when the peer is gone (not after stop()).
  using OnGone = void (*)(void* ctx);

  PeerWatch() = default;
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  /// Starts watching `sock` (gone() false again): reads at most `max_read` bytes (and no more
  /// than a few: the watch's own storage, so that the buffer need not hold memory while a
  /// response is served), then appends them to `buf`.
  /// The watch must not be active(). `on_gone(ctx)` runs when the peer closes or resets its
  /// connection; an error after stop() or a cancelled read is not the peer leaving.
  void start(boost::asio::ip::tcp::socket& sock, boost::beast::flat_buffer& buf,
             std::size_t max_read, OnGone on_gone = nullptr, void* ctx = nullptr);
  /// The same on a Stream: on a TLS connection the watch reads through TLS (a raw read would
  /// take TLS records away from it), so the peer's close_notify or its TCP close ends it, and a
  /// pipelined request's first decrypted bytes go to `buf`. stop() takes its socket().
  void start(Stream& stream, boost::beast::flat_buffer& buf, std::size_t max_read,
             OnGone on_gone = nullptr, void* ctx = nullptr);

  /// The peer closed or reset its connection while watched.
  bool gone() const { return gone_; }
  /// The read is pending (its handler has not run yet).
  bool active() const { return active_; }

  /// Ends the watch at once when it is parked in a ReadinessSet; true when it is no longer
  /// active() (else await stop()).
  bool stop_now();

  /// Ends the watch: cancels the pending read on `sock` (every operation on it: call it when
  /// the watch's read is the only one) and waits until its handler has run. At once when the
  /// watch is not active().
  boost::asio::awaitable<void> stop(boost::asio::ip::tcp::socket& sock);

  /// Completes when the peer is gone (at once if it already is). When the watch ended without
  /// that (pipelined bytes, stop()), it waits until cancelled; cancelled (as the losing side of
  /// `||`), it returns normally. Only one waiter at a time, and not while stop() waits.
  boost::asio::awaitable<void> until_gone();

 private:
  struct Handler;
  /// The state of a new watch (both start()s).
  void arm(boost::beast::flat_buffer& buf, OnGone on_gone, void* ctx);
  void on_read(const boost::system::error_code& ec, std::size_t bytes_read);
  // Parked in the stream's ReadinessSet: the socket may be readable now (or the wait aborted).
  void on_ready(const boost::system::error_code& ec) override;
  void discard() override;

  // Never expires: cancel() wakes until_gone(). Made by its first call (the gateway never makes
  // one: stop() needs none).
  std::unique_ptr<boost::asio::steady_timer> wake_;
  boost::beast::flat_buffer* buf_ = nullptr;
  Stream* stream_ = nullptr;  // parked in its ReadinessSet (else null)
  char bytes_[16];            // what the read got, appended to *buf_ by its handler
  std::size_t max_read_ = 0;
  OnGone on_gone_ = nullptr;
  void* ctx_ = nullptr;
  bool active_ = false;    // the read is pending
  bool stopping_ = false;  // stop() was called: the read's error is ours, not the peer's
  bool gone_ = false;      // the peer closed or reset its connection
};

}  // namespace llmux::http
