// SPDX-License-Identifier: Apache-2.0
// The seed's routing through `llmux gateway` (examples/seed.yaml pointed at two simulators on
// loopback ports): every /v1/responses on server1, chat completions alternating, the rest on
// server1, /health and /v1/models answered by the gateway; and the HTTP headers a proxy owes
// its backends and clients (X-Request-Id, X-Forwarded-*, hop-by-hop, backend keys).
#include <gtest/gtest.h>

#include <memory>
#include <set>
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

// A gateway in front of up to two simulators, shared by the tests of a suite.
class GatewayFixture : public GatewaySuite {
 protected:
  static void TearDownTestSuite() {
    GatewaySuite::TearDownTestSuite();
    s1_.reset();
    s2_.reset();
  }
  static inline std::unique_ptr<SimServer> s1_, s2_;
};

// ---------------------------------------------------------------------------------------------
// The seed's routing.

class SeedRouting : public GatewayFixture {
 protected:
  // Two models, so /v1/models shows whether the gateway took the union; requests name no
  // model, so either backend serves them.
  static void SetUpTestSuite() {
    start([] {
      s1_ = std::make_unique<SimServer>(
          std::vector<std::string>{"--time-scale", "100", "--served-model-name", "model-a"});
      s2_ = std::make_unique<SimServer>(
          std::vector<std::string>{"--time-scale", "100", "--served-model-name", "model-b"});
      gw_ = GatewayServer::with_config(seed_config(s1_->port(), s2_->port()));
    });
  }

  // The backend the gateway named, checked against the simulators' own records of the request
  // (looked up by its X-Request-Id): it must be on that one and not on the other.
  static void expect_served_by(const Response& r, const std::string& request_id,
                               const std::string& backend) {
    EXPECT_EQ(r.header("x-llmux-backend"), backend) << request_id << ": " << r.body;
    EXPECT_EQ(r.header("x-request-id"), request_id);
    HttpClient c1(s1_->port()), c2(s2_->port());
    const int on1 = c1.get("/debug/requests/" + request_id).status;
    const int on2 = c2.get("/debug/requests/" + request_id).status;
    EXPECT_EQ(on1, backend == "server1" ? 200 : 404) << request_id << " on server1";
    EXPECT_EQ(on2, backend == "server2" ? 200 : 404) << request_id << " on server2";
  }
};

TEST_F(SeedRouting, ResponsesAlwaysGoToServer1AndChainThroughTheGateway) {
  HttpClient c(gw_->port());
  std::string prev;
  std::int64_t last_cached = -1, last_input = 0;
  std::vector<std::string> ids;
  for (int turn = 1; turn <= 4; ++turn) {
    SCOPED_TRACE("turn " + std::to_string(turn));
    json::object req{{"input", "Turn " + std::to_string(turn) +
                                   ": tell me more about lighthouses on rocky coasts and the "
                                   "keepers who lived in them for decades."},
                     {"max_output_tokens", 16}};
    if (!prev.empty()) req["previous_response_id"] = prev;
    const std::string rid = "seed-responses-" + std::to_string(turn);
    Response r = c.post("/v1/responses", json::serialize(req), {{"X-Request-Id", rid}});
    ASSERT_EQ(r.status, 200) << r.body;
    expect_served_by(r, rid, "server1");
    auto o = parse_json(r.body).as_object();
    const auto& u = o.at("usage").as_object();
    const auto input = i64(u.at("input_tokens"));
    const auto cached = i64(u.at("input_tokens_details").at("cached_tokens"));
    EXPECT_GT(input, last_input) << "the chain must carry the history";
    if (turn >= 2) {
      EXPECT_EQ(str(o.at("previous_response_id")), prev);
      EXPECT_GT(cached, last_cached) << "cached_tokens must grow along the chain";
    }
    last_input = input;
    last_cached = cached;
    prev = std::string(o.at("id").as_string());
    ids.push_back(prev);
  }
  // Retrieval by id (GET /v1/responses/{id}) also goes to server1, where the store is.
  for (const auto& id : ids) {
    Response g = c.get("/v1/responses/" + id);
    EXPECT_EQ(g.status, 200) << g.body;
    EXPECT_EQ(g.header("x-llmux-backend"), "server1");
    EXPECT_EQ(str(parse_json(g.body).at("id")), id);
  }
  // .../cancel too (the simulator refuses to cancel a synchronous response: 400 from server1).
  Response x = c.post("/v1/responses/" + ids[0] + "/cancel", "");
  EXPECT_EQ(x.status, 400) << x.body;
  EXPECT_EQ(x.header("x-llmux-backend"), "server1");
}

