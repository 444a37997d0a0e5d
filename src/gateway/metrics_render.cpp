// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics_render.hpp"

#include <chrono>
#include <map>

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <boost/json.hpp>

#include "core/clock.hpp"
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

/// Every worker's counters, added up by key.
std::map<std::uint64_t, std::uint64_t> counters(const GatewayState& state) {
  std::map<std::uint64_t, std::uint64_t> out;
  state.metrics.each([&](const metrics::WorkerMetrics& metrics) {
    metrics.counters.each([&](std::uint64_t key, std::uint64_t value) { out[key] += value; });
  });
  return out;
}

Family family_of(std::uint64_t key) {
  return static_cast<Family>(key >> 48);
}
int part(std::uint64_t key, int part_index) {
  return static_cast<int>((key >> (32 - 16 * part_index)) & 0xffff);
}

struct Summed {
  std::array<std::uint64_t, metrics::kMaxBuckets + 1> buckets{};
  std::uint64_t count = 0, sum_ns = 0;
};

/// One histogram over every worker: `pick` chooses it in a worker's metrics.
template <typename Pick>
Summed sum(const GatewayState& state, Pick pick) {
  Summed out;
  state.metrics.each([&](const metrics::WorkerMetrics& metrics) {
    pick(metrics).add_to(out.buckets, out.count, out.sum_ns);
  });
  return out;
}

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

/// The dashboard's and the API's name for a backend's state.
std::string_view dashboard_state(const upstream::Backend& backend, std::int64_t now) {
  if (backend.draining.load(std::memory_order_relaxed)) return "draining";
  const std::string_view state = upstream::state_name(backend, now);
  if (state == "unhealthy") return "down";
  if (state == "ejected" || state == "stalled") return "ejected";
  return "up";
}

bool reported_fresh(const upstream::Backend& backend, std::int64_t now) {
  return now < backend.observations.reported.until_ns.load(std::memory_order_relaxed);
}

BackendTotals totals(const std::map<std::uint64_t, std::uint64_t>& all, int id) {
  BackendTotals result;
  for (const auto& [k, v] : all) {
    switch (family_of(k)) {
      case Family::requests:
        if (part(k, 1) != id) break;
        result.requests += v;
        if (part(k, 2) >= 500) result.errors += v;
        break;
      case Family::attempt_failures:
        if (part(k, 0) == id) result.errors += v;
        break;
      case Family::prompt_tokens:
        if (part(k, 0) == id) result.prompt_tokens += v;
        break;
      case Family::cached_tokens:
        if (part(k, 0) == id) result.cached_tokens += v;
        break;
      case Family::generation_tokens:
        if (part(k, 0) == id) result.generation_tokens += v;
        break;
      default:
        break;
    }
  }
  return result;
}

}  // namespace

BackendTotals backend_totals(const GatewayState& state, int metric_id) {
  return totals(counters(state), metric_id);
}

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
  };
  for (const auto& spec : specs) {
    auto fam = family(spec.name, spec.help, MetricType::Counter);
    for (const auto& [key, value] : all) {
      if (family_of(key) != spec.fam) continue;
      std::vector<ClientMetric::Label> labels;
      for (std::size_t i = 0; i < spec.labels.size(); ++i) {
        const std::string& label_name = spec.labels[i];
        const int id = part(key, static_cast<int>(i));
        std::string label_value;
        if (label_name == "route") label_value = names.routes.name(id);
        if (label_name == "backend") label_value = names.backends.name(id);
        if (label_name == "model") label_value = names.models.name(id);
        if (label_name == "code") label_value = std::to_string(id);
        if (label_name == "reason")
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

// ---------------------------------------------------------------------------------------------

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
      {"routes", std::move(routes)}});
}

}  // namespace llmux::gateway
