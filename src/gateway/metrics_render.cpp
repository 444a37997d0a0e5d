// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics_render.hpp"

#include <chrono>
#include <map>

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include "core/clock.hpp"
#include "gateway/access_log.hpp"
#include "gateway/continuation.hpp"
#include "gateway/metrics_sum.hpp"
#include "gateway/tenant_metrics.hpp"
#include "state/redis_quota.hpp"
#include "upstream/health.hpp"

#ifndef LLMUX_VERSION
#define LLMUX_VERSION "0.1.0"
#endif

namespace llmux::gateway {

namespace {

using metrics::CounterTable;
using metrics::Family;
using metrics::HistKind;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

ClientMetric::Histogram to_prometheus(const Summed& summed, const metrics::Bounds& bounds) {
  ClientMetric::Histogram out;
  out.sample_count = summed.count;
  out.sample_sum = static_cast<double>(summed.sum_ns) / 1e9;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds.upper_ns.size(); ++i) {
    cumulative += summed.buckets[i];
    out.bucket.push_back({cumulative, static_cast<double>(bounds.upper_ns[i]) / 1e9});
  }
  out.bucket.push_back({summed.count, std::numeric_limits<double>::infinity()});
  return out;
}

ClientMetric labelled(std::vector<ClientMetric::Label> labels) {
  ClientMetric metric;
  metric.label = std::move(labels);
  return metric;
}

MetricFamily family(std::string name, std::string help, MetricType type) {
  MetricFamily metric_family;
  metric_family.name = std::move(name);
  metric_family.help = std::move(help);
  metric_family.type = type;
  return metric_family;
}

void gauge(std::vector<MetricFamily>& out, std::string name, std::string help, double value) {
  auto metric_family = family(std::move(name), std::move(help), MetricType::Gauge);
  ClientMetric metric;
  metric.gauge.value = value;
  metric_family.metric.push_back(std::move(metric));
  out.push_back(std::move(metric_family));
}

}  // namespace

