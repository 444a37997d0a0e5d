// SPDX-License-Identifier: Apache-2.0
#pragma once
// The simulator's /metrics: vLLM's metric names, labels and histogram buckets, plus
// llmux_sim_* metrics of the simulator itself (engine lag). Single-threaded use.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

#include "sim/engine.hpp"

namespace llmux::sim {

class SimMetrics {
 public:
  SimMetrics(const std::string& model_name, std::int64_t max_model_len);

  /// Mirrors the engine's gauges and counters (counters advance by their deltas).
  void sync(const EngineStats& stats);
  /// One finished request (times in wall-clock seconds).
  void request_done(const std::string& finished_reason, double e2e, double queue, double prefill,
                    double decode, std::int64_t prompt_tokens, std::int64_t generation_tokens);
  void ttft(double seconds) { ttft_->Observe(seconds); }
  void itl(double seconds) {
    itl_->Observe(seconds);
    tpot_->Observe(seconds);
  }
  void engine_lag(double seconds);
  /// Prefill/decode disaggregation, with vLLM's NIXL metric names (docs/features/
  /// nixl_connector_metrics.md): a consumer's load that arrived, one that failed, a producer's
  /// handle that expired unread.
  void kv_transfer(double seconds, double bytes);
  void kv_load_failed() { nixl_failed_->Increment(); }
  void kv_expired() { nixl_expired_->Increment(); }
  /// Prometheus text exposition format.
  std::string serialize() const;

 private:
  std::shared_ptr<prometheus::Registry> reg_;
  prometheus::Labels labels_;
  prometheus::Gauge *running_, *waiting_, *kv_usage_, *lag_max_;
  prometheus::Counter *prompt_tokens_, *gen_tokens_, *preemptions_, *prefix_queries_, *prefix_hits_;
  prometheus::Counter *external_queries_, *external_hits_, *nixl_failed_, *nixl_expired_;
  prometheus::Histogram *nixl_time_, *nixl_bytes_;
  prometheus::Family<prometheus::Counter>* success_family_;
  prometheus::Histogram *ttft_, *itl_, *tpot_, *e2e_, *queue_, *prefill_, *decode_, *prompt_len_,
      *gen_len_, *lag_;
  EngineStats last_{};
  double lag_max_value_ = 0;
};

}  // namespace llmux::sim
