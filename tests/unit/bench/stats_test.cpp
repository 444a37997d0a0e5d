// SPDX-License-Identifier: Apache-2.0
#include "bench/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace llmux::bench {
namespace {

constexpr std::int64_t kMs = 1'000'000;

TEST(Percentile, LinearInterpolationMatchesNumpy) {
  const std::vector<double> v{1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 25), 1.75);  // rank 0.75
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);  // rank 2.7
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4.0);
  // np.percentile([15, 20, 35, 40, 50], 40) == 29.0; input unsorted.
  const std::vector<double> w{50, 15, 40, 20, 35};
  EXPECT_DOUBLE_EQ(percentile(w, 40), 29.0);
  EXPECT_DOUBLE_EQ(percentile(w, 99), 40 + 0.96 * 10);
}

TEST(Percentile, EdgeCases) {
  EXPECT_TRUE(std::isnan(percentile(std::vector<double>{}, 50)));
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{7}, 99), 7.0);
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{1, 3}, 150), 3.0);  // clamped
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{1, 3}, -5), 1.0);
}

TEST(Summary, FiguresAndExtraPercentiles) {
  const std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};
  const std::vector<double> extra{75, 99.9};
  Summary s = summarize(v, extra);
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.stddev, 2.0);  // population stddev
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_DOUBLE_EQ(s.p50, 4.5);
  EXPECT_DOUBLE_EQ(s.p90, 7.6);  // rank 6.3 -> 7 + 0.3 * 2
  ASSERT_EQ(s.extra.size(), 2u);
  EXPECT_DOUBLE_EQ(s.extra[0].second, 5.5);  // rank 5.25
  ASSERT_TRUE(s.at(75).has_value());
  EXPECT_DOUBLE_EQ(*s.at(75), 5.5);
  EXPECT_DOUBLE_EQ(*s.at(50), 4.5);
  EXPECT_FALSE(s.at(42).has_value());
}

TEST(Summary, EmptyIsNaN) {
  Summary s = summarize(std::vector<double>{});
  EXPECT_EQ(s.count, 0u);
  EXPECT_TRUE(std::isnan(s.mean));
  EXPECT_TRUE(std::isnan(s.p99));
}

RequestTiming streamed(std::int64_t start, std::vector<TokenEvent> events, std::int64_t end,
                       std::optional<std::uint64_t> usage_tokens) {
  RequestTiming t;
  t.start_ns = start;
  t.first_byte_ns = start + 1 * kMs;
  if (!events.empty()) t.first_token_ns = events.front().time_ns;
  t.events = std::move(events);
  t.end_ns = end;
  t.output_tokens = usage_tokens;
  return t;
}

TEST(Itl, MultiTokenEventsAreSplit) {
  // 1 token at 100 ms, 1 at 150, 4 at 250, 2 at 260: 8 tokens, 7 gaps.
  RequestTiming t =
      streamed(0, {{100 * kMs, 1}, {150 * kMs, 1}, {250 * kMs, 4}, {260 * kMs, 2}}, 270 * kMs, 8);
  RequestMetrics m = derive(t);
  ASSERT_EQ(m.itl_s.size(), 7u);
  const std::vector<double> want{0.050, 0.025, 0.025, 0.025, 0.025, 0.005, 0.005};
  double sum = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(m.itl_s[i], want[i], 1e-12) << i;
    sum += m.itl_s[i];
  }
  // The gaps add up to the time from the first to the last token.
  EXPECT_NEAR(sum, 0.160, 1e-12);
}

TEST(Itl, FirstEventExtraTokensHaveNoGap) {
  RequestTiming t = streamed(0, {{100 * kMs, 3}, {130 * kMs, 1}}, 140 * kMs, 4);
  RequestMetrics m = derive(t);
  ASSERT_EQ(m.itl_s.size(), 1u);
  EXPECT_NEAR(m.itl_s[0], 0.030, 1e-12);
}

TEST(Itl, ZeroTokenEventsAreSkipped) {
  RequestTiming t = streamed(0, {{100 * kMs, 1}, {120 * kMs, 0}, {140 * kMs, 2}}, 150 * kMs, 3);
  RequestMetrics m = derive(t);
  ASSERT_EQ(m.itl_s.size(), 2u);
  EXPECT_NEAR(m.itl_s[0], 0.020, 1e-12);
  EXPECT_NEAR(m.itl_s[1], 0.020, 1e-12);
}

