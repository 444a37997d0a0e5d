// SPDX-License-Identifier: Apache-2.0
// Cache-aware routing end to end (issue 11): consistent_hash keeps a session on its backend and,
// when a backend leaves, moves only that backend's sessions, with no backend above its load
// bound; prefix_aware sends prompts that share a system prompt where it was sent before, unless
// the fleet is out of balance; least_load reads the backends' own /metrics (fresh, stale,
// unreadable, all stale) off the request path.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kChat =
    R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":false})";

std::string backend_of_session(int port, const std::string& key) {
  Response r = HttpClient(port).post("/v1/chat/completions", kChat, {{"X-Session-ID", key}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.header("x-llmux-backend");
}

/// Waits until GET /health shows `backend` in `state` (bounded).
bool wait_state(int port, const std::string& backend, const std::string& state) {
  for (const auto until = Clock::now() + 5s; Clock::now() < until;
       std::this_thread::sleep_for(50ms)) {  // polling interval, bounded by `until`
    Response r = HttpClient(port).get("/health");
    const boost::json::value health = parse_json(r.body);
    for (const auto& b : health.at("backends").as_array())
      if (b.at("name").as_string() == backend && b.at("state").as_string() == state) return true;
  }
  return false;
}

/// The backends whose own load report is fresh, as GET /metrics shows them: the gauge
/// llmux_backend_reported_running_requests is there only while a backend's last report is
/// younger than backend_metrics.stale_after, the same reading least_load uses.
std::set<std::string> fresh_reports(int port) {
  static const std::string kGauge = "llmux_backend_reported_running_requests{backend=\"";
  std::set<std::string> fresh;
  const std::string text = HttpClient(port).get("/metrics").body;
  for (std::size_t at = text.find(kGauge); at != std::string::npos;
       at = text.find(kGauge, at + 1)) {
    const std::size_t name_start = at + kGauge.size();
    fresh.insert(text.substr(name_start, text.find('"', name_start) - name_start));
  }
  return fresh;
}

/// Waits until exactly `expected` have fresh reports (bounded).
bool wait_fresh_reports(int port, const std::set<std::string>& expected) {
  return poll_until([&] { return fresh_reports(port) == expected; }, 10s, 20ms);
}

TEST(GatewayCacheRouting, ConsistentHashMovesOnlyTheKeysOfABackendThatLeaves) {
  SimServer s0({"--time-scale", "50"}), s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("s0", s0.port()) +
      backend_line("s1", s1.port()) + backend_line("s2", s2.port()) +
      "routes:\n  - {name: all, backends: [s0, s1, s2], policy: consistent_hash}\n"
      "health_checks: {interval: 200ms, timeout: 150ms, healthy_threshold: 1, "
      "unhealthy_threshold: 1, jitter: 0}\noutlier_detection: {enabled: false}\n");
  std::map<std::string, std::string> home;
  std::map<std::string, int> per_backend;
  for (int i = 0; i < 30; ++i) {
    const std::string key = "session-" + std::to_string(i);
    home[key] = backend_of_session(gw->port(), key);
    ++per_backend[home[key]];
    EXPECT_EQ(backend_of_session(gw->port(), key), home[key]) << key;
  }
  ASSERT_EQ(per_backend.size(), 3u) << "30 sessions over 3 backends";
  // s1 fails its health checks: its sessions move, every other stays.
  ASSERT_EQ(HttpClient(s1.port()).post("/admin/faults", R"({"not_ready_for": 60})").status, 200);
  ASSERT_TRUE(wait_state(gw->port(), "s1", "unhealthy"));
  int moved = 0;
  for (const auto& [key, was] : home) {
    const std::string now = backend_of_session(gw->port(), key);
    EXPECT_NE(now, "s1");
    if (was != "s1")
      EXPECT_EQ(now, was) << key << " moved though its backend stayed";
    else
      ++moved;
  }
  EXPECT_EQ(moved, per_backend["s1"]);
  // Back: every session where it was.
  ASSERT_EQ(HttpClient(s1.port()).post("/admin/faults", "{}").status, 200);
  ASSERT_TRUE(wait_state(gw->port(), "s1", "up"));
  for (const auto& [key, was] : home) EXPECT_EQ(backend_of_session(gw->port(), key), was) << key;
  gw->expect_clean_exit();
}

TEST(GatewayCacheRouting, ConsistentHashBoundsTheLoadOfAHotSession) {
  SimServer s0({"--time-scale", "1"}), s1({"--time-scale", "1"}), s2({"--time-scale", "1"});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("s0", s0.port()) +
      backend_line("s1", s1.port()) + backend_line("s2", s2.port()) +
      "routes:\n  - {name: all, backends: [s0, s1, s2], policy: {name: consistent_hash, "
      "load_factor: 1.25}}\n");
  const std::string body =
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":200,"ignore_eos":true,"stream":true})";
  std::vector<std::unique_ptr<StreamingResponse>> held;
  std::map<std::string, int> count;
  for (int i = 0; i < 12; ++i) {
    held.push_back(StreamingResponse::open(gw->port(), "POST", "/v1/chat/completions", body,
                                           {{"X-Session-ID", "one-hot-session"}}));
    ASSERT_EQ(held.back()->status(), 200);
    ++count[held.back()->header("x-llmux-backend")];
  }
  for (const auto& [b, n] : count) EXPECT_LE(n, 5) << b << ": ceil(1.25 × 12 / 3)";
  held.clear();
  gw->expect_clean_exit();
}

