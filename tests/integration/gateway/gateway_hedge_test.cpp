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

class GatewayHedge : public ::testing::Test {
 protected:
  void SetUp() override {
    // The same outputs for the same prompt on both (greedy), ~10 ms a token.
    const std::vector<std::string> flags{"--time-scale", "2", "--output-len", "fixed:12"};
    slow_ = std::make_unique<SimServer>(flags);
    fast_ = std::make_unique<SimServer>(flags);
  }
  /// The gateway: one route over `slow` then `fast` (policy first: the slow one is asked first
  /// while it is healthy) with `hedge`.
  void start_gateway(const std::string& hedge) {
    gw_ = GatewayServer::with_config("listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" +
                                     backend_line("slow", slow_->port()) +
                                     backend_line("fast", fast_->port()) +
                                     "routes:\n  - {name: all, backends: [slow, fast], policy: "
                                     "first, hedge: " +
                                     hedge + "}\n");
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

std::string chat(const std::string& question, bool stream) {
  json::object body{
      {"model", "Qwen3.6-35B-A3B"},
      {"messages", json::array{json::object{{"role", "user"}, {"content", question}}}},
      {"temperature", 0},
      {"max_tokens", 12}};
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

}  // namespace
}  // namespace llmux::test
