// SPDX-License-Identifier: Apache-2.0
// GET /dashboard/data: the dashboard's snapshot of every worker's metrics and the fleet's state
// (gateway/metrics_render.hpp declares it).
#include <boost/json.hpp>

#include "core/clock.hpp"
#include "gateway/metrics_render.hpp"
#include "gateway/metrics_sum.hpp"
#include "gateway/tenant_metrics.hpp"

#ifndef LLMUX_VERSION
#define LLMUX_VERSION "0.1.0"
#endif

namespace llmux::gateway {

using metrics::Family;
using metrics::HistKind;

namespace {

boost::json::object hist_json(const Summed& summed, const metrics::Bounds& bounds) {
  boost::json::array upper_bounds, counts;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds.upper_ns.size(); ++i) {
    cumulative += summed.buckets[i];
    upper_bounds.push_back(static_cast<double>(bounds.upper_ns[i]) / 1e9);
    counts.push_back(cumulative);
  }
  upper_bounds.push_back("+Inf");
  counts.push_back(summed.count);
  return {{"le", std::move(upper_bounds)},
          {"counts", std::move(counts)},
          {"sum", static_cast<double>(summed.sum_ns) / 1e9},
          {"count", summed.count}};
}

}  // namespace

std::string dashboard_json(const GatewayState& state, const Fleet& fleet) {
  const std::int64_t now = mono_ns();
  const auto all = counters(state);
  boost::json::array backends;
  for (const auto& backend_ptr : fleet.backends) {
    const auto& backend = *backend_ptr;
    const int id = backend.metric_id;
    boost::json::object entry;
    entry["name"] = backend.name;
    entry["url"] = backend.url;
    entry["state"] = dashboard_state(backend, now);
    entry["detail"] = upstream::state_name(backend, now);
    entry["inflight"] = backend.inflight.load(std::memory_order_relaxed);
    entry["max_inflight"] = backend.max_inflight.load(std::memory_order_relaxed);
    entry["weight"] = backend.weight.load(std::memory_order_relaxed);
    const BackendTotals sums = totals(all, id);
    entry["requests"] = sums.requests;
    entry["errors"] = sums.errors;
    entry["prompt_tokens"] = sums.prompt_tokens;
    entry["cached_tokens"] = sums.cached_tokens;
    entry["generation_tokens"] = sums.generation_tokens;
    entry["migrated_out"] = sums.migrated_out;
    entry["migrated_in"] = sums.migrated_in;
    const auto per = [&](HistKind kind, const std::array<metrics::Histogram, metrics::kMaxNames>
                                            metrics::WorkerMetrics::*which) {
      return hist_json(sum(state,
                           [&](const metrics::WorkerMetrics& metrics) -> const metrics::Histogram& {
                             return (metrics.*which)[static_cast<std::size_t>(id)];
                           }),
                       metrics::bounds(kind));
    };
    entry["ttft"] = per(HistKind::ttft, &metrics::WorkerMetrics::ttft);
    entry["itl"] = per(HistKind::itl, &metrics::WorkerMetrics::itl);
    entry["e2e"] = per(HistKind::e2e, &metrics::WorkerMetrics::e2e);
    if (reported_fresh(backend, now))
      entry["reported"] = {{"running", backend.observations.reported.running.load()},
                           {"waiting", backend.observations.reported.waiting.load()},
                           {"kv_usage", backend.observations.reported.kv_permille.load() / 1000.0}};
    else
      entry["reported"] = nullptr;
    backends.push_back(std::move(entry));
  }
  boost::json::array routes;
  for (const auto& route : fleet.routes) {
    const auto& route_match = route.cfg->match;
    std::string match = route_match.methods.empty() ? "ANY" : "";
    for (std::size_t i = 0; i < route_match.methods.size(); ++i)
      match += (i ? "," : "") + route_match.methods[i];
    match += " ";
    match += !route_match.path.empty()          ? route_match.path
             : !route_match.path_prefix.empty() ? route_match.path_prefix + "*"
                                                : "*";
    std::string model;
    for (std::size_t i = 0; i < route_match.models.size(); ++i)
      model += (i ? "," : "") + route_match.models[i];
    boost::json::array backend_names;
    for (const auto* backend : route.backends)
      backend_names.push_back(boost::json::string(backend->name));
    routes.push_back({{"name", route.cfg->name},
                      {"match", match},
                      {"model", model},
                      {"policy", route.policy->name()},
                      {"backends", std::move(backend_names)},
                      {"queued", route.queue->depth()}});
  }
  boost::json::array tenants;
  for (const TenantRow& row : tenant_rows(state, fleet))
    tenants.push_back({{"tenant", row.tenant},
                       {"priority", row.priority},
                       {"queued", row.queued},
                       {"running", row.running},
                       {"requests", row.requests},
                       {"prompt_tokens", row.prompt_tokens},
                       {"completion_tokens", row.completion_tokens},
                       {"queue_wait_p50_s", row.queue_wait_p50_s},
                       {"queue_wait_p99_s", row.queue_wait_p99_s}});
  const auto unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  auto overhead = [&](HistKind kind, const metrics::Histogram metrics::WorkerMetrics::*which) {
    return hist_json(sum(state,
                         [&](const metrics::WorkerMetrics& metrics) -> const metrics::Histogram& {
                           return metrics.*which;
                         }),
                     metrics::bounds(kind));
  };
  boost::json::object state_json{{"kind", state.redis ? "redis" : "memory"}};
  if (state.redis) {
    state_json["up"] = state.redis->up();
    state_json["pending"] = state.responses_redis->pending();
  }
  boost::json::object gateway_json{
      {"state", std::move(state_json)},
      {"connections", state.connections.load()},
      {"active_requests", state.active.load()},
      {"overhead",
       {{"request",
         overhead(HistKind::request_overhead, &metrics::WorkerMetrics::request_overhead)},
        {"relay", overhead(HistKind::relay_overhead, &metrics::WorkerMetrics::relay_overhead)}}}};
  return boost::json::serialize(boost::json::object{
      {"version", LLMUX_VERSION},
      {"time", static_cast<double>(unix_ms) / 1e3},
      {"uptime_s", static_cast<double>(now - state.metrics.start_mono_ns) / 1e9},
      {"config_generation", fleet.generation},
      {"gateway", std::move(gateway_json)},
      {"backends", std::move(backends)},
      {"routes", std::move(routes)},
      {"tenants", std::move(tenants)}});
}

}  // namespace llmux::gateway
