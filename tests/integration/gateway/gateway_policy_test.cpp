// SPDX-License-Identifier: Apache-2.0
// Load-aware routing end to end (issue 10): `adaptive` learns, from the streams it relays, that
// one of two simulated machines is three times slower (its step costs tripled), shows the learned
// curves at GET /admin/backends, and sends the fast machine most of the work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double predicted_single(const boost::json::object& backend) {
  const auto* p = backend.if_contains("predicted_total_tokens_per_s");
  return p ? p->at("1").to_number<double>() : 0.0;
}

TEST(GatewayPolicy, AdaptiveLearnsAMixedFleetAndFavoursTheFastMachine) {
  SimServer fast({"--time-scale", "1"});
  // The seed's Spark model with every step cost tripled.
  SimServer slow({"--time-scale", "1", "--t0", "0.0594", "--m", "0.00264", "--c", "0.00855"});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("fast", fast.port()) +
      backend_line("slow", slow.port()) +
      "routes:\n  - {name: all, backends: [fast, slow], policy: adaptive}\n"
      "admin: {token: \"policy-test-admin-token\"}\n");
  const std::string body =
      R"({"messages":[{"role":"user","content":"go"}],"max_tokens":60,"ignore_eos":true,"stream":true})";
  std::mutex mu;
  std::vector<std::pair<double, std::string>> served;  // (start, backend)
  const auto t0 = Clock::now();
  const auto end = t0 + 8s;
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&] {
      while (Clock::now() < end) {
        const double at = std::chrono::duration<double>(Clock::now() - t0).count();
        auto s = StreamingResponse::open(gw->port(), "POST", "/v1/chat/completions", body);
        const std::string backend = s->header("x-llmux-backend");
        const SseResult r = read_sse(*s, SIZE_MAX, 5s, 20s);
        std::lock_guard lock(mu);
        if (r.end == ReadStatus::End) served.emplace_back(at, backend);
      }
    });
  }
  for (auto& t : clients) t.join();

  Response admin =
      HttpClient(gw->port())
          .get("/admin/backends", {{"Authorization", "Bearer policy-test-admin-token"}});
  ASSERT_EQ(admin.status, 200) << admin.body;
  const auto backends = parse_json(admin.body).at("backends").as_array();
  ASSERT_EQ(backends.size(), 2u);
  const double f = predicted_single(backends[0].as_object());
  const double s = predicted_single(backends[1].as_object());
  EXPECT_GT(f, 2.0 * s) << admin.body;
  EXPECT_FALSE(backends[1].at("capacity_curve").as_array().empty()) << "the slow one was tried";
  // The second half, once learned: most requests to the fast machine (round robin: half).
  int late = 0, late_fast = 0;
  for (const auto& [at, backend] : served) {
    if (at < 4.0) continue;
    ++late;
    late_fast += backend == "fast";
  }
  ASSERT_GT(late, 10);
  EXPECT_GT(static_cast<double>(late_fast) / late, 0.65) << late_fast << " of " << late;
  gw->expect_clean_exit();
}

TEST(GatewayPolicy, AdminBackendsShowsTheCapacityCurve) {
  SimServer sim({"--time-scale", "100"});
  auto gw = GatewayServer::with_config(one_route_config(
      1, backend_line("sim", sim.port()), "sim", "admin: {token: \"policy-test-admin-token\"}\n"));
  Response r = HttpClient(gw->port())
                   .get("/admin/backends", {{"Authorization", "Bearer policy-test-admin-token"}});
  EXPECT_EQ(r.status, 200);
  const auto b = parse_json(r.body).at("backends").at(0).as_object();
  EXPECT_EQ(b.at("name"), "sim");
  EXPECT_EQ(b.at("state"), "up");
  EXPECT_TRUE(b.at("capacity_curve").as_array().empty());
  gw->expect_clean_exit();
}

