// SPDX-License-Identifier: Apache-2.0
#pragma once
// A client connection while its requests are served: the socket, its read buffer and deadline,
// the watch that notices the client leaving while a request is proxied, and the answers the
// gateway writes itself (JSON, errors in the client's dialect).
//
// One worker thread; a Client lives in its session's coroutine frame.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "gateway/worker.hpp"
#include "http/peer_watch.hpp"
#include "http/stream.hpp"

namespace llmux::gateway {

/// The watch on the client socket while a request is proxied (an http::PeerWatch): if the client
/// goes away, the upstream connection of the current attempt is closed at once (the backend
/// aborts the request), before or after the response header.
struct ClientWatch {
  ClientWatch() = default;
  http::PeerWatch peer;                       // the read kept pending on the client socket
  bool client_gone = false;                   // the client closed or reset its connection
  upstream::BackendConnection* up = nullptr;  // the current attempt's connection
  /// A hedge's connection while it races the first attempt (gateway/hedge.hpp).
  upstream::BackendConnection* hedge_up = nullptr;
  void close_upstream() {
    close(up);
    close(hedge_up);
  }
  static void close(upstream::BackendConnection* connection) {
    if (!connection) return;
    boost::system::error_code ignored;
    connection->sock.cancel(ignored);
    connection->sock.close(ignored);
  }
};

/// The shape of the gateway's own error answers to the current request: OpenAI's (every route
/// but Anthropic's) or Anthropic's (`/v1/messages...`: core/anthropic_error.hpp), which also
/// turns a 503 into Anthropic's 529.
enum class ErrorDialect : std::uint8_t { openai, anthropic };
/// The error dialect of a request path.
ErrorDialect error_dialect_for(std::string_view path);

struct ClientConnection {
  ClientConnection(tcp::socket socket, http::DeadlineList& list)
      : sock(std::move(socket)), dl(list, sock) {}
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;
  ~ClientConnection() { DeferredStartList::unlink(deferred_watch); }
  http::Stream sock;  // TLS on it when the listener has `tls` (session() shakes hands)
  beast::flat_buffer buf;
  bool keep_alive = true;
  std::string peer;
  std::chrono::milliseconds write_timeout{120000};  // the gateway's own answers (timeouts.idle)
  http::ScopedDeadline dl;
  ClientWatch watch;  // the current request's watch on this socket
  // The current request's priority class (gateway/sharing.hpp: an index into
  // priorities.classes): the share of a backend's slots its retries and hedges may take, and
  // vLLM's `priority` for send_priority.
  int priority_class = 0;
  ErrorDialect error_dialect = ErrorDialect::openai;  // the current request's (read_request)
  DeferredStart deferred_watch;  // linked while the watch waits to start (start_watch)
};

/// Watches the client from the worker's next tick but one (50-100 ms from now) if the request is
/// still served then (resets client.watch's client_gone and up now): the watch completes when
/// the client closes or resets its connection (then closes the current upstream connection), when
/// it pipelines its next request (those bytes stay in client.buf), or when stop_watch() cancels
/// it. A request served sooner costs no watch at all (a watch is parked in the worker's
/// ReadinessSet and ended by taking it back, but its start and end are work a short request need
/// not do); a client that leaves in the first tick is noticed when its watch starts, or when its
/// response is written.
void start_watch(Worker& worker, ClientConnection& client);
/// Ends the watch, so the session may read the socket again: true when that is done (the watch
/// had not started), false when its read is pending: then co_await stop_watch(client), which waits
/// until the read is gone.
bool end_watch(ClientConnection& client);
net::awaitable<void> stop_watch(ClientConnection& client);

/// Writes a response of `content_type` (keep-alive as c.keep_alive; Server and X-Request-Id
/// set; `header`: one more field, when its name is not empty; no body for HEAD). False when the
/// write failed (c.keep_alive is then false).
struct ExtraHeader {
  std::string_view name, value;
};
net::awaitable<bool> write_content(ClientConnection& client, int status,
                                   std::string_view content_type, std::string body,
                                   const Request* req, std::string_view request_id = {},
                                   ExtraHeader header = {});

/// Writes a JSON response (keep-alive as c.keep_alive; Server and X-Request-Id set; Retry-After
/// when `retry_after_s` > 0). False when the write failed (c.keep_alive is then false).
net::awaitable<bool> write_json(ClientConnection& client, int status, std::string body,
                                const Request* req, std::string_view request_id = {},
                                int retry_after_s = 0);
/// Writes an error in the current request's dialect (client.error_dialect: OpenAI's or
/// Anthropic's shape); `keep` false also ends the connection after it.
net::awaitable<bool> write_error(ClientConnection& client, int status, std::string_view message,
                                 const Request* req, bool keep = true,
                                 std::string_view request_id = {}, int retry_after_s = 0);

}  // namespace llmux::gateway
