// SPDX-License-Identifier: Apache-2.0
#include "gateway/client_connection.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "core/anthropic_error.hpp"
#include "core/openai_error.hpp"

namespace llmux::gateway {

namespace {
/// The watch itself, from the worker's ticker.
void start_watch_now(void* context) {
  auto& client = *static_cast<ClientConnection*>(context);
  // A plain completion handler (inside PeerWatch), not a coroutine. The session waits
  // (stop_watch) for it before it reads again or ends, so the pointers it holds stay valid.
  client.watch.peer.start(
      client.sock, client.buf, 512,
      [](void* ctx) {
        auto* watch = static_cast<ClientWatch*>(ctx);
        watch->client_gone = true;
        watch->close_upstream();
      },
      &client.watch);
}
}  // namespace

void start_watch(Worker& worker, ClientConnection& client) {
  client.watch.client_gone = false;
  client.watch.up = nullptr;
  client.watch.hedge_up = nullptr;
  client.deferred_watch.run = start_watch_now;
  client.deferred_watch.ctx = &client;
  worker.deferred_starts.link(client.deferred_watch, worker.tick);
}

bool end_watch(ClientConnection& client) {
  DeferredStartList::unlink(client.deferred_watch);
  client.watch.up = nullptr;
  client.watch.hedge_up = nullptr;
  return client.watch.peer.stop_now();
}

net::awaitable<void> stop_watch(ClientConnection& client) {
  end_watch(client);
  return client.watch.peer.stop(
      client.sock.socket());  // not a coroutine itself: no frame of its own
}

net::awaitable<bool> write_content(ClientConnection& client, int status,
                                   std::string_view content_type, std::string body,
                                   const Request* req, std::string_view request_id,
                                   ExtraHeader header) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status),
                                          req ? req->version() : 11u};
  res.set(bhttp::field::server, "llmux");
  if (!request_id.empty()) res.set("x-request-id", request_id);
  res.set(bhttp::field::content_type, content_type);
  if (!header.name.empty()) res.set(header.name, header.value);
  res.keep_alive(client.keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  client.dl.arm(client.write_timeout);
  boost::system::error_code ec;
  if (req && req->method() == bhttp::verb::head) {
    bhttp::response_serializer<bhttp::string_body> serializer{res};
    std::tie(ec, std::ignore) =
        co_await bhttp::async_write_header(client.sock, serializer, use_tuple);
  } else {
    std::tie(ec, std::ignore) = co_await bhttp::async_write(client.sock, res, use_tuple);
  }
  client.dl.disarm();
  if (ec) client.keep_alive = false;
  co_return !ec;
}

net::awaitable<bool> write_json(ClientConnection& client, int status, std::string body,
                                const Request* req, std::string_view request_id,
                                int retry_after_s) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status),
                                          req ? req->version() : 11u};
  res.set(bhttp::field::server, "llmux");
  if (!request_id.empty()) res.set("x-request-id", request_id);
  res.set(bhttp::field::content_type, "application/json");
  if (retry_after_s > 0) res.set(bhttp::field::retry_after, std::to_string(retry_after_s));
  res.keep_alive(client.keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  client.dl.arm(client.write_timeout);
  auto [ec, n] = co_await bhttp::async_write(client.sock, res, use_tuple);
  client.dl.disarm();
  if (ec) client.keep_alive = false;
  co_return !ec;
}

ErrorDialect error_dialect_for(std::string_view path) {
  return path == "/v1/messages" || path.starts_with("/v1/messages/") ? ErrorDialect::anthropic
                                                                     : ErrorDialect::openai;
}

net::awaitable<bool> write_error(ClientConnection& client, int status, std::string_view message,
                                 const Request* req, bool keep, std::string_view request_id,
                                 int retry_after_s) {
  if (!keep) client.keep_alive = false;
  if (client.error_dialect == ErrorDialect::anthropic) {
    const int anthropic = anthropic_status(status);
    co_return co_await write_json(client, anthropic, anthropic_error_json(anthropic, message), req,
                                  request_id, retry_after_s);
  }
  co_return co_await write_json(client, status, openai_error_json(status, message), req, request_id,
                                retry_after_s);
}

}  // namespace llmux::gateway
