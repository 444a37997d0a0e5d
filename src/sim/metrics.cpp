// SPDX-License-Identifier: Apache-2.0
#include "sim/metrics.hpp"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace llmux::sim {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// vLLM's buckets (vllm/v1/metrics/loggers.py).
const Histogram::BucketBoundaries kTtft = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                           0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                           20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const Histogram::BucketBoundaries kItl = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const Histogram::BucketBoundaries kLatency = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                              5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                              60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const Histogram::BucketBoundaries kLag = {0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01,
                                          0.02,   0.05,   0.1,   0.25,  0.5,   1.0};

// vLLM's build_1_2_5_buckets(max_model_len).
Histogram::BucketBoundaries buckets_125(std::int64_t max_value) {
  Histogram::BucketBoundaries out;
  for (double exp = 1;; exp *= 10) {
    for (double mantissa : {1.0, 2.0, 5.0}) {
      double bound = mantissa * exp;
      if (bound > static_cast<double>(max_value)) return out;
      out.push_back(bound);
    }
  }
}

}  // namespace

SimMetrics::SimMetrics(const std::string& model_name, std::int64_t max_model_len)
    : reg_(std::make_shared<prometheus::Registry>()),
      labels_{{"model_name", model_name}, {"engine", "0"}} {
  auto gauge = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(*reg_).Add(labels_);
  };
  auto counter = [&](const char* name, const char* help) {
    return &BuildCounter().Name(name).Help(help).Register(*reg_).Add(labels_);
  };
  auto histogram = [&](const char* name, const char* help,
                       const Histogram::BucketBoundaries& buckets) {
    return &BuildHistogram().Name(name).Help(help).Register(*reg_).Add(labels_, buckets);
  };
  running_ = gauge("vllm:num_requests_running", "Number of requests in model execution batches.");
  waiting_ = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.");
  kv_usage_ = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.");
  prompt_tokens_ = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.");
  gen_tokens_ = counter("vllm:generation_tokens_total", "Number of generation tokens processed.");
  preemptions_ =
      counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.");
  prefix_queries_ = counter("vllm:prefix_cache_queries_total",
                            "Prefix cache queries, in terms of number of queried tokens.");
  prefix_hits_ = counter("vllm:prefix_cache_hits_total",
                         "Prefix cache hits, in terms of number of cached tokens.");
  external_queries_ =
      counter("vllm:external_prefix_cache_queries_total",
              "External prefix cache queries from KV connector cross-instance cache sharing, in "
              "terms of number of queried tokens.");
  external_hits_ = counter("vllm:external_prefix_cache_hits_total",
                           "External prefix cache hits from KV connector cross-instance cache "
                           "sharing, in terms of number of cached tokens.");
  nixl_failed_ =
      counter("vllm:nixl_num_failed_transfers_total", "Number of failed NIXL KV Cache transfers.");
  nixl_expired_ = counter("vllm:nixl_num_kv_expired_reqs_total",
                          "Number of requests that had their KV expire.");
  nixl_time_ = histogram("vllm:nixl_xfer_time_seconds",
                         "Histogram of transfer duration for NIXL KV Cache transfers.", kTtft);
  nixl_bytes_ = histogram("vllm:nixl_bytes_transferred",
                          "Histogram of bytes transferred per NIXL KV Cache transfers.",
                          buckets_125(100'000'000'000));
  success_family_ = &BuildCounter()
                         .Name("vllm:request_success_total")
                         .Help("Count of successfully processed requests.")
                         .Register(*reg_);
  ttft_ = histogram("vllm:time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.", kTtft);
  itl_ = histogram("vllm:inter_token_latency_seconds",
                   "Histogram of inter-token latency in seconds.", kItl);
  tpot_ = histogram("vllm:time_per_output_token_seconds",
                    "Histogram of time per output token in seconds.", kItl);
  e2e_ = histogram("vllm:e2e_request_latency_seconds",
                   "Histogram of e2e request latency in seconds.", kLatency);
  queue_ = histogram("vllm:request_queue_time_seconds",
                     "Histogram of time spent in WAITING phase for request.", kLatency);
  prefill_ = histogram("vllm:request_prefill_time_seconds",
                       "Histogram of time spent in PREFILL phase for request.", kLatency);
  decode_ = histogram("vllm:request_decode_time_seconds",
                      "Histogram of time spent in DECODE phase for request.", kLatency);
  prompt_len_ = histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.",
                          buckets_125(max_model_len));
  gen_len_ = histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
                       buckets_125(max_model_len));
  lag_ = &BuildHistogram()
              .Name("llmux_sim_engine_lag_seconds")
              .Help(
                  "How late the simulator's engine completed each step against its deadline "
                  "(wall-clock seconds); tokens are never merged to hide lag.")
              .Register(*reg_)
              .Add({}, kLag);
  lag_max_ = &BuildGauge()
                  .Name("llmux_sim_engine_lag_max_seconds")
                  .Help("Largest engine lag seen since start.")
                  .Register(*reg_)
                  .Add({});
}

void SimMetrics::sync(const EngineStats& stats) {
  running_->Set(stats.running);
  waiting_->Set(stats.waiting);
  kv_usage_->Set(stats.kv_usage());
  prompt_tokens_->Increment(static_cast<double>(stats.prompt_tokens - last_.prompt_tokens));
  gen_tokens_->Increment(static_cast<double>(stats.generation_tokens - last_.generation_tokens));
  preemptions_->Increment(static_cast<double>(stats.preemptions - last_.preemptions));
  prefix_queries_->Increment(static_cast<double>(stats.prefix_queries - last_.prefix_queries));
  prefix_hits_->Increment(static_cast<double>(stats.prefix_hits - last_.prefix_hits));
  external_queries_->Increment(
      static_cast<double>(stats.external_prefix_queries - last_.external_prefix_queries));
  external_hits_->Increment(
      static_cast<double>(stats.external_prefix_hits - last_.external_prefix_hits));
  last_ = stats;
}

void SimMetrics::request_done(const std::string& finished_reason, double e2e, double queue,
                              double prefill, double decode, std::int64_t prompt_tokens,
                              std::int64_t generation_tokens) {
  auto labels = labels_;
  labels["finished_reason"] = finished_reason;
  success_family_->Add(labels).Increment();
  e2e_->Observe(e2e);
  queue_->Observe(queue);
  prefill_->Observe(prefill);
  decode_->Observe(decode);
  prompt_len_->Observe(static_cast<double>(prompt_tokens));
  gen_len_->Observe(static_cast<double>(generation_tokens));
}

void SimMetrics::kv_transfer(double seconds, double bytes) {
  nixl_time_->Observe(seconds);
  nixl_bytes_->Observe(bytes);
}

void SimMetrics::engine_lag(double seconds) {
  lag_->Observe(seconds);
  if (seconds > lag_max_value_) {
    lag_max_value_ = seconds;
    lag_max_->Set(seconds);
  }
}

std::string SimMetrics::serialize() const {
  prometheus::TextSerializer ser;
  std::ostringstream os;
  ser.Serialize(os, reg_->Collect());
  return os.str();
}

}  // namespace llmux::sim