TEST(Derive, TtftTpotAndRates) {
  // TTFT 100 ms, E2E 1100 ms, 11 tokens -> TPOT = 1000 ms / 10 = 100 ms.
  std::vector<TokenEvent> ev;
  for (int i = 0; i <= 10; ++i) ev.push_back({(100 + 100 * i) * kMs, 1});
  RequestTiming t = streamed(5 * kMs, {}, 0, 11);
  for (auto& e : ev) e.time_ns += 5 * kMs;
  t.first_token_ns = ev.front().time_ns;
  t.events = ev;
  t.end_ns = 5 * kMs + 1100 * kMs;
  RequestMetrics m = derive(t);
  EXPECT_TRUE(m.ok);
  EXPECT_NEAR(m.e2e_s, 1.1, 1e-12);
  ASSERT_TRUE(m.ttfb_s);
  EXPECT_NEAR(*m.ttfb_s, 0.001, 1e-12);
  ASSERT_TRUE(m.ttft_s);
  EXPECT_NEAR(*m.ttft_s, 0.1, 1e-12);
  ASSERT_TRUE(m.tpot_s);
  EXPECT_NEAR(*m.tpot_s, 0.1, 1e-12);
  ASSERT_TRUE(m.decode_tok_s);
  EXPECT_NEAR(*m.decode_tok_s, 10.0, 1e-9);
  ASSERT_TRUE(m.e2e_tok_s);
  EXPECT_NEAR(*m.e2e_tok_s, 10.0, 1e-9);
  EXPECT_EQ(m.output_tokens, 11u);
  EXPECT_FALSE(m.output_tokens_estimated);
  EXPECT_EQ(m.itl_s.size(), 10u);
}

TEST(Derive, UsageWinsOverEstimates) {
  // Events estimate 5 tokens, the server says 6: TPOT uses 6.
  RequestTiming t = streamed(0, {{100 * kMs, 2}, {200 * kMs, 3}}, 600 * kMs, 6);
  RequestMetrics m = derive(t);
  EXPECT_EQ(m.output_tokens, 6u);
  EXPECT_FALSE(m.output_tokens_estimated);
  EXPECT_NEAR(*m.tpot_s, 0.5 / 5, 1e-12);

  t.output_tokens.reset();
  m = derive(t);
  EXPECT_EQ(m.output_tokens, 5u);
  EXPECT_TRUE(m.output_tokens_estimated);
  EXPECT_NEAR(*m.tpot_s, 0.5 / 4, 1e-12);
}

TEST(Derive, NoTpotForOneTokenOrNoTtft) {
  RequestTiming one = streamed(0, {{100 * kMs, 1}}, 120 * kMs, 1);
  EXPECT_FALSE(derive(one).tpot_s.has_value());
  EXPECT_TRUE(derive(one).itl_s.empty());

  RequestTiming plain;  // non-streaming: no events, usage only
  plain.start_ns = 0;
  plain.end_ns = 2000 * kMs;
  plain.output_tokens = 100;
  RequestMetrics m = derive(plain);
  EXPECT_FALSE(m.ttft_s.has_value());
  EXPECT_FALSE(m.tpot_s.has_value());
  ASSERT_TRUE(m.e2e_tok_s);
  EXPECT_NEAR(*m.e2e_tok_s, 50.0, 1e-9);  // the seed's single-stream tok/s
}

TEST(Slo, SubsetsOfLimits) {
  RequestMetrics m;
  m.ok = true;
  m.ttft_s = 0.2;
  m.tpot_s = 0.03;
  m.e2e_s = 4.0;
  EXPECT_TRUE(meets(m, {}));
  EXPECT_TRUE(meets(m, {.ttft_s = 0.2}));  // inclusive
  EXPECT_FALSE(meets(m, {.ttft_s = 0.19}));
  EXPECT_TRUE(meets(m, {.ttft_s = 0.5, .tpot_s = 0.03}));
  EXPECT_FALSE(meets(m, {.ttft_s = 0.5, .tpot_s = 0.029}));
  EXPECT_FALSE(meets(m, {.e2e_s = 3.9}));

  RequestMetrics no_ttft = m;
  no_ttft.ttft_s.reset();
  no_ttft.tpot_s.reset();
  EXPECT_FALSE(meets(no_ttft, {.ttft_s = 10}));    // unmeasured TTFT cannot pass
  EXPECT_TRUE(meets(no_ttft, {.tpot_s = 0.001}));  // one token: no TPOT to violate
  EXPECT_TRUE(meets(no_ttft, {.e2e_s = 5}));

  RequestMetrics failed = m;
  failed.ok = false;
  EXPECT_FALSE(meets(failed, {}));
}