TEST_F(SeedRouting, ChatCompletionsAlternateBetweenTheServers) {
  HttpClient c(gw_->port());
  std::vector<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    const std::string rid = "seed-chat-" + std::to_string(i);
    Response r = c.post("/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":3})",
                        {{"X-Request-Id", rid}});
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string b = r.header("x-llmux-backend");
    expect_served_by(r, rid, b);
    seen.push_back(b);
  }
  for (std::size_t i = 1; i < seen.size(); ++i)
    EXPECT_NE(seen[i], seen[i - 1])
        << "requests " << i - 1 << " and " << i << " both on " << seen[i];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "server1"), 4);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "server2"), 4);
  // Streaming chat alternates too.
  std::set<std::string> stream_backends;
  for (int i = 0; i < 2; ++i) {
    auto s = StreamingResponse::open(
        gw_->port(), "POST", "/v1/chat/completions",
        R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true})");
    ASSERT_EQ(s->status(), 200);
    stream_backends.insert(s->header("x-llmux-backend"));
    SseResult r = read_sse(*s);
    EXPECT_EQ(r.end, ReadStatus::End);
    ASSERT_FALSE(r.events.empty());
    EXPECT_EQ(r.events.back().data, "[DONE]");
  }
  EXPECT_EQ(stream_backends, (std::set<std::string>{"server1", "server2"}));
}

TEST_F(SeedRouting, EverythingElseGoesToServer1) {
  HttpClient c(gw_->port());
  for (int i = 0; i < 4; ++i) {
    const std::string rid = "seed-completions-" + std::to_string(i);
    Response r =
        c.post("/v1/completions", R"({"prompt":"hello","max_tokens":3})", {{"X-Request-Id", rid}});
    ASSERT_EQ(r.status, 200) << r.body;
    expect_served_by(r, rid, "server1");
  }
  auto s = StreamingResponse::open(gw_->port(), "POST", "/v1/completions",
                                   R"({"prompt":"hello","max_tokens":3,"stream":true})");
  EXPECT_EQ(s->header("x-llmux-backend"), "server1");
  EXPECT_EQ(read_sse(*s).end, ReadStatus::End);
  // Paths the backends do not know still go to server1, whose answer is relayed as is.
  for (const char* path : {"/v1/embeddings", "/tokenize"}) {
    Response r = c.post(path, "{}");
    EXPECT_EQ(r.header("x-llmux-backend"), "server1") << path;
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.body, R"({"detail":"Not Found"})") << path;  // vLLM's (Starlette's) own body
  }
  // So does anything else the backends serve (vLLM's /version); /metrics is the gateway's own.
  Response v = c.get("/version");
  EXPECT_EQ(v.header("x-llmux-backend"), "server1");
  Response m = c.get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.header("x-llmux-backend"), "");
  EXPECT_NE(m.body.find("llmux_requests_total"), std::string::npos);
  EXPECT_EQ(m.body.find("vllm:num_requests_running"), std::string::npos);
}

TEST_F(SeedRouting, ModelsIsTheUnionOfTheBackends) {
  HttpClient c(gw_->port());
  Response r = c.get("/v1/models");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.has_header("x-llmux-backend")) << "answered by the gateway itself";
  auto o = parse_json(r.body).as_object();
  EXPECT_EQ(o.at("object"), "list");
  std::multiset<std::string> ids;
  for (const auto& m : o.at("data").as_array()) {
    ids.insert(str(m.at("id")));
    EXPECT_EQ(m.at("object"), "model");
  }
  EXPECT_EQ(ids, (std::multiset<std::string>{"model-a", "model-b"}));
}