std::string system_prompt(int i) {
  std::string s = "You are assistant number " + std::to_string(i) + ".";
  for (int k = 0; s.size() < 2000; ++k) s += " Rule " + std::to_string(i * 1000 + k) + ".";
  return s;
}

std::string chat_with_system(int sys, const std::string& question, bool stream, int tokens) {
  return boost::json::serialize(boost::json::object{
      {"messages",
       boost::json::array{boost::json::object{{"role", "system"}, {"content", system_prompt(sys)}},
                          boost::json::object{{"role", "user"}, {"content", question}}}},
      {"max_tokens", tokens},
      {"ignore_eos", true},
      {"stream", stream}});
}

TEST(GatewayCacheRouting, PrefixAwareSendsASharedSystemPromptWhereItWent) {
  SimServer s0({"--time-scale", "50"}), s1({"--time-scale", "50"});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("s0", s0.port()) +
      backend_line("s1", s1.port()) +
      "routes:\n  - {name: all, backends: [s0, s1], policy: prefix_aware}\n");
  HttpClient http(gw->port());
  std::map<int, std::string> home;
  std::map<std::string, int> prompts_per_backend;
  for (int round = 0; round < 3; ++round) {
    for (int sys = 0; sys < 6; ++sys) {
      Response r = http.post("/v1/chat/completions",
                             chat_with_system(sys, "question " + std::to_string(round), false, 4));
      ASSERT_EQ(r.status, 200) << r.body;
      const std::string b = r.header("x-llmux-backend");
      if (round == 0) {
        home[sys] = b;
        ++prompts_per_backend[b];
      }
      EXPECT_EQ(b, home[sys]) << "system prompt " << sys << " round " << round;
    }
  }
  EXPECT_EQ(prompts_per_backend.size(), 2u) << "new prompts start on either backend";
  gw->expect_clean_exit();
}

TEST(GatewayCacheRouting, PrefixAwareLoadGuardWinsOverTheCache) {
  SimServer s0({"--time-scale", "1"}), s1({"--time-scale", "1"});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("s0", s0.port()) +
      backend_line("s1", s1.port()) +
      "routes:\n  - {name: all, backends: [s0, s1], policy: {name: prefix_aware, balance_abs: 2,"
      " balance_rel: 1.5}}\n");
  std::vector<std::unique_ptr<StreamingResponse>> held;
  std::vector<std::string> where;
  for (int i = 0; i < 4; ++i) {
    held.push_back(
        StreamingResponse::open(gw->port(), "POST", "/v1/chat/completions",
                                chat_with_system(7, "question " + std::to_string(i), true, 300)));
    ASSERT_EQ(held.back()->status(), 200);
    where.push_back(held.back()->header("x-llmux-backend"));
  }
  // 1st: either; 2nd and 3rd: the cache (in flight 1 then 2 vs 0: within balance_abs 2);
  // 4th: 3 in flight > 2 and > 1.5 × 0 — the guard sends it to the other backend.
  EXPECT_EQ(where[1], where[0]);
  EXPECT_EQ(where[2], where[0]);
  EXPECT_NE(where[3], where[0]);
  held.clear();
  gw->expect_clean_exit();
}

TEST(GatewayCacheRouting, LeastLoadReadsBackendMetricsFreshStaleAndAllStale) {
  GatedBackend a({GatedBackend::Mode::Echo}), b({GatedBackend::Mode::Echo});
  a.set_metrics("vllm:num_requests_running{engine=\"0\"} 0\nvllm:num_requests_waiting 0\n");
  b.set_metrics("vllm:num_requests_running{engine=\"0\"} 5\nvllm:num_requests_waiting 0\n");
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("a", a.port()) +
      backend_line("b", b.port()) +
      "routes:\n  - {name: all, backends: [a, b], policy: least_load}\n"
      "backend_metrics: {enabled: true, interval: 100ms, timeout: 100ms, stale_after: 400ms}\n");
  HttpClient http(gw->port());
  auto served_by = [&](int n) {
    std::map<std::string, int> m;
    for (int i = 0; i < n; ++i) {
      Response r = http.post("/v1/chat/completions", kChat);
      EXPECT_EQ(r.status, 200);
      ++m[r.header("x-llmux-backend")];
    }
    return m;
  };
  ASSERT_TRUE(wait_fresh_reports(gw->port(), {"a", "b"})) << "the gateway never read both";
  EXPECT_EQ(served_by(10)["a"], 10) << "a reports 0 running, b 5";
  // a's metrics stop answering: once its last report is stale it counts as busier than b.
  a.set_metrics("");
  ASSERT_TRUE(wait_fresh_reports(gw->port(), {"b"})) << "a's report never went stale";
  EXPECT_EQ(served_by(10)["b"], 10) << "stale counts as busy";
  // Both unreadable: the gateway's own counts (least_inflight, ties rotate) decide.
  b.set_metrics("");
  ASSERT_TRUE(wait_fresh_reports(gw->port(), {})) << "b's report never went stale";
  auto both = served_by(10);
  EXPECT_GE(both["a"], 3);
  EXPECT_GE(both["b"], 3);
  // The log says a's metrics could not be read; requests never waited for a reading.
  EXPECT_NE(gw->stderr_text().find("backend a: its metrics (/metrics) cannot be read"),
            std::string::npos)
      << gw->stderr_text();
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
