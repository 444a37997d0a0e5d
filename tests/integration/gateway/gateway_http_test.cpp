// SPDX-License-Identifier: Apache-2.0
// `llmux gateway` as an exact HTTP/1.1 intermediary (RFC 9110/9112), proved with raw sockets,
// bodies larger than the socket buffers and backends whose every byte the test controls:
// - no client can receive another's answer (interim 1xx responses, close-delimited responses
//   and connections the backend closed never reach the pool, or are dropped from it);
// - nothing is smuggled (a body whose length cannot be determined is refused before a byte of it
//   is read; trailers and Connection-named fields stop at the gateway);
// - every error is readable (lingering close), and a request that reached a backend is never
//   sent to another one.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// One worker for one_route_config(), so the pool is one pool.
constexpr int kOneWorker = 1;

json::object echo_of(const Response& r) {
  return parse_json(r.body).as_object();
}

// Sockets in CLOSE_WAIT (the peer closed, this side has not) whose remote port is `port`.
int close_wait_sockets_to(int port) {
  return tcp_sockets_to(port, "08");
}

// ---------------------------------------------------------------------------------------------
// 1. Interim responses are not the response.

TEST(GatewayInterim, EarlyHintsAreNotTakenForTheResponse) {
  GatedBackend::Options o{GatedBackend::Mode::Echo};
  o.interim = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
  o.interim_pause = 200ms;  // the final response comes well after the interim one
  GatedBackend be(o);
  auto gw =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  // Two clients, one after the other, over the one pooled backend connection: each gets its
  // own final response.
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("client " + std::to_string(i));
    HttpClient c(gw->port());
    const std::string target = "/v1/client/" + std::to_string(i);
    Response r = c.post(target, R"({"n":)" + std::to_string(i) + "}");
    ASSERT_EQ(r.status, 200) << r.body;
    auto echo = echo_of(r);
    EXPECT_EQ(str(echo.at("target")), target) << "another client's answer";
    EXPECT_EQ(str(echo.at("body")), R"({"n":)" + std::to_string(i) + "}");
  }
  EXPECT_EQ(be.connections_accepted(), 1) << "the connection is pooled after the final response";
  gw->expect_clean_exit();
}

// ---------------------------------------------------------------------------------------------
// 2. Framing: a request whose body length cannot be determined is refused, and closed.

struct FramingCase {
  std::string name;
  int status;
  std::string request;
};

void PrintTo(const FramingCase& c, std::ostream* os) {
  *os << c.name;
}

const std::string kSmuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";