std::string prometheus_text(const GatewayState& state, const Fleet& fleet) {
  auto& names = metrics::names();
  const std::int64_t now = mono_ns();
  const auto all = counters(state);
  std::vector<MetricFamily> out;

  // ---- counters from the workers ----
  struct CounterSpec {
    Family fam;
    const char* name;
    const char* help;
    std::vector<std::string> labels;  // for parts 0, 1, 2
  };
  const std::vector<CounterSpec> specs = {
      {Family::requests,
       "llmux_requests_total",
       "Requests the gateway answered, by route, backend (empty: none answered) and status code",
       {"route", "backend", "code"}},
      {Family::retries,
       "llmux_request_retries_total",
       "Attempts after a request's first (on another backend), by route",
       {"route"}},
      {Family::attempt_failures,
       "llmux_backend_attempt_failures_total",
       "Attempts on a backend that failed, by how",
       {"backend", "reason"}},
      {Family::prompt_tokens,
       "llmux_prompt_tokens_total",
       "Prompt tokens of the answers relayed (the backends' usage)",
       {"backend", "model"}},
      {Family::cached_tokens,
       "llmux_cached_prompt_tokens_total",
       "Prompt tokens the backends served from their prefix cache",
       {"backend", "model"}},
      {Family::generation_tokens,
       "llmux_generation_tokens_total",
       "Generated tokens of the answers relayed (the backends' usage)",
       {"backend", "model"}},
      {Family::usage_requested,
       "llmux_stream_usage_requested_total",
       "Streams the gateway asked for usage the client did not (the extra chunk removed)",
       {"route"}},
      {Family::migrations,
       "llmux_migrations_total",
       "Streams continued on another backend after theirs broke, by route, the backend cut "
       "(from), the one continuing (to) and why (broken, stalled, idle)",
       {"route", "from", "to", "reason"}},
      {Family::hedges,
       "llmux_hedges_total",
       "Requests whose first attempt was raced by a second on another backend (hedge), by "
       "route and which produced the first token (first, hedge)",
       {"route", "winner"}},
      {Family::prefills,
       "llmux_prefill_legs_total",
       "Disaggregated requests, by route and the backend that ran their prefill leg (unified: "
       "none answered, and the decode backend computed the prompt itself)",
       {"route", "prefill"}},
  };
  for (const auto& spec : specs) {
    auto fam = family(spec.name, spec.help, MetricType::Counter);
    for (const auto& [key, value] : all) {
      if (family_of(key) != spec.fam) continue;
      std::vector<ClientMetric::Label> labels;
      for (std::size_t i = 0; i < spec.labels.size(); ++i) {
        const std::string& label_name = spec.labels[i];
        // (A migration's "to" and "reason" share the third part: metrics::migration_target.)
        const int part = key_part(key, static_cast<int>(std::min<std::size_t>(i, 2)));
        const int id = spec.fam != Family::migrations ? part
                       : i == 2                       ? (part & 0xfff)
                       : i == 3                       ? (part >> 12)
                                                      : part;
        std::string label_value;
        if (label_name == "route") label_value = names.routes.name(id);
        if (label_name == "backend" || label_name == "from" || label_name == "to")
          label_value = names.backends.name(id);
        if (spec.fam == Family::migrations && label_name == "reason")
          label_value = to_string(static_cast<CutReason>(id));
        if (label_name == "model") label_value = names.models.name(id);
        if (label_name == "winner")
          label_value = static_cast<HedgeResult>(id) == HedgeResult::hedge_won ? "hedge" : "first";
        if (label_name == "code") label_value = std::to_string(id);
        if (label_name == "prefill") label_value = id == 0 ? "unified" : names.backends.name(id);
        if (spec.fam == Family::attempt_failures && label_name == "reason")
          label_value = upstream::to_string(static_cast<upstream::Outcome::Kind>(id));
        labels.push_back({label_name, std::move(label_value)});
      }
      auto metric = labelled(std::move(labels));
      metric.counter.value = static_cast<double>(value);
      fam.metric.push_back(std::move(metric));
    }
    out.push_back(std::move(fam));
  }

  // ---- per backend, from the fleet in use ----
  auto ejections =
      family("llmux_backend_ejections_total",
             "Times a backend was ejected (failures in a row, a stall)", MetricType::Counter);
  struct GaugeSpec {
    const char* name;
    const char* help;
    std::function<double(const upstream::Backend&)> value;
    bool only_reported = false;
  };
  const std::vector<GaugeSpec> gauges = {
      {"llmux_backend_inflight_requests", "Requests in flight on a backend",
       [](const upstream::Backend& backend) {
         return backend.inflight.load(std::memory_order_relaxed);
       }},
      {"llmux_backend_up", "1 when a backend takes new requests (checks pass, not ejected)",
       [now](const upstream::Backend& backend) { return backend.usable(now) ? 1.0 : 0.0; }},
      {"llmux_backend_healthy", "1 when a backend's active health checks pass",
       [](const upstream::Backend& backend) { return backend.checks_ok.load() ? 1.0 : 0.0; }},
      {"llmux_backend_ejected", "1 while a backend is ejected (passive outlier detection)",
       [now](const upstream::Backend& backend) {
         return now < backend.ejected_until_ns.load() ? 1.0 : 0.0;
       }},
      {"llmux_backend_draining", "1 while a backend is drained through the admin API",
       [](const upstream::Backend& backend) { return backend.draining.load() ? 1.0 : 0.0; }},
      {"llmux_backend_weight", "A backend's configured weight",
       [](const upstream::Backend& backend) { return backend.weight.load(); }},
      {"llmux_backend_reported_running_requests",
       "Requests running on a backend, as its own /metrics says (backend_metrics)",
       [](const upstream::Backend& backend) {
         return backend.observations.reported.running.load();
       },
       true},
      {"llmux_backend_reported_waiting_requests",
       "Requests waiting on a backend, as its own /metrics says (backend_metrics)",
       [](const upstream::Backend& backend) {
         return backend.observations.reported.waiting.load();
       },
       true},
      {"llmux_backend_reported_kv_cache_usage_ratio",
       "A backend's KV cache usage (0-1), as its own /metrics says (backend_metrics)",
       [](const upstream::Backend& backend) {
         return backend.observations.reported.kv_permille.load() / 1000.0;
       },
       true},
  };
  std::vector<MetricFamily> gauge_families;
  for (const auto& spec : gauges)
    gauge_families.push_back(family(spec.name, spec.help, MetricType::Gauge));
  for (const auto& backend_ptr : fleet.backends) {
    const auto& backend = *backend_ptr;
    auto ejection_metric = labelled({{"backend", backend.name}});
    ejection_metric.counter.value =
        static_cast<double>(backend.ejections_total.load(std::memory_order_relaxed));
    ejections.metric.push_back(ejection_metric);
    for (std::size_t i = 0; i < gauges.size(); ++i) {
      if (gauges[i].only_reported && !reported_fresh(backend, now)) continue;
      auto gauge_metric = labelled({{"backend", backend.name}});
      gauge_metric.gauge.value = gauges[i].value(backend);
      gauge_families[i].metric.push_back(std::move(gauge_metric));
    }
  }
  out.push_back(std::move(ejections));
  for (auto& gauge_family : gauge_families) out.push_back(std::move(gauge_family));

  auto queued = family("llmux_route_queued_requests",
                       "Requests waiting in a route's queue (every backend at max_inflight)",
                       MetricType::Gauge);
  for (const auto& route : fleet.routes) {
    auto metric = labelled({{"route", route.cfg->name}});
    metric.gauge.value = route.queue->depth();
    queued.metric.push_back(std::move(metric));
  }
  out.push_back(std::move(queued));
  render_tenant_metrics(state, fleet, out);  // by tenant and priority class

  // ---- histograms ----
  struct HistSpec {
    const char* name;
    const char* help;
    HistKind kind;
    const std::array<metrics::Histogram, metrics::kMaxNames> metrics::WorkerMetrics::*per_backend;
  };
  const std::vector<HistSpec> hists = {
      {"llmux_time_to_first_token_seconds",
       "Request received -> its first token sent to the client (streams), by backend",
       HistKind::ttft, &metrics::WorkerMetrics::ttft},
      {"llmux_inter_token_latency_seconds",
       "Time between tokens as sent to the client (streams), by backend", HistKind::itl,
       &metrics::WorkerMetrics::itl},
      {"llmux_request_duration_seconds", "Request received -> its response ended, by backend",
       HistKind::e2e, &metrics::WorkerMetrics::e2e},
  };
  for (const auto& spec : hists) {
    auto fam = family(spec.name, spec.help, MetricType::Histogram);
    for (int id = 1; id < names.backends.size(); ++id) {
      const Summed summed =
          sum(state, [&](const metrics::WorkerMetrics& metrics) -> const metrics::Histogram& {
            return (metrics.*spec.per_backend)[static_cast<std::size_t>(id)];
          });
      if (summed.count == 0) continue;
      auto metric = labelled({{"backend", std::string(names.backends.name(id))}});
      metric.histogram = to_prometheus(summed, metrics::bounds(spec.kind));
      fam.metric.push_back(std::move(metric));
    }
    out.push_back(std::move(fam));
  }
  auto overhead = [&](const char* name, const char* help, HistKind kind,
                      const metrics::Histogram metrics::WorkerMetrics::*which) {
    auto fam = family(name, help, MetricType::Histogram);
    ClientMetric metric;
    metric.histogram =
        to_prometheus(sum(state,
                          [&](const metrics::WorkerMetrics& metrics) -> const metrics::Histogram& {
                            return metrics.*which;
                          }),
                      metrics::bounds(kind));
    fam.metric.push_back(std::move(metric));
    out.push_back(std::move(fam));
  };
  overhead("llmux_gateway_request_overhead_seconds",
           "The gateway's own time before a request goes upstream: received -> sent (queue "
           "waits and response-owner lookups left out)",
           HistKind::request_overhead, &metrics::WorkerMetrics::request_overhead);
  overhead("llmux_gateway_relay_overhead_seconds",
           "The gateway's own time relaying: upstream bytes received -> sent to the client",
           HistKind::relay_overhead, &metrics::WorkerMetrics::relay_overhead);

  // ---- process ----
  gauge(out, "llmux_client_connections", "Client connections open", state.connections.load());
  gauge(out, "llmux_active_requests", "Requests in progress", state.active.load());
  gauge(out, "llmux_response_store_entries", "Response ids the affinity table holds (locally)",
        state.responses ? static_cast<double>(state.responses->size()) : 0.0);
  if (state.redis) {
    // state: redis://...: whether the shared state is reachable, and what waits for it.
    gauge(out, "llmux_state_redis_up", "1 while the shared state (Redis) answers, else 0",
          state.redis->up() ? 1.0 : 0.0);
    gauge(out, "llmux_state_pending_writes",
          "Response ids learned while Redis was away, waiting to be written back",
          static_cast<double>(state.responses_redis->pending()));
    if (state.quota_redis)
      gauge(out, "llmux_state_quota_inflight",
            "Quota increments and reads sent to Redis and not answered yet",
            static_cast<double>(state.quota_redis->stats().inflight));
    const auto redis_counters = state.redis->counters();
    auto failed = family("llmux_state_redis_failures_total",
                         "Redis commands that failed, by how (error, timeout, refused: away)",
                         MetricType::Counter);
    for (const auto& [how, n] :
         {std::pair{"error", redis_counters.errors}, std::pair{"timeout", redis_counters.timeouts},
          std::pair{"refused", redis_counters.refused}}) {
      auto metric = labelled({{"how", how}});
      metric.counter.value = static_cast<double>(n);
      failed.metric.push_back(std::move(metric));
    }
    out.push_back(std::move(failed));
  }
  gauge(out, "llmux_config_generation", "Configuration generation in use (1 at start)",
        static_cast<double>(fleet.generation));
  gauge(out, "llmux_start_time_seconds", "When the gateway started (Unix time)",
        static_cast<double>(state.metrics.start_unix_ms) / 1e3);
  auto info = family("llmux_build_info", "The gateway's version", MetricType::Gauge);
  auto info_metric = labelled({{"version", LLMUX_VERSION}});
  info_metric.gauge.value = 1;
  info.metric.push_back(std::move(info_metric));
  out.push_back(std::move(info));
  std::uint64_t dropped = 0;
  state.metrics.each(
      [&](const metrics::WorkerMetrics& metrics) { dropped += metrics.counters.dropped(); });
  auto dropped_family = family(
      "llmux_metrics_dropped_total",
      "Counts lost because a worker's counter table was full (should stay 0)", MetricType::Counter);
  ClientMetric dropped_metric;
  dropped_metric.counter.value = static_cast<double>(dropped);
  dropped_family.metric.push_back(std::move(dropped_metric));
  out.push_back(std::move(dropped_family));

  return prometheus::TextSerializer().Serialize(out);
}

}  // namespace llmux::gateway
