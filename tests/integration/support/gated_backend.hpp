// SPDX-License-Identifier: Apache-2.0
#pragma once
// A tiny HTTP/1.1 backend inside the test process, for gateway tests that need a backend whose
// every move the test controls: SSE events written only when the test releases them, request
// headers echoed back, garbage instead of HTTP, connections closed after each response.
// Loopback only, port 0; every wait is bounded.
//
// Thread-safe: one thread per accepted connection serves it; the test thread calls the public
// methods (which lock a mutex) from outside.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.hpp"

namespace llmux::test {

/// A request as the backend received it (header names lower-cased, in arrival order).
struct ReceivedRequest {
  std::string method, target;
  Headers headers;
  std::string body;
  int connection = 0;  // 1 for the first connection the backend accepted, 2 for the next...
  /// Value of the first header named `name` (case-insensitive); empty when absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

class GatedBackend {
 public:
  enum class Mode {
    // 200 text/event-stream, chunked: `sse_events` events `data: {"k":K}` then `data: [DONE]`,
    // each written only once release() allowed it (the [DONE] event is the last release).
    GatedSse,
    // 200 application/json echoing the request: {"method","target","headers":{name:value},
    // "body"}; the response also carries hop-by-hop headers the gateway must strip
    // (Keep-Alive, and X-Hop-Resp named by Connection) and X-End-To-End, which must survive.
    Echo,
    // Reads the request, answers bytes that are not HTTP, closes.
    Garbage,
    // Reads the request and closes without a byte of response.
    CloseWithoutResponse,
  };
  struct Options {
    Mode mode = Mode::Echo;
    int sse_events = 5;
    // Close the connection right after each response, without saying so (no Connection:
    // close): a keep-alive connection a pool will find dead.
    bool close_after_response = false;
    // Bytes written before each response, e.g. an interim "HTTP/1.1 103 Early Hints\r\n...",
    // then a pause of `interim_pause` before the final response.
    std::string interim{};
    std::chrono::milliseconds interim_pause{0};
    // Echo: end the body by closing (no Content-Length, not chunked). The backend then only
    // shuts down its sending side and goes on reading, so a request sent on that connection
    // anyway is seen (and counted) instead of being lost in a reset.
    bool close_delimited = false;
    // Answer this many requests on each connection normally; read the next one completely,
    // then close without a response (-1: never).
    int drop_request_after = -1;
    // Close a connection on which no request began for this long (uvicorn's keep-alive
    // timeout); 0: never.
    std::chrono::milliseconds close_idle_after{0};
  };

  explicit GatedBackend(Options opts);
  /// Stops accepting, wakes every waiting connection and joins the threads.
  ~GatedBackend();
  GatedBackend(const GatedBackend&) = delete;
  GatedBackend& operator=(const GatedBackend&) = delete;

  int port() const { return port_; }
  /// Allows `n` more SSE events (shared by all connections, in order).
  void release(int n = 1);
  /// SSE events the backend has begun to write (all connections; the [DONE] event counts).
  /// Counted before the write, so it is never behind what a client has received.
  int events_sent() const;
  /// Waits up to `timeout` until events_sent() >= n.
  bool wait_events_sent(int n, std::chrono::milliseconds timeout) const;
  /// What GET /metrics answers from now on: `text` as Prometheus text (200), or 404 when empty
  /// (the default). Such requests are not recorded in requests().
  void set_metrics(std::string text);
  int connections_accepted() const;
  int connections_closed() const;
  /// Requests completely read so far.
  std::vector<ReceivedRequest> requests() const;
  /// Waits up to `timeout` until at least n requests were read.
  bool wait_requests(std::size_t n, std::chrono::milliseconds timeout) const;

 private:
  void accept_loop();
  void serve(int fd, int connection);
  bool read_request(int fd, std::string& buf, ReceivedRequest& out);
  bool send_all(int fd, std::string_view bytes);
  bool wait_gate();

  Options opts_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::thread> conn_threads_;
  std::vector<int> conn_fds_;
  std::vector<ReceivedRequest> requests_;
  std::string metrics_;
  int released_ = 0;
  int sent_ = 0;
  int accepted_ = 0;
  int closed_ = 0;
};

/// A loopback port nothing listens on: bound and kept bound, never listening, for the test
/// process's life (connect is refused, and no other server can take the port).
int closed_port();

}  // namespace llmux::test
