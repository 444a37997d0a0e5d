// SPDX-License-Identifier: Apache-2.0
// Hedging before the first token (issue 37, gateway/hedge.hpp): a route with `hedge` sends a
// request whose backend has produced no token by `after` to a second backend as well; the first
// to produce a token is relayed, the other cancelled (the slow backend aborts its request). A
// backend that answers in time is not hedged, one that lost a race is avoided for a while;
// `after: Nx` waits N times the route's learned time-to-first-token p99, so nothing is hedged
// before the route has learned it.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const std::string kAdminToken = "hedge-admin-token-0123";

class GatewayHedge : public ::testing::Test {
 protected:
  void SetUp() override {
    // The same outputs for the same prompt on both (greedy), ~10 ms a token.
    const std::vector<std::string> flags{"--time-scale", "2", "--output-len",
                                         "fixed:" + std::to_string(output_tokens())};
    slow_ = std::make_unique<SimServer>(flags);
    fast_ = std::make_unique<SimServer>(flags);
  }
  virtual int output_tokens() const { return 12; }
  /// The gateway: one route over `slow` then `fast` with `hedge`; `policy` first: the slow one
  /// is asked first while it is healthy.
  void start_gateway(const std::string& hedge, const std::string& policy = "first") {
    gw_ = GatewayServer::with_config(
        "listen: \"127.0.0.1:0\"\nthreads: 2\nadmin: {token: \"" + kAdminToken +
        "\"}\nbackends:\n" + backend_line("slow", slow_->port()) +
        backend_line("fast", fast_->port()) +
        "routes:\n  - {name: all, backends: [slow, fast], policy: " + policy + ", hedge: " + hedge +
        "}\n");
  }
  /// Makes the slow backend's engine `factor` times slower.
  void slow_down(int factor) {
    HttpClient admin(slow_->port());
    ASSERT_EQ(
        admin.post("/admin/faults", "{\"slow_factor\":" + std::to_string(factor) + "}").status,
        200);
  }
  void TearDown() override {
    if (gw_) {
      dump_on_failure(*gw_);
      gw_->expect_clean_exit();
    }
  }
  /// Requests running on a simulator (its vLLM gauge).
  static double running(const SimServer& sim) {
    HttpClient scrape(sim.port());
    return metric_value(scrape.get("/metrics").body, "vllm:num_requests_running").value_or(-1);
  }
  std::unique_ptr<SimServer> slow_, fast_;
  std::unique_ptr<GatewayServer> gw_;
};

std::string chat(const std::string& question, bool stream, int max_tokens = 12) {
  json::object body{
      {"model", "Qwen3.6-35B-A3B"},
      {"messages", json::array{json::object{{"role", "user"}, {"content", question}}}},
      {"temperature", 0},
      {"max_tokens", max_tokens}};
  if (stream) body["stream"] = true;
  return json::serialize(body);
}

/// A stream's text (chat delta.content).
std::string stream_text(const std::vector<SseEvent>& events) {
  std::string text;
  for (const auto& event : events) {
    if (event.data == "[DONE]") continue;
    const json::value chunk = parse_json(event.data);
    for (const auto& choice : chunk.at("choices").as_array())
      if (const auto* content = choice.at("delta").as_object().if_contains("content");
          content && content->is_string())
        text += content->as_string();
  }
  return text;
}

TEST_F(GatewayHedge, HedgingTakesTheFasterBackendAndCancelsTheSlowOne) {
  start_gateway("{after: 300ms}");
  slow_down(200);
  const std::string body = chat("tell me about the sea", true);
  auto stream = StreamingResponse::open(gw_->port(), "POST", "/v1/chat/completions", body,
                                        {{"X-Request-Id", "hedged"}});
  ASSERT_EQ(stream->status(), 200);
  EXPECT_EQ(stream->header("x-llmux-backend"), "fast");
  const SseResult result = read_sse(*stream, SIZE_MAX, 10s, 30s);
  EXPECT_EQ(result.end, ReadStatus::End);
  // The whole answer, as the fast backend gives it alone.
  auto direct = StreamingResponse::open(fast_->port(), "POST", "/v1/chat/completions", body);
  EXPECT_EQ(stream_text(result.events), stream_text(read_sse(*direct).events));
  const json::object record = gw_->wait_access_record("hedged", 5s);
  EXPECT_EQ(record.at("backend"), "fast") << json::serialize(record);
  EXPECT_EQ(record.at("hedge"), "hedge_won");
  // The slow backend's request was cancelled (its connection closed: it aborts it).
  EXPECT_TRUE(poll_until([this] { return running(*slow_) == 0; }, 10s)) << running(*slow_);
  HttpClient metrics(gw_->port());
  const std::string text = metrics.get("/metrics").body;
  EXPECT_NE(text.find(R"(llmux_hedges_total{route="all",winner="hedge"} 1)"), std::string::npos)
      << text;
  // A cancelled hedge is no failure of the slow backend.
  EXPECT_EQ(text.find(R"(llmux_backend_attempt_failures_total{backend="slow")"), std::string::npos)
      << text;
}