TEST(Aggregate, ThroughputGoodputAndErrors) {
  // Four successful requests of 10 tokens (1 token every 10 ms after TTFT) and two failures
  // inside [0 s, 2 s].
  auto make = [](std::int64_t start, std::int64_t ttft, std::int64_t step) {
    std::vector<TokenEvent> ev;
    for (int i = 0; i < 10; ++i) ev.push_back({start + ttft + i * step, 1});
    return streamed(start, ev, start + ttft + 9 * step, 10);
  };
  std::vector<RequestTiming> runs{
      make(0, 100 * kMs, 10 * kMs),           // TTFT 100 ms, TPOT 10 ms: good
      make(200 * kMs, 300 * kMs, 10 * kMs),   // TTFT 300 ms: misses TTFT <= 250 ms
      make(400 * kMs, 50 * kMs, 40 * kMs),    // TPOT 40 ms: misses TPOT <= 20 ms
      make(1000 * kMs, 200 * kMs, 15 * kMs),  // TTFT met exactly, TPOT 15 ms
  };
  RequestTiming bad;
  bad.start_ns = 1500 * kMs;
  bad.end_ns = 2000 * kMs;
  bad.error = ErrorKind::http_status;
  bad.http_status = 500;
  runs.push_back(bad);
  bad.error = ErrorKind::broken_stream;
  bad.events = {{1600 * kMs, 3}};
  runs.push_back(bad);

  AggregateOptions opt;
  opt.slo = {.ttft_s = 0.25, .tpot_s = 0.02};
  opt.extra_percentiles = {75};
  Aggregate a = aggregate(runs, opt);
  EXPECT_EQ(a.requests, 6u);
  EXPECT_EQ(a.ok, 4u);
  EXPECT_EQ(a.failed, 2u);
  EXPECT_EQ(a.errors.at(ErrorKind::http_status), 1u);
  EXPECT_EQ(a.errors.at(ErrorKind::broken_stream), 1u);
  EXPECT_NEAR(a.wall_s, 2.0, 1e-12);
  EXPECT_EQ(a.output_tokens, 40u);  // the broken stream's tokens do not count
  EXPECT_NEAR(a.output_tok_s, 20.0, 1e-9);
  EXPECT_NEAR(a.requests_per_s, 2.0, 1e-9);
  EXPECT_EQ(a.good, 2u);
  EXPECT_NEAR(a.goodput_req_s, 1.0, 1e-9);
  EXPECT_EQ(a.ttft.count, 4u);
  EXPECT_NEAR(a.ttft.p50, 0.150, 1e-12);  // {50, 100, 200, 300} ms
  EXPECT_EQ(a.itl.count, 36u);
  EXPECT_EQ(a.tpot.count, 4u);
  EXPECT_EQ(a.estimated_requests, 0u);
  ASSERT_TRUE(a.ttft.at(75).has_value());
  EXPECT_NEAR(*a.ttft.at(75), 0.225, 1e-12);

  // A measurement window given by the driver wins over first-start..last-end.
  opt.wall_s = 4.0;
  a = aggregate(runs, opt);
  EXPECT_NEAR(a.output_tok_s, 10.0, 1e-9);
  EXPECT_NEAR(a.goodput_req_s, 0.5, 1e-9);
}

TEST(Aggregate, Empty) {
  Aggregate a = aggregate(std::vector<RequestTiming>{});
  EXPECT_EQ(a.requests, 0u);
  EXPECT_EQ(a.output_tok_s, 0.0);
  EXPECT_EQ(a.ttft.count, 0u);
}

TEST(ErrorKindNames, AreStable) {
  EXPECT_EQ(to_string(ErrorKind::none), "none");
  EXPECT_EQ(to_string(ErrorKind::error_event), "error_event");
  EXPECT_EQ(to_string(ErrorKind::timeout), "timeout");
}

}  // namespace
}  // namespace llmux::bench
