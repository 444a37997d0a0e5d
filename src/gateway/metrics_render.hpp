// SPDX-License-Identifier: Apache-2.0
#pragma once
// A scrape: every worker's metrics added up, with the state of the fleet in use (backends'
// in-flight counts, health, reported load; routes' queues), as Prometheus text (GET /metrics,
// written by prometheus-cpp's serializer) or as the dashboard's JSON (GET /dashboard/data).
// Runs on the worker that answers the scrape; reads the other workers' numbers without locks.
#include <string>

#include "gateway/worker.hpp"

namespace llmux::gateway {

/// A backend's counters since start, over every worker (by its metric id).
struct BackendTotals {
  std::uint64_t requests = 0, errors = 0, prompt_tokens = 0, cached_tokens = 0,
                generation_tokens = 0;
};
BackendTotals backend_totals(const GatewayState& state, int metric_id);

/// Prometheus text exposition format 0.0.4 of the gateway's metrics (docs/metrics.md names them).
std::string prometheus_text(const GatewayState& state, const Fleet& fleet);

/// The dashboard's snapshot (docs/metrics.md: its fields); counters cumulative since start.
std::string dashboard_json(const GatewayState& state, const Fleet& fleet);

}  // namespace llmux::gateway
