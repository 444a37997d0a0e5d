// SPDX-License-Identifier: Apache-2.0
#include "gateway/client_connection.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "core/openai_error.hpp"

namespace llmux::gateway {

namespace {
/// The watch itself, from the worker's ticker.
void start_watch_now(void* ctx) {
  auto& c = *static_cast<ClientConnection*>(ctx);
  // A plain completion handler (inside PeerWatch), not a coroutine. The session waits
  // (stop_watch) for it before it reads again or ends, so the pointers it holds stay valid.
  c.watch.peer.start(
      c.sock, c.buf, 512,
      [](void* ctx) {
        auto* watch = static_cast<ClientWatch*>(ctx);
        watch->client_gone = true;
        watch->close_upstream();
      },
      &c.watch);
}
}  // namespace

void start_watch(Worker& w, ClientConnection& c) {
  c.watch.client_gone = false;
  c.watch.up = nullptr;
  c.deferred_watch.run = start_watch_now;
  c.deferred_watch.ctx = &c;
  w.deferred_starts.link(c.deferred_watch, w.tick);
}

bool end_watch(ClientConnection& c) {
  DeferredStartList::unlink(c.deferred_watch);
  c.watch.up = nullptr;
  return c.watch.peer.stop_now();
}

net::awaitable<void> stop_watch(ClientConnection& c) {
  end_watch(c);
  return c.watch.peer.stop(c.sock.socket());  // not a coroutine itself: no frame of its own
}

net::awaitable<bool> write_content(ClientConnection& c, int status, std::string_view content_type,
                                   std::string body, const Request* req,
                                   std::string_view request_id, ExtraHeader header) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status),
                                          req ? req->version() : 11u};
  res.set(bhttp::field::server, "llmux");
  if (!request_id.empty()) res.set("x-request-id", request_id);
  res.set(bhttp::field::content_type, content_type);
  if (!header.name.empty()) res.set(header.name, header.value);
  res.keep_alive(c.keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  c.dl.arm(c.write_timeout);
  boost::system::error_code ec;
  if (req && req->method() == bhttp::verb::head) {
    bhttp::response_serializer<bhttp::string_body> sr{res};
    std::tie(ec, std::ignore) = co_await bhttp::async_write_header(c.sock, sr, use_tuple);
  } else {
    std::tie(ec, std::ignore) = co_await bhttp::async_write(c.sock, res, use_tuple);
  }
  c.dl.disarm();
  if (ec) c.keep_alive = false;
  co_return !ec;
}

net::awaitable<bool> write_json(ClientConnection& c, int status, std::string body,
                                const Request* req, std::string_view request_id,
                                int retry_after_s) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status),
                                          req ? req->version() : 11u};
  res.set(bhttp::field::server, "llmux");
  if (!request_id.empty()) res.set("x-request-id", request_id);
  res.set(bhttp::field::content_type, "application/json");
  if (retry_after_s > 0) res.set(bhttp::field::retry_after, std::to_string(retry_after_s));
  res.keep_alive(c.keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  c.dl.arm(c.write_timeout);
  auto [ec, n] = co_await bhttp::async_write(c.sock, res, use_tuple);
  c.dl.disarm();
  if (ec) c.keep_alive = false;
  co_return !ec;
}

net::awaitable<bool> write_error(ClientConnection& c, int status, std::string_view message,
                                 const Request* req, bool keep, std::string_view request_id,
                                 int retry_after_s) {
  if (!keep) c.keep_alive = false;
  co_return co_await write_json(c, status, openai_error_json(status, message), req, request_id,
                                retry_after_s);
}

}  // namespace llmux::gateway
