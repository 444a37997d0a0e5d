// SPDX-License-Identifier: Apache-2.0
// Limits that protect the gateway and its backends (issue 9): client connections over
// limits.max_connections are answered 503 and closed (never left hanging), a connection sending
// faster than limits.connection_rate gets 429s, and retries of what never reached a backend
// stay within retries.max_attempts and the route's retry budget.
#include <gtest/gtest.h>

#include <memory>
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

constexpr const char* kSmall = R"({"prompt":"hi","max_tokens":2})";

TEST(GatewayLimits, ConnectionsOverTheLimitAre503AndClosed) {
  SimServer sim({"--time-scale", "100"});
  auto gw = GatewayServer::with_config(one_route_config(1, backend_line("sim", sim.port()), "sim",
                                                        "limits: {max_connections: 2}\n"));
  // Two connections are open (and idle): the gateway holds them.
  auto first = std::make_unique<HttpClient>(gw->port());
  HttpClient second(gw->port());
  ASSERT_EQ(first->post("/v1/completions", kSmall).status, 200);
  ASSERT_EQ(second.post("/v1/completions", kSmall).status, 200);
  // A third is answered at once and closed, even while it sends its request.
  RawConnection third(gw->port());
  third.send(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(std::string_view(kSmall).size()) + "\r\n\r\n" + kSmall);
  bool closed = false;
  const std::string got = third.read_until_close(5s, &closed);
  EXPECT_TRUE(closed) << "not left hanging";
  Response r = parse_raw_response(got);
  EXPECT_EQ(r.status, 503) << got;
  std::string why;
  EXPECT_TRUE(is_openai_error(r.body, 503, &why)) << why;
  EXPECT_NE(gw->stderr_text().find("max_connections"), std::string::npos) << gw->stderr_text();
  // A connection that closes frees its place.
  first.reset();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {  // the gateway notices the close within moments
    served = HttpClient(gw->port()).post("/v1/completions", kSmall).status == 200;
    if (!served) std::this_thread::sleep_for(20ms);  // polling interval
  }
  EXPECT_TRUE(served);
  EXPECT_EQ(second.post("/v1/completions", kSmall).status, 200);
  gw->expect_clean_exit();
}

TEST(GatewayLimits, AConnectionFasterThanItsRateGets429) {
  SimServer sim({"--time-scale", "100"});
  auto gw = GatewayServer::with_config(one_route_config(1, backend_line("sim", sim.port()), "sim",
                                                        "limits: {connection_rate: 2}\n"));
  HttpClient c(gw->port());
  int ok = 0, limited = 0;
  for (int i = 0; i < 6; ++i) {
    Response r = c.post("/v1/completions", kSmall);
    if (r.status == 200) ++ok;
    if (r.status == 429) {
      ++limited;
      std::string why;
      EXPECT_TRUE(is_openai_error(r.body, 429, &why)) << why;
    }
  }
  EXPECT_GE(limited, 2) << ok << " served";
  EXPECT_GE(ok, 2);
  EXPECT_EQ(c.connections_opened(), 1) << "a 429 keeps the connection";
  // Another connection has its own rate.
  EXPECT_EQ(HttpClient(gw->port()).post("/v1/completions", kSmall).status, 200);
  gw->expect_clean_exit();
}

TEST(GatewayRetries, MaxAttemptsTriesEachBackendOnce) {
  SimServer sim({"--time-scale", "100"});
  const std::string backends = backend_line("dead1", closed_port()) +
                               backend_line("dead2", closed_port()) +
                               backend_line("live", sim.port());
  auto three = GatewayServer::with_config(
      one_route_config(1, backends, "dead1, dead2, live", "retries: {max_attempts: 3}\n"));
  Response r =
      HttpClient(three->port()).post("/v1/completions", kSmall, {{"X-Request-Id", "three"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(i64(three->wait_access_record("three", 5s).at("attempts")), 3);

  auto two = GatewayServer::with_config(one_route_config(1, backends, "dead1, dead2, live"));
  r = HttpClient(two->port()).post("/v1/completions", kSmall, {{"X-Request-Id", "two"}});
  EXPECT_EQ(r.status, 503) << "the default is one retry: " << r.body;
  EXPECT_EQ(i64(two->wait_access_record("two", 5s).at("attempts")), 2);
  three->expect_clean_exit();
  two->expect_clean_exit();
}

TEST(GatewayRetries, TheRoutesRetryBudgetBoundsRetries) {
  SimServer sim({"--time-scale", "100"});
  // No fraction of traffic, one retry per second: a failing fleet is not hammered.
  auto gw = GatewayServer::with_config(one_route_config(
      1, backend_line("dead", closed_port()) + backend_line("live", sim.port()), "dead, live",
      "retries: {budget: 0, min_retries_per_second: 1, backoff: 0ms}\n"));
  HttpClient c(gw->port());
  int retried = 0, refused = 0;
  constexpr int kRequests = 6;
  for (int i = 0; i < kRequests; ++i) {
    const std::string rid = "budget-" + std::to_string(i);
    Response r = c.post("/v1/completions", kSmall, {{"X-Request-Id", rid}});
    auto rec = gw->wait_access_record(rid, 5s);
    ASSERT_FALSE(rec.empty());
    if (r.status == 200) {
      EXPECT_EQ(i64(rec.at("attempts")), 2);
      ++retried;
    } else {
      EXPECT_EQ(r.status, 503) << r.body;
      EXPECT_NE(r.body.find("retry budget"), std::string::npos) << r.body;
      ++refused;
    }
  }
  // One retry per one-second window; the requests take far less than a second, but may straddle
  // a window's end.
  EXPECT_GE(retried, 1);
  EXPECT_LE(retried, 2);
  EXPECT_EQ(retried + refused, kRequests);
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
