// SPDX-License-Identifier: Apache-2.0
#pragma once
// What each tenant and priority class gets (gateway/sharing.hpp): counted on the request path
// (count_tenant_start once a request is classified, count_tenant_end when it ends), shown on
// /metrics (render_tenant_metrics) and the dashboard's tenants table (tenant_rows). Label
// values come from bounded tables (gateway/metrics.hpp: 63 tenants, then "other").
#include <cstdint>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "gateway/access_log.hpp"
#include "gateway/fleet.hpp"
#include "gateway/metrics.hpp"
#include "gateway/worker.hpp"

namespace llmux::gateway {

/// A classified request began (rec.tenant and rec.priority set).
void count_tenant_start(const Fleet& fleet, metrics::WorkerMetrics& worker_metrics,
                        const AccessRecord& rec);
/// It ended: its tokens and its time in the queue (0 when it did not wait).
void count_tenant_end(const Fleet& fleet, metrics::WorkerMetrics& worker_metrics,
                      const AccessRecord& rec);

/// One tenant and class now, over every worker and route.
struct TenantRow {
  std::string tenant, priority;
  double queued = 0;   // waiting in a route's queue
  double running = 0;  // begun, not ended, not waiting
  std::uint64_t requests = 0, prompt_tokens = 0, completion_tokens = 0;
  double queue_wait_p50_s = 0, queue_wait_p99_s = 0;  // upper bounds of their buckets
};
std::vector<TenantRow> tenant_rows(const GatewayState& state, const Fleet& fleet);

/// llmux_tenant_requests_total, _queued_requests, _running_requests, _tokens_total and
/// _queue_wait_seconds, by tenant and class.
void render_tenant_metrics(const GatewayState& state, const Fleet& fleet,
                           std::vector<prometheus::MetricFamily>& out);

}  // namespace llmux::gateway
