// SPDX-License-Identifier: Apache-2.0
// The relay's reading of a backend's body, byte by byte as the backend chooses to cut it, and the
// client connection's next request arriving while a response is relayed (pipelining). The relay
// holds no buffer while a stream waits (gateway/relay.cpp): it parses what it holds before it
// waits for more, keeps the few bytes of an unfinished chunk header across the wait, and must
// neither lose a byte nor wait for bytes that will never come. A backend whose every write the
// test scripts (pieces and pauses, the connection kept open after the response, so only the
// framing can end it) and raw client sockets prove it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;

/// A backend that answers every request on a connection with the same scripted writes: each
/// piece written on its own, `pause` apart, the connection left open afterwards. Loopback, port
/// 0, one connection at a time; every wait is bounded.
class ScriptedBackend {
 public:
  ScriptedBackend(std::vector<std::string> pieces, std::chrono::milliseconds pause)
      : pieces_(std::move(pieces)), pause_(pause) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0)
      throw std::runtime_error("ScriptedBackend: bind/listen failed");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedBackend() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  /// Responses begun (counted before their first write) and connections accepted.
  int responses() const { return responses_; }
  int connections() const { return connections_; }

 private:
  void serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++connections_;
      timeval tv{0, 200000};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      std::string in;
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (!stop_ && std::chrono::steady_clock::now() < deadline) {
        // One whole request (a header, then a Content-Length body), then the script.
        const auto end = in.find("\r\n\r\n");
        if (end != std::string::npos) {
          std::string head = in.substr(0, end);
          for (char& ch : head)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          std::size_t length = 0;
          const auto cl = head.find("content-length:");
          if (cl != std::string::npos) length = std::stoul(head.substr(cl + 15));
          if (in.size() >= end + 4 + length) {
            in.erase(0, end + 4 + length);
            ++responses_;
            for (const auto& p : pieces_) {
              std::this_thread::sleep_for(pause_);  // the scripted backend's pace under test
              if (::send(c, p.data(), p.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(p.size()))
                break;
            }
            continue;
          }
        }
        char buf[4096];
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n == 0) break;
        if (n > 0) in.append(buf, static_cast<std::size_t>(n));
      }
      ::close(c);
    }
  }

  std::vector<std::string> pieces_;
  std::chrono::milliseconds pause_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> responses_{0};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

const std::string kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
const std::string kEvent1 = "data: {\"k\":1,\"text\":\"a chunk of two hex digits\"}\n\n";
const std::string kEvent2 = "data: {\"k\":2}\n\n";
const std::string kDone = "data: [DONE]\n\n";

/// A chunk's size line: its length in hex and CRLF.
std::string size_line(const std::string& data) {
  char b[16];
  std::snprintf(b, sizeof b, "%zx\r\n", data.size());
  return b;
}
std::string chunk(const std::string& data) {
  return size_line(data) + data + "\r\n";
}
const std::string kWholeBody = chunk(kEvent1) + chunk(kEvent2) + chunk(kDone) + "0\r\n\r\n";

std::string body_request() {
  return R"({"model":"m","prompt":"x","stream":true})";
}

/// The stream's events through the gateway, and how its body ended.
SseResult stream_through(int gw_port) {
  auto s = StreamingResponse::open(gw_port, "POST", "/v1/completions", body_request(),
                                   {{"Content-Type", "application/json"}});
  EXPECT_EQ(s->status(), 200);
  EXPECT_TRUE(s->chunked());
  // The backend keeps its connection open: only the chunked framing ends the body, well before
  // the gateway's idle timeout.
  return read_sse(*s, SIZE_MAX, 5s, 10s);
}

void expect_three_events(const SseResult& r) {
  EXPECT_EQ(r.end, ReadStatus::End) << "the body did not end: " << to_string(r.end) << "\n"
                                    << r.raw();
  ASSERT_EQ(r.events.size(), 3u) << r.raw();
  EXPECT_EQ(r.events[0].data, R"({"k":1,"text":"a chunk of two hex digits"})");
  EXPECT_EQ(r.events[1].data, R"({"k":2})");
  EXPECT_EQ(r.events[2].data, "[DONE]");
}

TEST(GatewayRelayFraming, ChunkHeadersSplitAndATinyLastEventWithTheEnd) {
  // A chunk-size line cut in two, a chunk's data and its CRLF apart, then the last event and
  // the terminating chunk in one write (a few bytes: what a relay that waited for more before
  // parsing what it holds would sit on until its idle timeout).
  const std::string size1 = size_line(kEvent1);
  ASSERT_GE(size1.size(), 4u) << "two hex digits, cut between them";
  ScriptedBackend be({kSseHead, size1.substr(0, 1), size1.substr(1), kEvent1, "\r\n",
                      chunk(kEvent2), chunk(kDone) + "0\r\n\r\n"},
                     30ms);
  auto gw = GatewayServer::with_config(one_route_config(
      /*threads=*/1, backend_line("be", be.port()), "be", "timeouts: {idle: 60s}\n"));
  const auto t0 = std::chrono::steady_clock::now();
  expect_three_events(stream_through(gw->port()));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  gw->expect_clean_exit();
}