TEST_F(SeedRouting, HealthIsAnsweredLocally) {
  HttpClient c(gw_->port());
  Response r = c.get("/health");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.has_header("x-llmux-backend"));
  EXPECT_EQ(parse_json(r.body).at("status"), "ok") << "the gateway's own body, not a backend's";
}

// ---------------------------------------------------------------------------------------------
// Headers: an echoing backend shows what the gateway sent upstream.

class GatewayHeaders : public GatewayFixture {
 protected:
  static void SetUpTestSuite() {
    start([] {
      echo_ = std::make_unique<GatedBackend>(GatedBackend::Options{GatedBackend::Mode::Echo});
      s1_ = std::make_unique<SimServer>(std::vector<std::string>{"--time-scale", "100"});
      gw_ = GatewayServer::with_config(
          "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("echo", echo_->port()) +
          "  - {name: keyed, url: \"http://127.0.0.1:" + std::to_string(echo_->port()) +
          "/base\", api_key: sk-backend-key}\n" + backend_line("sim", s1_->port()) +
          "routes:\n"
          "  - {name: keyed, match: {path_prefix: /keyed/}, backends: [keyed]}\n"
          "  - {name: sim, match: {path_prefix: /v1/}, backends: [sim]}\n"
          "  - {name: echo, match: {path_prefix: /}, backends: [echo]}\n");
    });
  }
  static void TearDownTestSuite() {
    GatewayFixture::TearDownTestSuite();
    echo_.reset();
  }
  // What the echo backend received: {"method","target","headers":{name:value},"body"}.
  static json::object echoed(const Response& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    auto v = parse_json(r.body);
    return v.is_object() ? v.as_object() : json::object{};
  }
  static bool upstream_has(const json::object& e, const std::string& name) {
    return e.at("headers").as_object().contains(name);
  }
  static inline std::unique_ptr<GatedBackend> echo_;
};

