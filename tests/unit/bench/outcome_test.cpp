// SPDX-License-Identifier: Apache-2.0
// How the bench commands end and what their cells say (bench/commands_internal.hpp): the exit
// status with failures and 429 rejections, error cells instead of NaN, numeric CSV cells, and
// compare's gateway analysis that keeps scale-out apart from overhead. No network.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "bench/commands_internal.hpp"

namespace llmux::bench::detail {
namespace {

RequestTiming ok_request(std::int64_t start_ns, double e2e_ms, std::string backend = "") {
  RequestTiming t;
  t.start_ns = start_ns;
  t.first_byte_ns = start_ns + static_cast<std::int64_t>(e2e_ms * 1e6);
  t.end_ns = *t.first_byte_ns;
  t.output_tokens = 128;
  t.backend = std::move(backend);
  return t;
}

RequestTiming failed_request(ErrorKind kind, int status = 0) {
  RequestTiming t;
  t.start_ns = 1;
  t.end_ns = 2;
  t.error = kind;
  t.http_status = status;
  return t;
}

/// A Measured of the given requests, as seed.cpp builds one: tok/s = tok_s (NaN when none
/// succeeded), the aggregate of the requests.
Measured measured(const std::vector<RequestTiming>& ts, double tok_s) {
  Measured m;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    Record r;
    r.t = ts[i];
    r.index = i;
    m.records.push_back(r);
  }
  m.agg = aggregate(ts);
  m.requests = m.agg.requests;
  m.failed = m.agg.failed;
  m.rejected = m.agg.rejected;
  m.mean = m.agg.ok ? tok_s : NAN;
  return m;
}

TEST(BenchOutcome, FailuresFailTheRunRejectionsOnlyWithTheFlag) {
  OutputOptions out;
  const Outcome clean = outcome(12, 0, 0, "", out);
  EXPECT_EQ(clean.status, 0);
  EXPECT_NE(clean.line.find("all 12 requests succeeded"), std::string::npos) << clean.line;

  const Outcome failed = outcome(12, 3, 0, "2 connect, 1 http_status", out);
  EXPECT_EQ(failed.status, 1);
  EXPECT_NE(failed.line.find("FAILED"), std::string::npos) << failed.line;
  EXPECT_NE(failed.line.find("3 of 12 requests failed (2 connect, 1 http_status)"),
            std::string::npos)
      << failed.line;

  // 429s: counted and reported as rejections, not failures...
  const Outcome rejected = outcome(12, 4, 4, "", out);
  EXPECT_EQ(rejected.status, 0) << rejected.line;
  EXPECT_NE(rejected.line.find("4 of 12 rejected (429"), std::string::npos) << rejected.line;
  EXPECT_EQ(rejected.line.find("failed"), std::string::npos) << rejected.line;
  // ...unless asked for.
  out.fail_on_reject = true;
  EXPECT_EQ(outcome(12, 4, 4, "", out).status, 1);
  // A failure among rejections fails the run either way.
  out.fail_on_reject = false;
  const Outcome both = outcome(12, 5, 4, "1 timeout", out);
  EXPECT_EQ(both.status, 1);
  EXPECT_NE(both.line.find("1 of 12 requests failed (1 timeout)"), std::string::npos) << both.line;
}

TEST(BenchOutcome, AggregateCountsA429AsARejection) {
  const std::vector<RequestTiming> ts{
      ok_request(0, 100), failed_request(ErrorKind::http_status, 429),
      failed_request(ErrorKind::http_status, 503), failed_request(ErrorKind::connect)};
  const Aggregate a = aggregate(ts);
  EXPECT_EQ(a.failed, 3u);
  EXPECT_EQ(a.rejected, 1u);
  EXPECT_TRUE(is_rejected(ts[1]));
  EXPECT_FALSE(is_rejected(ts[2]));
  EXPECT_FALSE(is_rejected(ts[3]));
}

TEST(BenchCells, AFigureWithoutSuccessesIsAnErrorNeverNan) {
  EXPECT_EQ(figure_cell(NAN, 3, 3), "error (all 3 failed)");
  EXPECT_EQ(figure_cell(297.25, 1, 8), "297.2");
  EXPECT_EQ(figure_cell(NAN, 0, 0), "-");
  for (double v : {NAN, INFINITY, -INFINITY})
    EXPECT_EQ(figure_cell(v, 2, 2).find("nan"), std::string::npos);
  EXPECT_EQ(csv_num(NAN), "");
  EXPECT_EQ(csv_num(INFINITY), "");
  EXPECT_EQ(csv_num(3.5, 1), "3.5");
}

TEST(BenchCompareGateway, ABurstOverTwoMachinesIsScaleOutMeasuredAgainstEachMachinesShare) {
  // Direct: serial requests of 2,500 ms; N=4 bursts of 3,000 ms; N=8 of 3,600 ms.
  PathMeasured direct;
  direct.serial = measured({ok_request(0, 2500), ok_request(0, 2500)}, 51);
  direct.levels[4] = measured(std::vector<RequestTiming>(4, ok_request(0, 3000)), 170);
  direct.levels[8] = measured(std::vector<RequestTiming>(8, ok_request(0, 3600)), 284);
  // The gateway: serially 2 ms more per request; N=8 as 4 + 4 over two machines, 3,004 ms each.
  PathMeasured gw;
  gw.serial = measured({ok_request(0, 2502, "server1"), ok_request(0, 2502, "server2")}, 50.9);
  std::vector<RequestTiming> split;
  for (int i = 0; i < 8; ++i) split.push_back(ok_request(0, 3004, i % 2 ? "server2" : "server1"));
  gw.levels[8] = measured(split, 339);
  // And N=4 all on one machine.
  gw.levels[4] = measured(std::vector<RequestTiming>(4, ok_request(0, 3010, "server1")), 169);

  const GatewayRow serial = gateway_row("gateway chat", "direct chat", gw, direct, 0);
  EXPECT_FALSE(serial.scale_out);  // one request at a time: overhead, whatever the machine
  EXPECT_NEAR(serial.added_p50_ms, 2.0, 1e-6);
  EXPECT_NEAR(serial.added_p99_ms, 2.0, 1e-6);
  EXPECT_NEAR(serial.tok_s_ratio, 50.9 / 51, 1e-9);
  EXPECT_NE(serial.reading.find("overhead"), std::string::npos) << serial.reading;

  const GatewayRow one = gateway_row("gateway chat", "direct chat", gw, direct, 4);
  EXPECT_FALSE(one.scale_out);
  EXPECT_EQ(one.backends.size(), 1u);
  EXPECT_NEAR(one.added_p50_ms, 10.0, 1e-6);
  EXPECT_NE(one.reading.find("overhead"), std::string::npos) << one.reading;

  const GatewayRow n8 = gateway_row("gateway chat", "direct chat", gw, direct, 8);
  EXPECT_TRUE(n8.scale_out);
  EXPECT_EQ(n8.backends.at("server1"), 4u);
  EXPECT_EQ(n8.backends.at("server2"), 4u);
  EXPECT_NEAR(n8.tok_s_ratio, 339.0 / 284, 1e-9);  // above one machine: it spans two
  // Its latency is compared with direct N=4 (each machine's share), not with direct N=8, where
  // it would read as a gateway 596 ms faster than direct.
  ASSERT_TRUE(n8.latency_level.has_value());
  EXPECT_EQ(*n8.latency_level, 4u);
  EXPECT_NEAR(n8.added_p50_ms, 4.0, 1e-6);
  EXPECT_NEAR(n8.per_machine, 339.0 / (2 * 170), 1e-9);
  EXPECT_NE(n8.reading.find("scale-out, not overhead"), std::string::npos) << n8.reading;
  EXPECT_NE(n8.reading.find("server1 4, server2 4"), std::string::npos) << n8.reading;
}

TEST(BenchCompareGateway, NoShareToCompareWithLeavesTheLatencyOut) {
  PathMeasured direct;
  direct.serial = measured({ok_request(0, 2500)}, 51);
  direct.levels[16] = measured(std::vector<RequestTiming>(16, ok_request(0, 5000)), 300);
  PathMeasured gw;
  gw.serial = measured({ok_request(0, 2501)}, 51);
  std::vector<RequestTiming> split;
  for (int i = 0; i < 16; ++i) split.push_back(ok_request(0, 3600, i % 2 ? "b" : "a"));
  gw.levels[16] = measured(split, 570);
  const GatewayRow r = gateway_row("gateway", "direct", gw, direct, 16);
  EXPECT_TRUE(r.scale_out);
  EXPECT_FALSE(r.latency_level.has_value());
  EXPECT_TRUE(std::isnan(r.added_p50_ms));
  EXPECT_NE(r.reading.find("no direct level of N=8"), std::string::npos) << r.reading;
  EXPECT_EQ(backends_cell({}), "unknown");
}

TEST(BenchCompareGateway, AllGatewayRequestsFailedGivesNoRatio) {
  PathMeasured direct;
  direct.serial = measured({ok_request(0, 2500)}, 51);
  PathMeasured gw;
  gw.serial = measured({failed_request(ErrorKind::connect)}, 0);
  const GatewayRow r = gateway_row("gateway", "direct", gw, direct, 0);
  EXPECT_TRUE(std::isnan(r.tok_s_ratio));
  EXPECT_TRUE(std::isnan(r.added_p50_ms));
}

}  // namespace
}  // namespace llmux::bench::detail
