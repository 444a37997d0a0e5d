// SPDX-License-Identifier: Apache-2.0
// Failures `llmux gateway` handles instead of passing on: a request that could not be sent is
// retried (a refused connect on another backend of the route, a pooled connection the backend
// closed on a fresh one), and every error the gateway answers itself is the OpenAI error shape
// with its own status: 404, 413, 408, 431, 400, 502, 503, 504. Whatever one client or backend
// does, the gateway keeps serving.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// Retry of what was never sent.

TEST(GatewayRetry, RefusedConnectIsRetriedOnTheNextBackend) {
  SimServer sim({"--time-scale", "100"});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("dead", closed_port()) +
      backend_line("live", sim.port()) +
      "routes:\n  - {name: failover, backends: [dead, live], policy: first}\n");
  HttpClient c(gw->port());
  for (int i = 0; i < 3; ++i) {
    const std::string rid = "retry-" + std::to_string(i);
    Response r =
        c.post("/v1/completions", R"({"prompt":"hello","max_tokens":2})", {{"X-Request-Id", rid}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-llmux-backend"), "live");
    auto rec = gw->wait_access_record(rid, 5s);
    ASSERT_FALSE(rec.empty()) << read_text_file(gw->access_log_path());
    EXPECT_EQ(rec.at("attempts"), 2) << json::serialize(rec);
    EXPECT_EQ(rec.at("backend"), "live");
    EXPECT_EQ(rec.at("route"), "failover");
    EXPECT_EQ(rec.at("status"), 200);
  }
  // Streaming requests fail over the same way.
  auto s = StreamingResponse::open(gw->port(), "POST", "/v1/completions",
                                   R"({"prompt":"hello","max_tokens":3,"stream":true})",
                                   {{"X-Request-Id", "retry-stream"}});
  EXPECT_EQ(s->status(), 200);
  EXPECT_EQ(s->header("x-llmux-backend"), "live");
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::End);
  EXPECT_EQ(gw->wait_access_record("retry-stream", 5s).at("attempts"), 2);
  gw->expect_clean_exit();
}

TEST(GatewayRetry, PooledConnectionClosedByTheBackendIsReplaced) {
  // The backend closes every connection right after its response, without saying so: the
  // gateway pools the connection and finds it dead on the next request.
  GatedBackend be({GatedBackend::Mode::Echo, 0, /*close_after_response=*/true});
  auto gw = GatewayServer::with_config("listen: \"127.0.0.1:0\"\nthreads: 1\nbackends:\n" +
                                       backend_line("closer", be.port()) +
                                       "routes:\n  - {name: all, backends: [closer]}\n");
  HttpClient c(gw->port());
  constexpr int kRequests = 5;
  for (int i = 0; i < kRequests; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    // The previous connection is closed on the backend's side before this request starts, and
    // its FIN has reached the gateway's socket (the kernel may deliver it later under load: a
    // close no proxy could know of yet).
    ASSERT_TRUE(poll_until([&] { return be.connections_closed() == i; }, 5s));
    ASSERT_TRUE(poll_until([&] { return tcp_sockets_to(be.port(), "01") == 0; }, 5s))
        << "the gateway's socket to the backend never saw the backend's FIN";
    Response r = i % 2 ? c.post("/echo", R"({"n":)" + std::to_string(i) + "}")
                       : c.get("/echo?n=" + std::to_string(i));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-llmux-backend"), "closer");
    EXPECT_EQ(str(parse_json(r.body).at("method")), i % 2 ? "POST" : "GET");
  }
  EXPECT_EQ(c.connections_opened(), 1) << "the client's own connection stayed up throughout";
  EXPECT_EQ(be.requests().size(), static_cast<std::size_t>(kRequests))
      << "each request reached the backend exactly once";
  EXPECT_EQ(be.connections_accepted(), kRequests);
  gw->expect_clean_exit();
}

// ---------------------------------------------------------------------------------------------
// Errors the gateway answers itself.

