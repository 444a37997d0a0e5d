#include "gateway/client.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "core/openai_error.hpp"

namespace llmux::gateway {

void start_watch(Client& c) {
  c.watch = ClientWatch{};
  ClientWatch* watch = &c.watch;
  net::steady_timer* wake = &c.wake;
  beast::flat_buffer* buf = &c.buf;
  // A plain completion handler, not a coroutine: one per request, so it should be cheap. The
  // session waits (stop_watch) for this handler before it reads again or ends, so the raw
  // pointers stay valid.
  c.sock.async_read_some(buf->prepare(512),
                         [buf, watch, wake](boost::system::error_code ec, std::size_t n) {
                           if (!ec) {
                             buf->commit(n);
                           } else if (!watch->finished && ec != net::error::operation_aborted) {
                             watch->client_gone = true;
                             watch->close_upstream();
                           }
                           watch->done = true;
                           wake->cancel();
                         });
}

net::awaitable<void> stop_watch(Client& c) {
  c.watch.finished = true;
  c.watch.up = nullptr;
  if (!c.watch.done) {
    boost::system::error_code ignored;
    c.sock.cancel(ignored);
    while (!c.watch.done) co_await c.wake.async_wait(use_tuple);
  }
}

net::awaitable<bool> write_json(const Shared& s, Client& c, int status, std::string body,
                                const Request* req, std::string_view request_id) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status),
                                          req ? req->version() : 11u};
  res.set(bhttp::field::server, "llmux");
  if (!request_id.empty()) res.set("x-request-id", request_id);
  res.set(bhttp::field::content_type, "application/json");
  res.keep_alive(c.keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  c.dl.arm(s.cfg.timeouts.idle);
  auto [ec, n] = co_await bhttp::async_write(c.sock, res, use_tuple);
  c.dl.disarm();
  if (ec) c.keep_alive = false;
  co_return !ec;
}

net::awaitable<bool> write_error(const Shared& s, Client& c, int status, std::string_view message,
                                 const Request* req, bool keep, std::string_view request_id) {
  if (!keep) c.keep_alive = false;
  co_return co_await write_json(s, c, status, openai_error_json(status, message), req, request_id);
}

}  // namespace llmux::gateway
