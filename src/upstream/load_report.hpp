// SPDX-License-Identifier: Apache-2.0
#pragma once
// The load a vLLM server reports about itself on its Prometheus /metrics: requests running,
// requests waiting, KV-cache usage. Read by the gateway's scraper (gateway/scrape.hpp) and kept
// in the backend's observations (upstream/observations.hpp); the least_load policy weighs it
// with the gateway's own counts.
#include <cstdint>
#include <optional>
#include <string_view>

namespace llmux::upstream {

struct Backend;

struct LoadReport {
  double running = 0;   // vllm:num_requests_running, summed over its series (engines)
  double waiting = 0;   // vllm:num_requests_waiting, likewise
  double kv_usage = 0;  // vllm:kv_cache_usage_perc (0-1), the mean over its series
};

/// Reads the three from Prometheus text exposition; nullopt (with the reason in `*why`) when
/// `vllm:num_requests_running` is not there — not a vLLM, or not one that says. Comments, other
/// metrics, label sets (quoted values with escapes) and timestamps are handled; a line that
/// cannot be read is skipped.
std::optional<LoadReport> parse_load_report(std::string_view text, std::string_view* why = nullptr);

/// Stores `report` on `backend` as read at `now_ns`, to count until `stale_ns` later.
void store_report(Backend& backend, const LoadReport& report, std::int64_t now_ns,
                  std::int64_t stale_ns);

/// The backend's reported load, while it still counts at `now_ns`; nullopt when stale or never
/// read.
std::optional<LoadReport> fresh_report(const Backend& backend, std::int64_t now_ns);

}  // namespace llmux::upstream