// Routes: /v1/garbage (a backend that answers non-HTTP), /v1/mute (closes without a response),
// /v1/down (two closed ports), /v1/* (a simulator); nothing else, so /nope has no route.
class GatewayErrors : public GatewaySuite {
 protected:
  static void SetUpTestSuite() {
    start([] {
      sim_ = std::make_unique<SimServer>(std::vector<std::string>{"--time-scale", "100"});
      garbage_ = std::make_unique<GatedBackend>(GatedBackend::Options{GatedBackend::Mode::Garbage});
      mute_ = std::make_unique<GatedBackend>(
          GatedBackend::Options{GatedBackend::Mode::CloseWithoutResponse});
      gw_ = GatewayServer::with_config(
          "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("sim", sim_->port()) +
          backend_line("garbage", garbage_->port()) + backend_line("mute", mute_->port()) +
          backend_line("dead1", closed_port()) + backend_line("dead2", closed_port()) +
          "routes:\n"
          "  - {name: garbage, match: {path: /v1/garbage}, backends: [garbage]}\n"
          "  - {name: mute, match: {path: /v1/mute}, backends: [mute]}\n"
          "  - {name: down, match: {path: /v1/down}, backends: [dead1, dead2]}\n"
          "  - {name: api, match: {path_prefix: /v1/}, backends: [sim]}\n"
          "timeouts: {client_header: 300ms, first_byte: 300ms}\n"
          "limits: {max_body_bytes: 1KiB, max_header_bytes: 4KiB}\n");
    });
  }
  static void TearDownTestSuite() {
    GatewaySuite::TearDownTestSuite();
    sim_.reset();
    garbage_.reset();
    mute_.reset();
  }

  static inline std::unique_ptr<SimServer> sim_;
  static inline std::unique_ptr<GatedBackend> garbage_, mute_;
};

// One bad thing a client or backend does, and the status the gateway must answer.
struct ErrorCase {
  const char* name;
  int status;
  // Either raw bytes sent on a new connection (malformed requests: the gateway must answer,
  // then close the connection it can no longer trust) or a request made with HttpClient.
  std::string raw;
  std::function<Response(int port)> run;
};

