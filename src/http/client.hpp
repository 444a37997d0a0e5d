// SPDX-License-Identifier: Apache-2.0
#pragma once
// A small HTTP/1.1 client for C++20 coroutines on Boost.Asio, built for measuring: the response
// body is handed to a callback read by read, each read stamped with CLOCK_MONOTONIC (llmux::
// mono_ns) right after the socket read completed, before any parsing. llmux's HTTP/1.1 parser
// (message_parser.hpp, fed by hand) does the framing: Content-Length, chunked and
// close-delimited bodies; chunk framing is removed before the callback sees the bytes.
//
// A Connection is one socket slot: in keep_alive mode it reuses its socket across requests
// (reconnecting when the server closed it); in fresh mode every request opens a new connection
// and sends `Connection: close`, as Python's urllib does. Timeouts are enforced by one timer per
// connection, armed once per request (no timer per read): `idle` bounds the silence between two
// reads (a stalled stream), `total` the whole request.
//
// Beast stays inside client.cpp; this header only needs Asio's awaitable and executor.
//
// Thread safety and ownership: a Connection belongs to one coroutine at a time and to the
// executor it was created with (use a single-threaded io_context, or a strand). At most one
// request may be in flight per Connection. The callbacks run on that executor, inside
// request(); string views they receive are valid only during the call.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "http/stream.hpp"
#include "http/url.hpp"

namespace llmux::http {

enum class ConnectionMode {
  fresh,       ///< a new TCP connection per request, `Connection: close` (the seed's urllib)
  keep_alive,  ///< reuse the connection while the server keeps it open
};
std::optional<ConnectionMode> parse_connection_mode(std::string_view name);
std::string_view to_string(ConnectionMode mode);

struct Header {
  std::string name, value;
};

struct RequestSpec {
  std::string_view method = "POST";
  std::string_view target;  ///< path (and query); the Url's path prefix is prepended
  std::string_view body;
  std::string_view content_type = "application/json";
  std::span<const Header> headers;  ///< extra headers
  /// A response header whose value to keep (Response::captured), e.g. "X-Llmux-Backend".
  std::string_view capture_header;
};

/// How a request failed at the transport level (HTTP statuses are not failures here).
enum class Failure {
  none,
  connect,   ///< could not resolve or connect
  send,      ///< writing the request failed
  timeout,   ///< idle or total timeout
  closed,    ///< the peer closed the connection before the response was complete
  protocol,  ///< the response could not be parsed as HTTP/1.1
};
std::string_view to_string(Failure failure);

struct Response {
  Failure failure = Failure::none;
  std::string message;  ///< what went wrong, for failures
  int status = 0;       ///< 0 when no status line arrived
  bool complete = false;
  bool reused = false;             ///< sent on a kept-alive connection
  std::int64_t start_ns = 0;       ///< request() entered (before any connect)
  std::int64_t sent_ns = 0;        ///< request bytes written
  std::int64_t first_byte_ns = 0;  ///< first response byte read (0: none)
  std::int64_t end_ns = 0;         ///< response complete or failure noticed
  std::uint64_t body_bytes = 0;
  std::string content_type;
  std::string captured;  ///< the value of RequestSpec::capture_header ("" when absent)
};

struct Timeouts {
  std::chrono::milliseconds connect{10'000};
  std::chrono::milliseconds idle{60'000};  ///< longest silence while waiting for the response
  std::chrono::milliseconds total{0};      ///< whole request; 0 = none
};

struct ClientOptions {
  ConnectionMode mode = ConnectionMode::keep_alive;
  Timeouts timeouts;
  std::size_t read_size = 16 * 1024;  ///< bytes asked of each socket read
  /// An https:// Url's client context (required then), and whether the server's certificate is
  /// checked against the Url's host.
  TlsContextPtr tls{};
  bool tls_verify = true;
};

/// Called once the status line and headers have been parsed (status, Content-Type).
using HeadCallback = std::function<void(int status, std::string_view content_type)>;
/// Called with each read's body bytes (de-chunked) and the time that read completed.
using BodyCallback = std::function<void(std::string_view bytes, std::int64_t t_ns)>;

class Connection {
 public:
  Connection(boost::asio::any_io_executor executor, Url url, ClientOptions opt = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Sends one request and reads its response, calling `on_head` then `on_body` as bytes
  /// arrive. Never throws for network errors: they come back in Response::failure.
  boost::asio::awaitable<Response> request(const RequestSpec& req, const HeadCallback& on_head,
                                           const BodyCallback& on_body);
  /// Closes the socket (a later request reconnects).
  void close();
  /// Connections this object opened so far.
  std::uint64_t connects() const;
  const Url& url() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/// Convenience: one request whose body is collected into a string.
struct SimpleResponse {
  Response result;  // status, framing, timings, or how it failed
  std::string body;
};
boost::asio::awaitable<SimpleResponse> fetch(Connection& connection, const RequestSpec& req);

/// Runs `fetch` on a private io_context until it completes (setup calls such as GET /v1/models
/// before a run; not for the measured path). `tls`: an https:// url's client context.
SimpleResponse fetch_blocking(const Url& url, const RequestSpec& req,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10),
                              TlsContextPtr tls = nullptr, bool tls_verify = true);

}  // namespace llmux::http