std::vector<FramingCase> framing_cases() {
  const std::string post = "POST /v1/framing HTTP/1.1\r\nHost: x\r\n";
  const std::string chunked_body = "5\r\nhello\r\n0\r\n\r\n";
  return {
      // Taken as bodiless by a parser that only looks for a final "chunked": its body would be
      // read as a second request.
      {"GzipOnly400", 400, post + "Transfer-Encoding: gzip\r\n\r\n" + kSmuggled},
      {"ChunkedThenIdentity400", 400,
       post + "Transfer-Encoding: chunked, identity\r\n\r\n" + chunked_body + kSmuggled},
      {"ChunkedTwice400", 400,
       post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked_body},
      {"EmptyTransferEncoding400", 400, post + "Transfer-Encoding: \r\n\r\n" + kSmuggled},
      {"GzipThenChunked501", 501, post + "Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked_body},
      {"CodingsSplitOverFields501", 501,
       post + "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked_body},
      {"TransferEncodingInHttp10_400", 400,
       "POST /v1/framing HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked_body},
      {"RepeatedContentLength400", 400,
       post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello" + kSmuggled},
      {"ContentLengthList400", 400, post + "Content-Length: 5, 5\r\n\r\nhello" + kSmuggled},
      {"ConflictingContentLength400", 400,
       post + "Content-Length: 5\r\nContent-Length: 40\r\n\r\nhello" + kSmuggled},
      {"ContentLengthWithTransferEncoding400", 400,
       post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n" + chunked_body},
  };
}

class GatewayFraming : public ::testing::TestWithParam<FramingCase> {};

TEST_P(GatewayFraming, RefusedBeforeTheBodyAndClosed) {
  const auto& c = GetParam();
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  {
    RawConnection raw(gw->port());
    ASSERT_TRUE(raw.send(c.request));
    const std::string bytes = raw.read_until_close(10s);
    Response r = parse_raw_response(bytes);
    EXPECT_EQ(r.status, c.status) << bytes;
    std::string why;
    EXPECT_TRUE(is_openai_error(r.body, c.status, &why)) << why << "\n" << bytes;
    EXPECT_EQ(bytes.find("HTTP/1.1", 8), std::string::npos)
        << "exactly one response, then the connection is closed:\n"
        << bytes;
  }
  // A marker request after it: the backend must have seen the marker and nothing before it.
  HttpClient ok(gw->port());
  EXPECT_EQ(ok.get("/v1/marker").status, 200);
  auto seen = be.requests();
  std::string targets;
  for (const auto& q : seen) targets += q.target + " ";
  ASSERT_EQ(seen.size(), 1u) << "the refused request (or its body) reached the backend: "
                             << targets;
  EXPECT_EQ(seen[0].target, "/v1/marker");
  gw->expect_clean_exit();
}

INSTANTIATE_TEST_SUITE_P(Each, GatewayFraming, ::testing::ValuesIn(framing_cases()));

// ---------------------------------------------------------------------------------------------
// 3. An error answered before the body was read is readable (lingering close), with bodies far
// larger than the socket buffers, written whole before the answer is read (as Python's
// http.client does).

struct LingerCase {
  std::string name;
  int status;
  std::string head;  // request line and fields, without the blank line
  std::size_t body;  // bytes sent after the head
};

void PrintTo(const LingerCase& c, std::ostream* os) {
  *os << c.name;
}

class GatewayLinger : public ::testing::TestWithParam<LingerCase> {};

TEST_P(GatewayLinger, ErrorIsReadAfterTheWholeBodyWasSent) {
  const auto& c = GetParam();
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  RawConnection raw(gw->port());
  ASSERT_TRUE(raw.send(c.head + "\r\n\r\n"));
  const std::string piece(1 << 20, 'x');
  std::size_t sent = 0;
  bool ok = true;
  while (ok && sent < c.body) {
    const std::size_t n = std::min(piece.size(), c.body - sent);
    ok = raw.send(std::string_view(piece).substr(0, n));
    if (ok) sent += n;
  }
  EXPECT_TRUE(ok) << "the gateway reset the connection after " << sent << " of " << c.body
                  << " body bytes";
  const std::string bytes = raw.read_response(10s);
  Response r = parse_raw_response(bytes);
  EXPECT_EQ(r.status, c.status) << bytes.substr(0, 300);
  std::string why;
  EXPECT_TRUE(is_openai_error(r.body, c.status, &why)) << why;
  bool closed = false;
  raw.shutdown_write();
  raw.read_until_close(10s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(be.requests().empty());
  gw->expect_clean_exit();
}

INSTANTIATE_TEST_SUITE_P(
    Each, GatewayLinger,
    ::testing::Values(
        // 40 MiB against the default 16 MiB limit.
        LingerCase{"BodyTooLarge413", 413,
                   "POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Content-Length: 41943040",
                   40u << 20},
        LingerCase{"BadFraming400", 400,
                   "POST /v1/x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip", 8u << 20},
        LingerCase{"HeadersTooLarge431", 431,
                   "POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\nX-Big: " +
                       std::string(70 * 1024, 'h'),
                   8u << 20}));

// ---------------------------------------------------------------------------------------------
// 4, 5. Fields that end at the gateway: request trailers, and whatever any Connection names.

TEST(GatewayFields, RequestTrailersDoNotBecomeHeaders) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  const std::string chunks = "5\r\nhello\r\n6\r\n world\r\n0\r\n";
  for (const bool with_id : {true, false}) {
    SCOPED_TRACE(with_id ? "with X-Request-Id" : "without X-Request-Id");
    RawConnection raw(gw->port());
    ASSERT_TRUE(raw.send(std::string("POST /v1/trailers HTTP/1.1\r\nHost: x\r\n") +
                         (with_id ? "X-Request-Id: header-id\r\n" : "") +
                         "Transfer-Encoding: chunked\r\nTrailer: X-Request-Id, X-Trailer-Field\r\n"
                         "\r\n" +
                         chunks + "X-Request-Id: trailer-id\r\nX-Trailer-Field: smuggled\r\n\r\n"));
    Response r = parse_raw_response(raw.read_response(10s));
    ASSERT_EQ(r.status, 200) << r.body;
    auto echo = echo_of(r);
    EXPECT_EQ(str(echo.at("body")), "hello world");
    EXPECT_EQ(echoed_header(echo, "x-trailer-field"), "") << json::serialize(echo);
    const std::string id = echoed_header(echo, "x-request-id");
    EXPECT_EQ(id.find("trailer-id"), std::string::npos) << json::serialize(echo);
    if (with_id) {
      EXPECT_EQ(id, "header-id");
    }
    EXPECT_EQ(r.header("x-request-id"), id);
  }
  gw->expect_clean_exit();
}

TEST(GatewayFields, EveryConnectionHeaderNamesHopByHopFields) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  RawConnection raw(gw->port());
  ASSERT_TRUE(
      raw.send("GET /v1/conn HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, X-First\r\n"
               "X-First: 1\r\nConnection: X-Second\r\nX-Second: 2\r\nconnection: x-third\r\n"
               "X-Third: 3\r\nX-Kept: 4\r\n\r\n"));
  Response r = parse_raw_response(raw.read_response(10s));
  ASSERT_EQ(r.status, 200) << r.body;
  auto echo = echo_of(r);
  EXPECT_EQ(echoed_header(echo, "x-first"), "") << json::serialize(echo);
  EXPECT_EQ(echoed_header(echo, "x-second"), "") << json::serialize(echo);
  EXPECT_EQ(echoed_header(echo, "x-third"), "") << json::serialize(echo);
  EXPECT_EQ(echoed_header(echo, "connection"), "") << json::serialize(echo);
  EXPECT_EQ(echoed_header(echo, "x-kept"), "4");
  // The backend's own Connection-named field does not reach the client either.
  EXPECT_FALSE(r.has_header("x-hop-resp"));
  EXPECT_EQ(r.header("x-end-to-end"), "kept");
  gw->expect_clean_exit();
}

// ---------------------------------------------------------------------------------------------
// 6. The body has its own idle timeout; the header timeout does not run over it.

TEST(GatewayTimeouts, BodyHasItsOwnIdleTimeout) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(
      one_route_config(kOneWorker, backend_line("be", be.port()), "be",
                       "timeouts: {client_header: 400ms, client_body: 2s}\n"));
  {
    // A slow but steady body: 12 bytes, one every 100 ms (1.2 s, three times client_header).
    RawConnection raw(gw->port());
    ASSERT_TRUE(raw.send("POST /v1/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n"));
    const std::string body = "slow-body-ok";
    for (char ch : body) {
      std::this_thread::sleep_for(100ms);  // the pace of the client under test, not a sync
      ASSERT_TRUE(raw.send(std::string(1, ch)));
    }
    Response r = parse_raw_response(raw.read_response(10s));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(str(echo_of(r).at("body")), body);
  }
  {
    // A body that stops: 408 once client_body passed with nothing.
    RawConnection raw(gw->port());
    ASSERT_TRUE(raw.send("POST /v1/stuck HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\nabc"));
    const auto t0 = std::chrono::steady_clock::now();
    Response r = parse_raw_response(raw.read_response(15s));
    const auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(r.status, 408) << r.body;
    EXPECT_GE(waited, 1500ms) << "408 before client_body (2 s) passed";
  }
  gw->expect_clean_exit();
}

// ---------------------------------------------------------------------------------------------
// 7, 8. Retries and the pool: only what never reached a backend is retried; a connection the
// backend closed (or will close) never carries a request.

TEST(GatewayRetry, RequestThatReachedABackendIsNotSentToAnother) {
  // Not a generation request (embeddings), and a generation request with migration off: neither
  // may run twice (a generation request with migration on is sent again:
  // gateway_migration_test).
  struct Case {
    std::string path, extra;
  };
  for (const Case& one_case :
       {Case{"/v1/embeddings", ""}, Case{"/v1/completions", "migration: {enabled: false}\n"}}) {
    SCOPED_TRACE(one_case.path);
    GatedBackend::Options drop{GatedBackend::Mode::Echo};
    drop.drop_request_after = 1;  // answers the first request of a connection, swallows the next
    GatedBackend first(drop);
    GatedBackend second({GatedBackend::Mode::Echo});
    auto gw = GatewayServer::with_config(one_route_config(
        kOneWorker, backend_line("first", first.port()) + backend_line("second", second.port()),
        "first, second", one_case.extra));
    HttpClient c(gw->port());
    Response r1 = c.post(one_case.path, R"({"n":1})");
    ASSERT_EQ(r1.status, 200) << r1.body;
    EXPECT_EQ(r1.header("x-llmux-backend"), "first");
    // The same pooled connection carries the second request; the backend reads all of it, then
    // closes without answering. It may have started work: no other backend gets it.
    Response r2 = c.post(one_case.path, R"({"n":2})", {{"X-Request-Id", "sent-once"}});
    EXPECT_EQ(r2.status, 502) << r2.body;
    std::string why;
    EXPECT_TRUE(is_openai_error(r2.body, 502, &why)) << why;
    EXPECT_EQ(first.requests().size(), 2u);
    EXPECT_TRUE(second.requests().empty()) << "the request was sent to a second backend";
    auto rec = gw->wait_access_record("sent-once", 5s);
    ASSERT_FALSE(rec.empty());
    EXPECT_EQ(rec.at("attempts"), 1);
    gw->expect_clean_exit();
  }
}

TEST(GatewayRetry, EachAttemptIsBuiltFreshFromTheClientsRequest) {
  // `keyed` has an api_key and a base path; after it goes away, the retry on `plain` must carry
  // the client's own Authorization and target, nothing of `keyed`.
  auto keyed = std::make_unique<GatedBackend>(GatedBackend::Options{GatedBackend::Mode::Echo});
  GatedBackend plain({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(one_route_config(
      kOneWorker,
      "  - {name: keyed, url: \"http://127.0.0.1:" + std::to_string(keyed->port()) +
          "/base\", api_key: key-of-keyed}\n" + backend_line("plain", plain.port()),
      "keyed, plain"));
  HttpClient c(gw->port());
  const Headers auth{{"Authorization", "Bearer client-key"}};
  Response r1 = c.post("/v1/x", "{}", auth);
  ASSERT_EQ(r1.status, 200);
  EXPECT_EQ(echoed_header(echo_of(r1), "authorization"), "Bearer key-of-keyed");
  EXPECT_EQ(str(echo_of(r1).at("target")), "/base/v1/x");
  const int keyed_port = keyed->port();
  keyed.reset();  // closes its connections (the pooled one too) and its port
  Response r2 = c.post("/v1/x?q=1", "{}", auth);
  ASSERT_EQ(r2.status, 200) << r2.body;
  EXPECT_EQ(r2.header("x-llmux-backend"), "plain");
  auto echo = echo_of(r2);
  EXPECT_EQ(echoed_header(echo, "authorization"), "Bearer client-key") << json::serialize(echo);
  EXPECT_EQ(str(echo.at("target")), "/v1/x?q=1");
  EXPECT_EQ(echoed_header(echo, "host"), "127.0.0.1:" + std::to_string(plain.port()));
  EXPECT_NE(echoed_header(echo, "host"), "127.0.0.1:" + std::to_string(keyed_port));
  gw->expect_clean_exit();
}

TEST(GatewayPool, CloseDelimitedResponseIsNotPooled) {
  GatedBackend::Options o{GatedBackend::Mode::Echo};
  o.close_delimited = true;
  GatedBackend be(o);
  auto gw =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  HttpClient c(gw->port());
  for (int i = 0; i < 3; ++i) {
    Response r = c.get("/v1/cd/" + std::to_string(i));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(str(echo_of(r).at("target")), "/v1/cd/" + std::to_string(i));
  }
  auto seen = be.requests();
  ASSERT_EQ(seen.size(), 3u) << "a request was sent on a connection whose response ended by close";
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].connection, int(i) + 1);
  gw->expect_clean_exit();
}

TEST(GatewayPool, IdleConnectionsExpireBeforeTheBackendClosesThem) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(one_route_config(
      kOneWorker, backend_line("be", be.port(), ", pool_idle_timeout: 300ms"), "be"));
  HttpClient c(gw->port());
  ASSERT_EQ(c.get("/v1/one").status, 200);
  EXPECT_TRUE(poll_until([&] { return be.connections_closed() == 1; }, 5s))
      << "the idle pooled connection was kept past pool_idle_timeout";
  ASSERT_EQ(c.get("/v1/two").status, 200);
  EXPECT_EQ(be.connections_accepted(), 2);
  gw->expect_clean_exit();
}

TEST(GatewayPool, ConnectionTheBackendClosedIsDroppedAtOnce) {
  GatedBackend::Options o{GatedBackend::Mode::Echo};
  o.close_idle_after = 200ms;  // like uvicorn's keep-alive timeout, shorter than the pool's
  GatedBackend be(o);
  auto gw =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  HttpClient c(gw->port());
  ASSERT_EQ(c.get("/v1/one").status, 200);
  ASSERT_TRUE(poll_until([&] { return be.connections_closed() == 1; }, 5s));
  EXPECT_TRUE(poll_until([&] { return close_wait_sockets_to(be.port()) == 0; }, 3s))
      << "the gateway holds the connection the backend closed (CLOSE_WAIT)";
  Response r = c.get("/v1/two");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(be.requests().size(), 2u);
  gw->expect_clean_exit();
}

// ---------------------------------------------------------------------------------------------
// 11. One gateway per port.

TEST(GatewayListen, SecondGatewayOnABusyPortRefusesToStart) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto first =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  TempDir dir;
  const std::string path =
      dir.write("second.yaml", "listen: \"127.0.0.1:" + std::to_string(first->port()) +
                                   "\"\nthreads: 2\nbackends:\n" + backend_line("be", be.port()) +
                                   "routes:\n  - {name: all, backends: [be]}\n");
  RunResult r = run_gateway({"--config", path}, 10s);
  EXPECT_FALSE(r.timed_out) << "the second gateway is serving on a port in use";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out.find("\"ready\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
  // The first one still has the port to itself.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(HttpClient(first->port()).get("/health").status, 200);
  first->expect_clean_exit();
}

// ---------------------------------------------------------------------------------------------
// 12. Smaller things an intermediary must get right.

TEST(GatewayContinue, NoInterimResponseForHttp10Clients) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw =
      GatewayServer::with_config(one_route_config(kOneWorker, backend_line("be", be.port()), "be"));
  RawConnection raw(gw->port());
  ASSERT_TRUE(
      raw.send("POST /v1/old HTTP/1.0\r\nHost: x\r\nContent-Length: 5\r\n"
               "Expect: 100-continue\r\n\r\n"));
  // An HTTP/1.0 client knows no 100 Continue: nothing may arrive before the final response.
  EXPECT_EQ(raw.read_response(500ms), "");
  ASSERT_TRUE(raw.send("hello"));
  const std::string bytes = raw.read_until_close(10s);
  EXPECT_EQ(bytes.rfind("HTTP/1.1 200", 0) == 0 || bytes.rfind("HTTP/1.0 200", 0) == 0, true)
      << bytes;
  EXPECT_EQ(str(parse_json(parse_raw_response(bytes).body).at("body")), "hello");
  gw->expect_clean_exit();
}

TEST(GatewayDrain, OpenConnectionsAtExitAreTornDownCleanly) {
  // Idle client connections and pooled backend connections still open when the workers stop:
  // their coroutines are destroyed with the io_context (the sanitizer jobs catch any use of
  // what was destroyed before).
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config("listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" +
                                       backend_line("be", be.port()) +
                                       "routes:\n  - {name: all, backends: [be]}\n");
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 6; ++i) {
    clients.push_back(std::make_unique<HttpClient>(gw->port()));
    ASSERT_EQ(clients.back()->get("/v1/keep/" + std::to_string(i)).status, 200);
  }
  RawConnection half(gw->port());
  ASSERT_TRUE(half.send("POST /v1/half HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"));
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