TEST(GatewayPolicy, TheFleetExampleUsesBothMachinesForEveryRoute) {
  SimServer s1({"--time-scale", "20"});
  SimServer s2({"--time-scale", "20"});
  const std::string yaml = example_config("fleet.yaml", s1.port(), s2.port());
  TempDir dir;
  const RunResult check = run_gateway({"--check", "--config", dir.write("fleet.yaml", yaml)});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  auto gw = GatewayServer::with_config(yaml);
  // Concurrent chat streams: a load-aware policy spreads them over both machines.
  const std::string body =
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":40,"ignore_eos":true,"stream":true})";
  std::vector<std::unique_ptr<StreamingResponse>> streams;
  for (int i = 0; i < 8; ++i)
    streams.push_back(StreamingResponse::open(gw->port(), "POST", "/v1/chat/completions", body));
  std::map<std::string, int> by_backend;
  for (auto& st : streams) {
    ++by_backend[st->header("x-llmux-backend")];
    EXPECT_EQ(read_sse(*st).end, ReadStatus::End);
  }
  EXPECT_EQ(by_backend["server1"], 4);
  EXPECT_EQ(by_backend["server2"], 4);
  // The Responses API: new conversations on either machine, each continued where it lives.
  std::map<std::string, int> conversations;
  for (int i = 0; i < 6; ++i) {
    HttpClient http(gw->port());
    Response r =
        http.post("/v1/responses", R"({"input":"conversation )" + std::to_string(i) +
                                       R"( starts with its own words","max_output_tokens":2})");
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string home = r.header("x-llmux-backend");
    ++conversations[home];
    const std::string id(parse_json(r.body).at("id").as_string());
    for (int k = 0; k < 2; ++k) {
      Response next = http.post("/v1/responses", R"({"input":"more","max_output_tokens":2,)"
                                                 R"("previous_response_id":")" +
                                                     id + R"("})");
      EXPECT_EQ(next.status, 200) << next.body;
      EXPECT_EQ(next.header("x-llmux-backend"), home);
    }
  }
  EXPECT_EQ(conversations.size(), 2u) << "new conversations start on both machines";
  gw->expect_clean_exit();
}

TEST(GatewayPolicy, BenchThroughTheGatewayReportsWhereEachRequestWent) {
  SimServer s1({"--time-scale", "20"});
  SimServer s2({"--time-scale", "20"});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("s1", s1.port()) +
      backend_line("s2", s2.port()) +
      "routes:\n  - {name: all, backends: [s1, s2], policy: least_inflight}\n");
  TempDir out;
  // The varied workload: prompt lengths ±90%, output caps 32-512, natural stops.
  const RunResult r = run_to_completion({llmux_binary(),
                                         "bench",
                                         "run",
                                         "--url",
                                         "http://127.0.0.1:" + std::to_string(gw->port()),
                                         "--endpoint",
                                         "chat",
                                         "--concurrency",
                                         "8",
                                         "--num-requests",
                                         "32",
                                         "--input-len",
                                         "200",
                                         "--input-spread",
                                         "0.9",
                                         "--output-len",
                                         "272",
                                         "--output-spread",
                                         "0.88",
                                         "--out",
                                         out.path(),
                                         "--no-progress"},
                                        std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Where the gateway sent them"), std::string::npos) << r.out;
  const std::string csv = read_text_file(out.path() + "/requests.csv");
  ASSERT_NE(csv.find(",backend"), std::string::npos) << csv.substr(0, 300);
  int on_s1 = 0, on_s2 = 0;
  std::size_t at = 0;
  while ((at = csv.find('\n', at)) != std::string::npos) {
    ++at;
    const std::size_t end = csv.find('\n', at);
    std::string line = csv.substr(at, end == std::string::npos ? end : end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CSV records end in CRLF
    if (line.ends_with(",s1")) ++on_s1;
    if (line.ends_with(",s2")) ++on_s2;
  }
  EXPECT_EQ(on_s1 + on_s2, 32);
  EXPECT_GT(on_s1, 4);
  EXPECT_GT(on_s2, 4);
  const auto doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& first = doc.at("levels").at(0).at("requests").at(0).as_object();
  EXPECT_TRUE(first.at("backend") == "s1" || first.at("backend") == "s2") << first;
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