TEST_F(GatewayHeaders, ClientRequestIdReachesTheBackend) {
  HttpClient c(gw_->port());
  Response r = c.post("/v1/completions", R"({"prompt":"hi","max_tokens":2})",
                      {{"X-Request-Id", "client-chosen-id-42"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-request-id"), "client-chosen-id-42");
  HttpClient sim(s1_->port());
  Response d = sim.get("/debug/requests/client-chosen-id-42");
  ASSERT_EQ(d.status, 200) << "the simulator has no request with the client's id: " << d.body;
  EXPECT_EQ(parse_json(d.body).at("request_id"), "client-chosen-id-42");

  auto e = echoed(c.get("/echo", {{"X-Request-Id", "client-chosen-id-43"}}));
  EXPECT_EQ(echoed_header(e, "x-request-id"), "client-chosen-id-43");
}

TEST_F(GatewayHeaders, RequestIdIsGeneratedWhenAbsent) {
  HttpClient c(gw_->port());
  Response r1 = c.get("/echo");
  Response r2 = c.get("/echo");
  auto e1 = echoed(r1), e2 = echoed(r2);
  const std::string id1 = echoed_header(e1, "x-request-id");
  const std::string id2 = echoed_header(e2, "x-request-id");
  EXPECT_FALSE(id1.empty());
  EXPECT_NE(id1, id2) << "each request gets its own id";
  EXPECT_EQ(r1.header("x-request-id"), id1) << "the client sees the id the backend got";
  // Through to the simulator, findable there by the generated id.
  Response s = c.post("/v1/completions", R"({"prompt":"hi","max_tokens":2})");
  ASSERT_EQ(s.status, 200);
  const std::string gen = s.header("x-request-id");
  ASSERT_FALSE(gen.empty());
  HttpClient sim(s1_->port());
  EXPECT_EQ(sim.get("/debug/requests/" + gen).status, 200) << gen;
}

TEST_F(GatewayHeaders, ForwardedHeadersAreAdded) {
  HttpClient c(gw_->port());
  auto e = echoed(c.get("/echo"));
  EXPECT_EQ(echoed_header(e, "x-forwarded-for"), "127.0.0.1");
  EXPECT_EQ(echoed_header(e, "x-forwarded-proto"), "http");
  auto chained = echoed(c.get("/echo", {{"X-Forwarded-For", "203.0.113.7"}}));
  EXPECT_EQ(echoed_header(chained, "x-forwarded-for"), "203.0.113.7, 127.0.0.1");
}

TEST_F(GatewayHeaders, HopByHopHeadersAreNotForwarded) {
  HttpClient c(gw_->port());
  Response r = c.request("POST", "/echo?q=1", R"({"x":1})",
                         {{"Connection", "keep-alive, X-Hop-Req"},
                          {"X-Hop-Req", "must-not-pass"},
                          {"Keep-Alive", "timeout=5"},
                          {"TE", "trailers"},
                          {"Proxy-Authorization", "Basic Zm9vOmJhcg=="},
                          {"Proxy-Connection", "keep-alive"},
                          {"Upgrade", "h2c"},
                          {"X-End-To-End", "must-pass"}});
  auto e = echoed(r);
  for (const char* h :
       {"keep-alive", "x-hop-req", "te", "proxy-authorization", "proxy-connection", "upgrade"})
    EXPECT_FALSE(upstream_has(e, h)) << h << " reached the backend: " << r.body;
  const std::string conn = echoed_header(e, "connection");
  EXPECT_EQ(conn.find("X-Hop-Req"), std::string::npos) << conn;
  EXPECT_EQ(conn.find("x-hop-req"), std::string::npos) << conn;
  EXPECT_EQ(echoed_header(e, "x-end-to-end"), "must-pass");
  EXPECT_EQ(str(e.at("method")), "POST");
  EXPECT_EQ(str(e.at("target")), "/echo?q=1");
  EXPECT_EQ(str(e.at("body")), R"({"x":1})");
  // The way back: the backend's hop-by-hop headers stay between it and the gateway.
  EXPECT_FALSE(r.has_header("keep-alive"));
  EXPECT_FALSE(r.has_header("x-hop-resp"));
  EXPECT_EQ(r.header("x-end-to-end"), "kept");
  EXPECT_EQ(r.header("x-llmux-backend"), "echo");
}

TEST_F(GatewayHeaders, ChunkedRequestBodyIsForwardedWhole) {
  RawConnection raw(gw_->port());
  ASSERT_TRUE(
      raw.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n4\r\n\"b\"}\r\n0\r\n\r\n"));
  Response r = parse_raw_response(raw.read_response(10s));
  auto e = echoed(r);
  EXPECT_EQ(str(e.at("body")), R"({"a":"b"})");
}

TEST_F(GatewayHeaders, ExpectContinueIsHonoured) {
  RawConnection raw(gw_->port());
  const std::string body = R"({"expect":"continue"})";
  ASSERT_TRUE(
      raw.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               "Expect: 100-continue\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n"));
  const std::string interim = raw.read_response(10s);
  ASSERT_EQ(parse_raw_response(interim).status, 100) << interim;
  ASSERT_TRUE(raw.send(body));
  Response r = parse_raw_response(raw.read_response(10s));
  auto e = echoed(r);
  EXPECT_EQ(str(e.at("body")), body);
  EXPECT_FALSE(upstream_has(e, "expect")) << "Expect is hop-by-hop";
}

TEST_F(GatewayHeaders, BackendKeyReplacesTheClientsAuthorization) {
  HttpClient c(gw_->port());
  auto keyed = echoed(c.get("/keyed/models", {{"Authorization", "Bearer client-key"}}));
  EXPECT_EQ(echoed_header(keyed, "authorization"), "Bearer sk-backend-key");
  EXPECT_EQ(str(keyed.at("target")), "/base/keyed/models") << "the backend URL's path is prepended";
  // Without a key configured the client's own Authorization passes through.
  auto plain = echoed(c.get("/plain", {{"Authorization", "Bearer client-key"}}));
  EXPECT_EQ(echoed_header(plain, "authorization"), "Bearer client-key");
}

}  // namespace
}  // namespace llmux::test
