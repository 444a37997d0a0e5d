// SPDX-License-Identifier: Apache-2.0
#include "http/peer_watch.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/use_tuple.hpp"
#include "http/stream.hpp"

namespace llmux::http {

namespace net = boost::asio;

using core::use_tuple;

/// The read's completion handler: one pointer, so Asio's recycled operation memory holds it.
struct PeerWatch::Handler {
  PeerWatch* self;
  void operator()(const boost::system::error_code& ec, std::size_t bytes_read) const {
    self->on_read(ec, bytes_read);
  }
};

void PeerWatch::arm(boost::beast::flat_buffer& buf, OnGone on_gone, void* ctx) {
  buf_ = &buf;
  on_gone_ = on_gone;
  ctx_ = ctx;
  active_ = true;
  stopping_ = false;
  gone_ = false;
}

void PeerWatch::start(net::ip::tcp::socket& sock, boost::beast::flat_buffer& buf,
                      std::size_t max_read, OnGone on_gone, void* ctx) {
  arm(buf, on_gone, ctx);
  sock.async_read_some(net::buffer(bytes_, std::min(max_read, sizeof bytes_)), Handler{this});
}

void PeerWatch::start(Stream& stream, boost::beast::flat_buffer& buf, std::size_t max_read,
                      OnGone on_gone, void* ctx) {
  if (stream.park(*this)) {
    arm(buf, on_gone, ctx);
    stream_ = &stream;
    max_read_ = std::min(max_read, sizeof bytes_);
    return;
  }
  if (!stream.tls()) return start(stream.socket(), buf, max_read, on_gone, ctx);
  arm(buf, on_gone, ctx);
  stream.async_read_some(net::buffer(bytes_, std::min(max_read, sizeof bytes_)), Handler{this});
}

void PeerWatch::on_ready(const boost::system::error_code& ec) {
  Stream& stream = *std::exchange(stream_, nullptr);
  if (ec) return on_read(ec, 0);  // aborted: the socket was closed or cancelled under the watch
  boost::system::error_code read_error;
  const std::size_t bytes_read = stream.read_now(net::buffer(bytes_, max_read_), read_error);
  if (bytes_read > 0 || read_error) return on_read(read_error, bytes_read);
  // Nothing after all (the event was for bytes read since): wait on.
  if (stream.park(*this)) {
    stream_ = &stream;
    return;
  }
  stream.async_read_some(net::buffer(bytes_, max_read_), Handler{this});
}

void PeerWatch::discard() {
  stream_ = nullptr;
  active_ = false;
}

bool PeerWatch::stop_now() {
  stopping_ = true;
  if (stream_) {
    std::exchange(stream_, nullptr)->unpark();
    active_ = false;
  }
  return !active_;
}

void PeerWatch::on_read(const boost::system::error_code& ec, std::size_t bytes_read) {
  active_ = false;
  if (!ec) {
    // A pipelined next request: its first bytes go to the connection's buffer, where the
    // session's next read finds them (and reads the rest from the socket).
    const auto room = buf_->prepare(bytes_read);
    std::memcpy(room.data(), bytes_, bytes_read);
    buf_->commit(bytes_read);
  } else if (!stopping_ && ec != net::error::operation_aborted) {
    gone_ = true;
    if (on_gone_) on_gone_(ctx_);
  }
  if (wake_) wake_->cancel();
}

net::awaitable<void> PeerWatch::stop(net::ip::tcp::socket& sock) {
  if (stop_now()) co_return;
  boost::system::error_code ignored;
  sock.cancel(ignored);
  // The cancelled read's handler is queued on this thread ahead of the continuation posted here
  // (no timer to wake this: a held-open stream should cost little).
  const auto executor = co_await net::this_coro::executor;
  while (active_) co_await net::post(executor, net::use_awaitable);
}

net::awaitable<void> PeerWatch::until_gone() {
  // The timer never expires: a wait ends when the read's handler ran (then look again) or when
  // this coroutine is cancelled (then return; awaiting again would throw).
  if (!wake_)
    wake_ = std::make_unique<net::steady_timer>(co_await net::this_coro::executor,
                                                net::steady_timer::time_point::max());
  while (!gone_) {
    auto cancellation = co_await net::this_coro::cancellation_state;
    if (cancellation.cancelled() != net::cancellation_type::none) co_return;
    co_await wake_->async_wait(use_tuple);
  }
}

}  // namespace llmux::http
