// SPDX-License-Identifier: Apache-2.0
#pragma once
// A scrape: every worker's metrics added up, with the state of the fleet in use (backends'
// in-flight counts, health, reported load; routes' queues), as Prometheus text (GET /metrics,
// written by prometheus-cpp's serializer, metrics_render.cpp) or as the dashboard's JSON (GET
// /dashboard/data, dashboard_data.cpp); what both add up is in metrics_sum.hpp.
// Runs on the worker that answers the scrape; reads the other workers' numbers without locks.
#include <string>

#include "gateway/metrics_sum.hpp"  // BackendTotals, backend_totals()
#include "gateway/worker.hpp"

namespace llmux::gateway {

/// Prometheus text exposition format 0.0.4 of the gateway's metrics (docs/metrics.md names them).
std::string prometheus_text(const GatewayState& state, const Fleet& fleet);

/// The dashboard's snapshot (docs/metrics.md: its fields); counters cumulative since start.
std::string dashboard_json(const GatewayState& state, const Fleet& fleet);

}  // namespace llmux::gateway