TEST_F(GatewayHedge, NonStreamingRequestIsHedgedToo) {
  start_gateway("{after: 300ms}");
  slow_down(200);
  HttpClient client(gw_->port());
  const Response response = client.post("/v1/chat/completions", chat("and the mountains?", false),
                                        {{"X-Request-Id", "hedged-whole"}});
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.header("x-llmux-backend"), "fast");
  EXPECT_EQ(gw_->wait_access_record("hedged-whole", 5s).at("hedge"), "hedge_won");
}

TEST_F(GatewayHedge, ABackendThatLostARaceIsAvoidedForAWhile) {
  start_gateway("{after: 300ms}");
  slow_down(200);
  HttpClient client(gw_->port());
  auto ask = [&](const std::string& id) {
    const Response response =
        client.post("/v1/chat/completions", chat("a question", false), {{"X-Request-Id", id}});
    EXPECT_EQ(response.status, 200) << response.body;
    const json::object record = gw_->wait_access_record(id, 5s);
    return std::pair{str(record.at("backend")),
                     record.contains("hedge") ? str(record.at("hedge")) : std::string()};
  };
  const auto won = std::pair(std::string("fast"), std::string("hedge_won"));
  EXPECT_EQ(ask("lost-once"), won);
  // Avoided for 1 s: the next request goes to the fast backend at once, no race.
  EXPECT_EQ(ask("avoided"), std::pair(std::string("fast"), std::string()));
  // Past that second (the duration tested), the slow backend is asked again, loses again.
  std::this_thread::sleep_for(1200ms);
  EXPECT_EQ(ask("lost-twice"), won);
  // Back at full speed: once its (2 s) avoidance ended, it answers in time and is asked as before.
  slow_down(1);
  std::this_thread::sleep_for(2200ms);
  EXPECT_EQ(ask("recovered"), std::pair(std::string("slow"), std::string()));
}

TEST_F(GatewayHedge, ABackendThatAnswersInTimeIsNotHedged) {
  start_gateway("{after: 20s}");
  HttpClient client(gw_->port());
  for (int i = 0; i < 3; ++i) {
    const std::string id = "in-time-" + std::to_string(i);
    const Response response =
        client.post("/v1/chat/completions", chat("a question", false), {{"X-Request-Id", id}});
    ASSERT_EQ(response.status, 200) << response.body;
    EXPECT_EQ(response.header("x-llmux-backend"), "slow");
    EXPECT_FALSE(gw_->wait_access_record(id, 5s).contains("hedge"));
  }
  EXPECT_EQ(running(*fast_), 0);
  HttpClient metrics(gw_->port());
  EXPECT_EQ(metrics.get("/metrics").body.find("llmux_hedges_total{"), std::string::npos);
}

TEST_F(GatewayHedge, AMultipleOfTheLearnedP99WaitsUntilTheRouteHasLearnedIt) {
  start_gateway("{after: 3x}");
  // A stream through the gateway, read to its end: the backend that served it and its hedge.
  auto streamed = [this](const std::string& id) {
    auto stream = StreamingResponse::open(gw_->port(), "POST", "/v1/chat/completions",
                                          chat("a question", true), {{"X-Request-Id", id}});
    EXPECT_EQ(stream->status(), 200);
    EXPECT_EQ(read_sse(*stream, SIZE_MAX, 10s, 30s).end, ReadStatus::End);
    const json::object record = gw_->wait_access_record(id, 5s);
    return std::pair{str(record.at("backend")),
                     record.contains("hedge") ? str(record.at("hedge")) : std::string()};
  };
  // Slowed from the start: nothing learned yet, so the first stream is not hedged and waits
  // for the slow backend.
  slow_down(4);
  EXPECT_EQ(streamed("unlearned"), std::pair(std::string("slow"), std::string()));
  // The route learns its times to first token at full speed ...
  slow_down(1);
  for (int i = 0; i < 25; ++i) streamed("learning-" + std::to_string(i));
  // ... and a stream on the slowed backend is hedged past three times its p99.
  slow_down(200);
  EXPECT_EQ(streamed("learned"), std::pair(std::string("fast"), std::string("hedge_won")));
}