TEST(GatewayRelayFraming, WholeResponseInOneWriteThenTheConnectionIsReused) {
  // Header and every chunk at once: the body bytes that came with the header are parsed before
  // the relay waits for anything. The connection stays open, so the next request reuses it.
  ScriptedBackend be({kSseHead + kWholeBody}, 0ms);
  auto gw = GatewayServer::with_config(one_route_config(
      /*threads=*/1, backend_line("be", be.port()), "be", "timeouts: {idle: 60s}\n"));
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    expect_three_events(stream_through(gw->port()));
  }
  EXPECT_EQ(be.responses(), 3);
  EXPECT_EQ(be.connections(), 1) << "the connection goes back to the pool after each response";
  gw->expect_clean_exit();
}

TEST(GatewayRelayFraming, EveryByteInItsOwnWrite) {
  // The whole body one byte at a time: every wait between them holds at most an unfinished
  // chunk header, and nothing is lost or doubled.
  std::vector<std::string> pieces{kSseHead};
  for (char ch : kWholeBody) pieces.emplace_back(1, ch);
  ScriptedBackend be(std::move(pieces), 1ms);
  auto gw = GatewayServer::with_config(one_route_config(
      /*threads=*/1, backend_line("be", be.port()), "be", "timeouts: {idle: 60s}\n"));
  expect_three_events(stream_through(gw->port()));
  gw->expect_clean_exit();
}

// ---------------------------------------------------------------------------------------------
// Pipelining: a request the client sends before the previous response ended is answered after
// it, whole, on the same connection.

TEST(GatewayPipelining, TwoRequestsInOneWriteAreAnsweredInOrder) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(one_route_config(1, backend_line("be", be.port()), "be"));
  RawConnection c(gw->port());
  const std::string a = R"({"n":"first"})";
  const std::string b = R"({"n":"second, a longer body than the watch's few bytes"})";
  ASSERT_TRUE(
      c.send("POST /v1/one HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: " +
             std::to_string(a.size()) + "\r\n\r\n" + a +
             "POST /v1/two HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: " +
             std::to_string(b.size()) + "\r\n\r\n" + b));
  std::string got = c.read_response(5s);
  const Response first = parse_raw_response(got);
  ASSERT_EQ(first.status, 200) << got;
  EXPECT_NE(first.body.find("/v1/one"), std::string::npos) << first.body;
  // The second answer may have come in the same read.
  const auto second_at = got.find("HTTP/1.1", 1);
  std::string rest = second_at == std::string::npos ? c.read_response(5s) : got.substr(second_at);
  const Response second = parse_raw_response(rest);
  ASSERT_EQ(second.status, 200) << rest;
  EXPECT_NE(second.body.find("/v1/two"), std::string::npos) << second.body;
  EXPECT_NE(second.body.find("longer body"), std::string::npos) << second.body;
  gw->expect_clean_exit();
}

TEST(GatewayPipelining, RequestSentWhileAStreamIsRelayedFollowsIt) {
  // The client's next request arrives while its stream is held open: the gateway's watch on
  // the client reads its first bytes, the stream goes on to its end, then the request is
  // answered whole (the watch's bytes in front of the rest).
  constexpr int kEvents = 3;
  GatedBackend be({GatedBackend::Mode::GatedSse, kEvents});
  auto gw = GatewayServer::with_config(one_route_config(1, backend_line("be", be.port()), "be"));
  RawConnection c(gw->port());
  const std::string stream_body = R"({"model":"m","prompt":"x","stream":true})";
  ASSERT_TRUE(
      c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
             "application/json\r\nContent-Length: " +
             std::to_string(stream_body.size()) + "\r\n\r\n" + stream_body));
  be.release(1);
  // The first event reaches the client; the stream waits for the next.
  std::string all;
  bool closed = false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline && all.find("data: ") == std::string::npos &&
         !closed)
    all += c.read_until_close(50ms, &closed);
  ASSERT_NE(all.find("data: "), std::string::npos) << "the first event was not relayed:\n" << all;
  // The duration under test: the watch on the client starts at the worker's second tick after
  // the request began (at most 100 ms, gateway/client_connection.hpp), so a request sent after
  // that is read by the watch while the stream is held, not by the session after it.
  std::this_thread::sleep_for(150ms);
  const std::string next = R"({"n":"pipelined while the stream was held open"})";
  ASSERT_TRUE(
      c.send("POST /v1/next HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: " +
             std::to_string(next.size()) + "\r\n\r\n" + next));
  be.release(kEvents);  // the rest of the events and [DONE]
  // Everything the connection carries: the whole stream, then the answer to the next request.
  while (std::chrono::steady_clock::now() < deadline &&
         all.find("0\r\n\r\nHTTP/1.1") == std::string::npos)
    all += c.read_until_close(200ms, &closed);
  const auto second_at = all.find("0\r\n\r\nHTTP/1.1");
  ASSERT_NE(second_at, std::string::npos) << "no answer after the stream:\n" << all;
  const std::string stream_part = all.substr(0, second_at);
  EXPECT_NE(stream_part.find("data: [DONE]"), std::string::npos) << stream_part;
  be.release(kEvents + 1);  // the pipelined request is a stream too
  std::string rest = all.substr(second_at + 5);
  while (std::chrono::steady_clock::now() < deadline &&
         rest.find("data: [DONE]") == std::string::npos)
    rest += c.read_until_close(200ms, &closed);
  // The GatedSse backend streams every request: the pipelined one's stream, whole.
  EXPECT_EQ(parse_raw_response(rest).status, 200) << rest;
  EXPECT_NE(rest.find("data: [DONE]"), std::string::npos) << rest;
  ASSERT_TRUE(be.wait_requests(2, 5s));
  const auto reqs = be.requests();
  EXPECT_EQ(reqs[1].target, "/v1/next");
  EXPECT_EQ(reqs[1].body, next);
  gw->expect_clean_exit();
}

