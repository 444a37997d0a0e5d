// SPDX-License-Identifier: Apache-2.0
#pragma once
// A small synchronous HTTP/1.1 client for integration tests (Boost.Beast inside, kept out of
// this header), loopback only. Every operation is bounded by a timeout.
//
// Not thread-safe: one test thread owns each object.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "openai/sse.hpp"

namespace llmux::test {

using Headers = std::vector<std::pair<std::string, std::string>>;

/// Nanoseconds on CLOCK_MONOTONIC (comparable with the simulator's timestamps).
std::int64_t mono_ns();

struct Response {
  int status = 0;
  Headers headers;
  std::string body;
  /// Value of the first header named `name` (case-insensitive); empty when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

/// One keep-alive connection to 127.0.0.1:port; reconnects when the server closed it.
/// request() throws std::runtime_error on a transport error or timeout.
class HttpClient {
 public:
  explicit HttpClient(int port, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Response request(std::string_view method, std::string_view target, std::string_view body = {},
                   const Headers& headers = {});
  Response get(std::string_view target, const Headers& headers = {}) {
    return request("GET", target, {}, headers);
  }
  /// POST with Content-Type: application/json.
  Response post(std::string_view target, std::string_view body, const Headers& headers = {});
  /// Connections opened so far (1 when keep-alive reuse worked throughout).
  int connections_opened() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// How a read on a stream ended.
enum class ReadStatus {
  Data,     // bytes arrived
  End,      // the response body is complete (terminating chunk seen)
  Closed,   // the peer closed the connection before the body was complete
  Timeout,  // nothing arrived in time (the connection is then closed)
  Error,    // another transport or parse error
};
const char* to_string(ReadStatus s);

/// Body bytes as they arrived, stamped on CLOCK_MONOTONIC when the read returned them.
struct Chunk {
  std::string bytes;
  std::int64_t t_ns = 0;
};

/// A request whose response body is read incrementally (SSE). The header is read by open().
class StreamingResponse {
 public:
  /// Connects, sends the request and reads the response header (bounded by `timeout`).
  /// Throws std::runtime_error on failure.
  static std::unique_ptr<StreamingResponse> open(
      int port, std::string_view method, std::string_view target, std::string_view body,
      const Headers& headers = {}, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~StreamingResponse();

  int status() const;
  std::string header(std::string_view name) const;
  /// True when the response uses Transfer-Encoding: chunked.
  bool chunked() const;
  /// Waits up to `timeout` for more body bytes.
  ReadStatus read(Chunk& out, std::chrono::milliseconds timeout);
  /// Closes the socket at once (the client "vanishes").
  void close();

 private:
  StreamingResponse();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One Server-Sent Event: `event:` (empty if none) and `data:` lines, stamped with the arrival
/// time of the bytes that completed it.
struct SseEvent {
  std::string event;
  std::string data;
  std::int64_t t_ns = 0;
};

/// Splits a byte stream into SSE events with the project's own reader (src/openai/sse.hpp),
/// stamping each with the time its last chunk arrived. Strict: a line ending in CR or CRLF, or
/// a line over the reader's limits, throws std::runtime_error (the test fails with it).
class SseParser {
 public:
  /// Feeds bytes; returns the events they completed.
  std::vector<SseEvent> feed(std::string_view bytes, std::int64_t t_ns);
  /// True while bytes of an unfinished event are held back.
  bool pending() const { return parser_.mid_event(); }

 private:
  openai::SseParser parser_;
};

/// Everything read from a stream.
struct SseResult {
  std::vector<SseEvent> events;
  std::vector<Chunk> chunks;
  ReadStatus end = ReadStatus::Error;  // End, Closed, Timeout or Error (or Data if max hit)
  std::string raw() const;             // all bytes concatenated
};

/// Reads events until the body ends, the connection closes, `max_events` events were read
/// (end == Data), a single read waits longer than `idle_timeout`, or `total_timeout` passes.
SseResult read_sse(StreamingResponse& s, std::size_t max_events = SIZE_MAX,
                   std::chrono::milliseconds idle_timeout = std::chrono::seconds(5),
                   std::chrono::milliseconds total_timeout = std::chrono::seconds(30));

/// A plain TCP connection for sending arbitrary bytes (malformed HTTP).
class RawConnection {
 public:
  /// Connects to 127.0.0.1:port; throws std::runtime_error on failure.
  explicit RawConnection(int port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  /// Sends all of `bytes`; false on error.
  bool send(std::string_view bytes);
  /// Reads until the peer closes (sets *closed) or `timeout` passes.
  std::string read_until_close(std::chrono::milliseconds timeout, bool* closed = nullptr);
  /// Reads until it holds one complete HTTP response (header + Content-Length body; a 1xx,
  /// 204 or 304 is complete at its header), the peer closes, or `timeout` passes. Bytes past
  /// that response in the same read are returned too.
  std::string read_response(std::chrono::milliseconds timeout);
  void shutdown_write();
  void close();

 private:
  int fd_ = -1;
};

/// A raw HTTP response parsed loosely: status code (0 if none), headers and body (by
/// Content-Length, else the rest).
Response parse_raw_response(std::string_view bytes);

}  // namespace llmux::test