// Streams long enough to be timed while the test runs (~10 ms a token: 40 s).
class GatewayHedgePace : public GatewayHedge {
 protected:
  int output_tokens() const override { return 4000; }
  /// The gap between a backend's tokens the gateway measured lately (GET /admin/backends), or
  /// none.
  std::optional<double> token_gap_ms(const std::string& name) const {
    HttpClient admin(gw_->port());
    const Response response =
        admin.get("/admin/backends", {{"Authorization", "Bearer " + kAdminToken}});
    if (response.status != 200) return std::nullopt;
    const json::value listing = parse_json(response.body);
    for (const auto& entry : listing.at("backends").as_array()) {
      const json::object& backend = entry.as_object();
      if (str(backend.at("name")) != name) continue;
      if (const auto* gap = backend.if_contains("token_gap_ms")) return gap->to_number<double>();
    }
    return std::nullopt;
  }
  /// Two long streams through the gateway, left open (none where one did not begin).
  std::vector<std::unique_ptr<StreamingResponse>> open_long_streams() const {
    std::vector<std::unique_ptr<StreamingResponse>> streams;
    for (int i = 0; i < 2; ++i) {
      streams.push_back(
          StreamingResponse::open(gw_->port(), "POST", "/v1/chat/completions",
                                  chat("a long story " + std::to_string(i), true, 4000)));
      EXPECT_EQ(streams.back()->status(), 200);
      if (streams.back()->status() != 200) return {};
    }
    return streams;
  }
};

TEST_F(GatewayHedgePace, ABackendWhoseStreamsSlowDownIsAvoidedUntilTheySpeedUp) {
  // The hedge itself never fires here (20 s): what is tested is where requests are sent.
  start_gateway("{after: 20s}", "round_robin");
  // One long stream on each backend (round robin), left open: the gateway times both.
  const auto streams = open_long_streams();
  ASSERT_EQ(streams.size(), 2u);
  ASSERT_NE(streams[0]->header("x-llmux-backend"), streams[1]->header("x-llmux-backend"));
  ASSERT_TRUE(poll_until([&] { return token_gap_ms("slow") && token_gap_ms("fast"); }, 10s));
  // Ten times slower: once the slow backend's tokens come more than 4x further apart than the
  // fast one's, every new request goes to the fast one, none raced.
  slow_down(10);
  ASSERT_TRUE(poll_until(
      [&] {
        const auto slow = token_gap_ms("slow"), fast = token_gap_ms("fast");
        return slow && fast && *slow > 4 * *fast;
      },
      10s));
  HttpClient client(gw_->port());
  auto ask = [&](const std::string& id) {
    const Response response =
        client.post("/v1/chat/completions", chat("a question", false), {{"X-Request-Id", id}});
    EXPECT_EQ(response.status, 200);
    const json::object record = gw_->wait_access_record(id, 60s);
    EXPECT_FALSE(record.contains("hedge")) << json::serialize(record);
    return str(record.at("backend"));
  };
  // (max_tokens 12 on the fast backend: ~0.1 s each.)
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ask("while-slow-" + std::to_string(i)), "fast") << i;
  // At full speed again, its stream speeds up and it is asked again: round robin's turn comes
  // within two requests.
  slow_down(1);
  ASSERT_TRUE(poll_until(
      [&] {
        const auto slow = token_gap_ms("slow"), fast = token_gap_ms("fast");
        return slow && fast && *slow < 2 * *fast;
      },
      10s));
  std::set<std::string> asked;
  for (int i = 0; i < 2; ++i) asked.insert(ask("recovered-" + std::to_string(i)));
  EXPECT_TRUE(asked.count("slow")) << "the recovered backend was not asked";
}

TEST_F(GatewayHedgePace, AFirstAttemptWhoseBackendTurnsSlowIsRacedBeforeItsWaitEnds) {
  start_gateway("{after: 20s}", "round_robin");
  const auto streams = open_long_streams();
  ASSERT_EQ(streams.size(), 2u);
  // Round robin's next turn is the first stream's backend: make that one the slow one.
  if (streams[0]->header("x-llmux-backend") != "slow") {
    HttpClient client(gw_->port());
    ASSERT_EQ(client.post("/v1/chat/completions", chat("a turn", false)).status, 200);
  }
  ASSERT_TRUE(poll_until([&] { return token_gap_ms("slow") && token_gap_ms("fast"); }, 10s));
  // Fifty times slower (0.5 s a token) just as a request is sent to it: its stream's next token
  // shows it, and the request is raced then, not after its 20 s.
  slow_down(50);
  const auto sent = std::chrono::steady_clock::now();
  HttpClient client(gw_->port());
  const Response response = client.post("/v1/chat/completions", chat("a question", false),
                                        {{"X-Request-Id", "raced-for-pace"}});
  const auto took = std::chrono::steady_clock::now() - sent;
  ASSERT_EQ(response.status, 200);
  EXPECT_EQ(response.header("x-llmux-backend"), "fast");
  EXPECT_EQ(str(gw_->wait_access_record("raced-for-pace", 5s).at("hedge")), "hedge_won");
  EXPECT_LT(took, 10s);
}

}  // namespace
}  // namespace llmux::test