/// Sends `request` on a raw loopback connection with a small receive buffer, waits `pause`
/// before reading (the gateway's writes find the socket full), then reads until `complete(in)`
/// says the response is all there or `limit` passes. Returns what was read.
template <typename Complete>
std::string read_slowly(int port, const std::string& request, std::chrono::milliseconds pause,
                        Complete complete, std::chrono::seconds limit = 30s) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  timeval tv{0, 200000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  std::string in;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    std::this_thread::sleep_for(pause);  // the slow reader under test: the socket stays full
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[1024];  // small reads: the gateway keeps finding the socket full
    while (!complete(in) && std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) break;
      if (n > 0) in.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return in;
}

/// A body of `n` bytes that shows any lost, repeated or reordered piece.
std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i / 7 + i) % 26);
  return s;
}

TEST(GatewaySlowClient, ALargeBodyReachesAClientThatReadsSlowlyWholeAndInOrder) {
  // Far larger than the socket buffers: most of the body is what the socket did not take at
  // once, copied and awaited by the relay, write after write.
  const std::string body = pattern(6 * 1024 * 1024);
  ScriptedBackend be({"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                      "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n",
                      body},
                     0ms);
  auto gw = GatewayServer::with_config(one_route_config(
      /*threads=*/1, backend_line("be", be.port()), "be", "timeouts: {idle: 60s}\n"));
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body_request().size()) + "\r\n\r\n" + body_request();
  const std::string got = read_slowly(gw->port(), req, 300ms, [&](const std::string& in) {
    const auto end = in.find("\r\n\r\n");
    return end != std::string::npos && in.size() >= end + 4 + body.size();
  });
  const auto end = got.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << "no response header";
  EXPECT_EQ(got.substr(0, 15), "HTTP/1.1 200 OK");
  ASSERT_EQ(got.size() - end - 4, body.size()) << "bytes lost or added";
  EXPECT_TRUE(got.compare(end + 4, std::string::npos, body) == 0) << "the body's bytes differ";
  gw->expect_clean_exit();
}

TEST(GatewaySlowClient, AnEventStreamReachesAClientThatReadsSlowlyEveryEventInOrder) {
  // Many events in large chunks: each write of the relay (chunk framing, events, the last
  // chunk) finds the socket full and awaits what it could not send.
  std::string events;
  std::string backend_body;
  for (int i = 0; i < 600; ++i) {
    const std::string ev = "data: {\"i\":" + std::to_string(i) + ",\"t\":\"" +
                           pattern(3000 + static_cast<std::size_t>(i)) + "\"}\n\n";
    events += ev;
    backend_body += chunk(ev);
  }
  backend_body += chunk(kDone) + "0\r\n\r\n";
  events += kDone;
  ScriptedBackend be({kSseHead, backend_body}, 0ms);
  auto gw = GatewayServer::with_config(one_route_config(
      /*threads=*/1, backend_line("be", be.port()), "be", "timeouts: {idle: 60s}\n"));
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body_request().size()) + "\r\n\r\n" + body_request();
  const std::string got = read_slowly(gw->port(), req, 300ms, [](const std::string& in) {
    return in.size() >= 5 && in.compare(in.size() - 5, 5, "0\r\n\r\n") == 0;
  });
  const auto end = got.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << "no response header";
  ASSERT_TRUE(got.size() >= 5 && got.compare(got.size() - 5, 5, "0\r\n\r\n") == 0)
      << "the stream did not end with its last chunk (" << got.size() << " bytes read)";
  // The chunks taken apart: their data, in order, is exactly the backend's events.
  std::string data;
  std::size_t at = end + 4;
  for (;;) {
    const auto eol = got.find("\r\n", at);
    ASSERT_NE(eol, std::string::npos);
    const std::size_t n = std::stoul(got.substr(at, eol - at), nullptr, 16);
    if (n == 0) break;
    ASSERT_LE(eol + 2 + n + 2, got.size());
    data.append(got, eol + 2, n);
    ASSERT_EQ(got.substr(eol + 2 + n, 2), "\r\n") << "a chunk's size does not match its data";
    at = eol + 2 + n + 2;
  }
  EXPECT_EQ(data.size(), events.size());
  EXPECT_TRUE(data == events) << "events lost, repeated or out of order";
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