const std::string kBigBody = R"({"prompt":")" + std::string(2000, 'x') + R"(","max_tokens":1})";

std::string big_chunked_body() {
  std::string chunks;
  for (int i = 0; i < 4; ++i) chunks += "200\r\n" + std::string(0x200, 'y') + "\r\n";
  return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks +
         "0\r\n\r\n";
}

std::vector<ErrorCase> error_cases() {
  const std::string post = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n";
  return {
      {"NoRoute404", 404, "",
       [](int p) { return HttpClient(p).post("/nope", R"({"prompt":"x"})"); }},
      {"NoRouteGet404", 404, "", [](int p) { return HttpClient(p).get("/"); }},
      {"BodyTooLarge413", 413, "",
       [](int p) { return HttpClient(p).post("/v1/completions", kBigBody); }},
      {"ChunkedBodyTooLarge413", 413, big_chunked_body(), nullptr},
      // Half a header, then silence: timeouts.client_header is 300 ms.
      {"HeaderTimeout408", 408, post + "X-Half: ", nullptr},
      {"HeadersTooLarge431", 431,
       "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(8 * 1024, 'a') + "\r\n\r\n",
       nullptr},
      {"MalformedRequestLine400", 400, "GARBAGE\r\n\r\n", nullptr},
      {"BadContentLength400", 400, post + "Content-Length: abc\r\n\r\n", nullptr},
      {"ContentLengthAndTransferEncoding400", 400,
       post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", nullptr},
      {"BackendSendsGarbage502", 502, "",
       [](int p) { return HttpClient(p).post("/v1/garbage", R"({"prompt":"x"})"); }},
      {"BackendClosesWithoutResponse502", 502, "",
       [](int p) { return HttpClient(p).post("/v1/mute", R"({"prompt":"x"})"); }},
      {"NoBackendReachable503", 503, "",
       [](int p) { return HttpClient(p).post("/v1/down", R"({"prompt":"x"})"); }},
      // The simulator answers after 5 s; timeouts.first_byte is 300 ms.
      {"UpstreamFirstByteTimeout504", 504, "",
       [](int p) {
         return HttpClient(p).post("/v1/completions", R"({"prompt":"x","max_tokens":1})",
                                   {{"X-Llmux-Fault", "latency-ms=5000"}});
       }},
      {"StreamingFirstByteTimeout504", 504, "",
       [](int p) {
         return HttpClient(p).post("/v1/completions",
                                   R"({"prompt":"x","max_tokens":1,"stream":true})",
                                   {{"X-Llmux-Fault", "latency-ms=5000"}});
       }},
  };
}

// Runs the case and checks the answer: status, OpenAI error body, JSON content type, and for a
// malformed request a closed connection.
void run_case(const ErrorCase& e, int port) {
  SCOPED_TRACE(e.name);
  Response r;
  if (!e.raw.empty()) {
    RawConnection raw(port);
    ASSERT_TRUE(raw.send(e.raw));
    r = parse_raw_response(raw.read_response(10s));
    bool closed = false;
    raw.read_until_close(5s, &closed);
    EXPECT_TRUE(closed) << "the gateway kept open a connection it cannot trust";
  } else {
    r = e.run(port);
  }
  EXPECT_EQ(r.status, e.status) << r.body;
  std::string why;
  EXPECT_TRUE(is_openai_error(r.body, e.status, &why)) << why;
  EXPECT_EQ(r.header("content-type").rfind("application/json", 0), 0u);
}

class GatewayErrorCase : public GatewayErrors, public ::testing::WithParamInterface<ErrorCase> {};

TEST_P(GatewayErrorCase, AnswersInTheOpenAIShape) {
  run_case(GetParam(), port());
  // An ordinary request right after, on a new connection, is served.
  expect_serves(port());
}

// CTest names each case by this (…/AnswersInTheOpenAIShape/HeaderTimeout408).
void PrintTo(const ErrorCase& e, std::ostream* os) {
  *os << e.name;
}

INSTANTIATE_TEST_SUITE_P(Each, GatewayErrorCase, ::testing::ValuesIn(error_cases()));

TEST_F(GatewayErrors, KeepsServingAfterEveryError) {
  // All of them on one gateway, one after the other, then ordinary requests on a kept-alive
  // connection, streaming and not.
  for (const auto& e : error_cases()) run_case(e, port());
  HttpClient c(port());
  for (int i = 0; i < 3; ++i) {
    Response r = c.post("/v1/completions", R"({"prompt":"x","max_tokens":2})");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-llmux-backend"), "sim");
  }
  auto s = StreamingResponse::open(
      port(), "POST", "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"x"}],"max_tokens":3,"stream":true})");
  EXPECT_EQ(s->status(), 200);
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::End);
  ASSERT_FALSE(r.events.empty());
  EXPECT_EQ(r.events.back().data, "[DONE]");
}

TEST_F(GatewayErrors, ErrorsCarryTheRequestId) {
  HttpClient c(port());
  Response r = c.post("/nope", "{}", {{"X-Request-Id", "err-404-id"}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.header("x-request-id"), "err-404-id");
  Response d = c.post("/v1/down", "{}", {{"X-Request-Id", "err-503-id"}});
  EXPECT_EQ(d.status, 503);
  EXPECT_EQ(d.header("x-request-id"), "err-503-id");
  auto rec = gw_->wait_access_record("err-503-id", 5s);
  ASSERT_FALSE(rec.empty());
  EXPECT_EQ(rec.at("status"), 503);
  EXPECT_EQ(rec.at("attempts"), 2) << "both backends of the route were tried";
}

}  // namespace
}  // namespace llmux::test
