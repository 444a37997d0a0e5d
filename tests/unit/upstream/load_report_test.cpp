// SPDX-License-Identifier: Apache-2.0
// A vLLM server's own load from its Prometheus metrics: summed over engines, averaged cache
// usage, robust to label sets, comments and other metrics; stale once its time is up.
#include <gtest/gtest.h>

#include "upstream/backend.hpp"
#include "upstream/load_report.hpp"

namespace llmux::upstream {
namespace {

TEST(LoadReport, ReadsVllmMetricsSummedOverEngines) {
  const char* text =
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"Qwen\"} 5.0\n"
      "vllm:num_requests_running{engine=\"1\",model_name=\"Qwen\"} 3.0\n"
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"Qwen\"} 2.0\n"
      "vllm:num_requests_waiting{engine=\"1\",model_name=\"Qwen\"} 1.0\r\n"
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"Q{u}e\\\"n\"} 0.5\n"
      "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"Qwen\"} 0.25 1700000000000\n"
      "vllm:num_requests_running_total 99\n"
      "vllm:prompt_tokens_total{engine=\"0\"} 12345\n";
  auto r = parse_load_report(text);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->running, 8.0);
  EXPECT_EQ(r->waiting, 3.0);
  EXPECT_DOUBLE_EQ(r->kv_usage, 0.375);
}

TEST(LoadReport, NoRunningGaugeIsNoReport) {
  std::string_view why;
  EXPECT_FALSE(parse_load_report("process_cpu_seconds_total 3\n", &why));
  EXPECT_NE(why.find("num_requests_running"), std::string_view::npos);
  EXPECT_FALSE(parse_load_report(""));
  EXPECT_FALSE(parse_load_report("vllm:num_requests_running{engine=\"0\" 4\n"));  // unterminated
  EXPECT_FALSE(parse_load_report("vllm:num_requests_running NaN\n"));
}

TEST(LoadReport, CountsUntilStale) {
  Backend b;
  EXPECT_FALSE(fresh_report(b, 1000));  // never read
  store_report(b, LoadReport{4, 2, 0.9}, 1'000'000'000, 3'000'000'000);
  auto r = fresh_report(b, 3'999'999'999);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->running, 4);
  EXPECT_EQ(r->waiting, 2);
  EXPECT_DOUBLE_EQ(r->kv_usage, 0.9);
  EXPECT_FALSE(fresh_report(b, 4'000'000'000));
}

}  // namespace
}  // namespace llmux::upstream
