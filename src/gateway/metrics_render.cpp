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
    metrics.counters.each([&](std::uint64_t k, std::uint64_t v) { out[k] += v; });
  });
  return out;
}

Family family_of(std::uint64_t key) {
  return static_cast<Family>(key >> 48);
}
int part(std::uint64_t key, int i) {
  return static_cast<int>((key >> (32 - 16 * i)) & 0xffff);
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
  ClientMetric m;
  m.label = std::move(labels);
  return m;
}

MetricFamily family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void gauge(std::vector<MetricFamily>& out, std::string name, std::string help, double value) {
  auto f = family(std::move(name), std::move(help), MetricType::Gauge);
  ClientMetric m;
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
  out.push_back(std::move(f));
}

/// The dashboard's and the API's name for a backend's state.
std::string_view dashboard_state(const upstream::Backend& backend, std::int64_t now) {
  if (backend.draining.load(std::memory_order_relaxed)) return "draining";
  const std::string_view st = upstream::state_name(backend, now);
  if (st == "unhealthy") return "down";
  if (st == "ejected" || st == "stalled") return "ejected";
  return "up";
}

bool reported_fresh(const upstream::Backend& backend, std::int64_t now) {
  return now < backend.observations.reported.until_ns.load(std::memory_order_relaxed);
}

BackendTotals totals(const std::map<std::uint64_t, std::uint64_t>& all, int id) {
  BackendTotals t;
  for (const auto& [k, v] : all) {
    switch (family_of(k)) {
      case Family::requests:
        if (part(k, 1) != id) break;
        t.requests += v;
        if (part(k, 2) >= 500) t.errors += v;
        break;
      case Family::attempt_failures:
        if (part(k, 0) == id) t.errors += v;
        break;
      case Family::prompt_tokens:
        if (part(k, 0) == id) t.prompt_tokens += v;
        break;
      case Family::cached_tokens:
        if (part(k, 0) == id) t.cached_tokens += v;
        break;
      case Family::generation_tokens:
        if (part(k, 0) == id) t.generation_tokens += v;
        break;
      default:
        break;
    }
  }
  return t;
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
        const std::string& l = spec.labels[i];
        const int id = part(key, static_cast<int>(i));
        std::string v;
        if (l == "route") v = names.routes.name(id);
        if (l == "backend") v = names.backends.name(id);
        if (l == "model") v = names.models.name(id);
        if (l == "code") v = std::to_string(id);
        if (l == "reason") v = upstream::to_string(static_cast<upstream::Outcome::Kind>(id));
        labels.push_back({l, std::move(v)});
      }
      auto m = labelled(std::move(labels));
      m.counter.value = static_cast<double>(value);
      fam.metric.push_back(std::move(m));
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
  for (const auto& g : gauges) gauge_families.push_back(family(g.name, g.help, MetricType::Gauge));
  for (const auto& bp : fleet.backends) {
    const auto& b = *bp;
    auto m = labelled({{"backend", b.name}});
    m.counter.value = static_cast<double>(b.ejections_total.load(std::memory_order_relaxed));
    ejections.metric.push_back(m);
    for (std::size_t i = 0; i < gauges.size(); ++i) {
      if (gauges[i].only_reported && !reported_fresh(b, now)) continue;
      auto g = labelled({{"backend", b.name}});
      g.gauge.value = gauges[i].value(b);
      gauge_families[i].metric.push_back(std::move(g));
    }
  }
  out.push_back(std::move(ejections));
  for (auto& g : gauge_families) out.push_back(std::move(g));

  auto queued = family("llmux_route_queued_requests",
                       "Requests waiting in a route's queue (every backend at max_inflight)",
                       MetricType::Gauge);
  for (const auto& r : fleet.routes) {
    auto m = labelled({{"route", r.cfg->name}});
    m.gauge.value = r.queue->depth();
    queued.metric.push_back(std::move(m));
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
  for (const auto& h : hists) {
    auto fam = family(h.name, h.help, MetricType::Histogram);
    for (int id = 1; id < names.backends.size(); ++id) {
      const Summed sm =
          sum(state, [&](const metrics::WorkerMetrics& metrics) -> const metrics::Histogram& {
            return (metrics.*h.per_backend)[static_cast<std::size_t>(id)];
          });
      if (sm.count == 0) continue;
      auto m = labelled({{"backend", std::string(names.backends.name(id))}});
      m.histogram = to_prometheus(sm, metrics::bounds(h.kind));
      fam.metric.push_back(std::move(m));
    }
    out.push_back(std::move(fam));
  }
  auto overhead = [&](const char* name, const char* help, HistKind kind,
                      const metrics::Histogram metrics::WorkerMetrics::*which) {
    auto fam = family(name, help, MetricType::Histogram);
    ClientMetric m;
    m.histogram =
        to_prometheus(sum(state,
                          [&](const metrics::WorkerMetrics& metrics) -> const metrics::Histogram& {
                            return metrics.*which;
                          }),
                      metrics::bounds(kind));
    fam.metric.push_back(std::move(m));
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
    const auto rc = state.redis->counters();
    auto failed = family("llmux_state_redis_failures_total",
                         "Redis commands that failed, by how (error, timeout, refused: away)",
                         MetricType::Counter);
    for (const auto& [how, n] : {std::pair{"error", rc.errors}, std::pair{"timeout", rc.timeouts},
                                 std::pair{"refused", rc.refused}}) {
      auto m = labelled({{"how", how}});
      m.counter.value = static_cast<double>(n);
      failed.metric.push_back(std::move(m));
    }
    out.push_back(std::move(failed));
  }
  gauge(out, "llmux_config_generation", "Configuration generation in use (1 at start)",
        static_cast<double>(fleet.generation));
  gauge(out, "llmux_start_time_seconds", "When the gateway started (Unix time)",
        static_cast<double>(state.metrics.start_unix_ms) / 1e3);
  auto info = family("llmux_build_info", "The gateway's version", MetricType::Gauge);
  auto im = labelled({{"version", LLMUX_VERSION}});
  im.gauge.value = 1;
  info.metric.push_back(std::move(im));
  out.push_back(std::move(info));
  std::uint64_t dropped = 0;
  state.metrics.each(
      [&](const metrics::WorkerMetrics& metrics) { dropped += metrics.counters.dropped(); });
  auto d = family("llmux_metrics_dropped_total",
                  "Counts lost because a worker's counter table was full (should stay 0)",
                  MetricType::Counter);
  ClientMetric dm;
  dm.counter.value = static_cast<double>(dropped);
  d.metric.push_back(std::move(dm));
  out.push_back(std::move(d));

  return prometheus::TextSerializer().Serialize(out);
}

// ---------------------------------------------------------------------------------------------

namespace {

boost::json::object hist_json(const Summed& summed, const metrics::Bounds& bounds) {
  boost::json::array le, counts;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds.upper_ns.size(); ++i) {
    cumulative += summed.buckets[i];
    le.push_back(static_cast<double>(bounds.upper_ns[i]) / 1e9);
    counts.push_back(cumulative);
  }
  le.push_back("+Inf");
  counts.push_back(summed.count);
  return {{"le", std::move(le)},
          {"counts", std::move(counts)},
          {"sum", static_cast<double>(summed.sum_ns) / 1e9},
          {"count", summed.count}};
}

}  // namespace

std::string dashboard_json(const GatewayState& state, const Fleet& fleet) {
  const std::int64_t now = mono_ns();
  const auto all = counters(state);
  boost::json::array backends;
  for (const auto& bp : fleet.backends) {
    const auto& b = *bp;
    const int id = b.metric_id;
    boost::json::object o;
    o["name"] = b.name;
    o["url"] = b.url;
    o["state"] = dashboard_state(b, now);
    o["detail"] = upstream::state_name(b, now);
    o["inflight"] = b.inflight.load(std::memory_order_relaxed);
    o["max_inflight"] = b.max_inflight.load(std::memory_order_relaxed);
    o["weight"] = b.weight.load(std::memory_order_relaxed);
    const BackendTotals t = totals(all, id);
    o["requests"] = t.requests;
    o["errors"] = t.errors;
    o["prompt_tokens"] = t.prompt_tokens;
    o["cached_tokens"] = t.cached_tokens;
    o["generation_tokens"] = t.generation_tokens;
    const auto per = [&](HistKind kind, const std::array<metrics::Histogram, metrics::kMaxNames>
                                            metrics::WorkerMetrics::*which) {
      return hist_json(sum(state,
                           [&](const metrics::WorkerMetrics& metrics) -> const metrics::Histogram& {
                             return (metrics.*which)[static_cast<std::size_t>(id)];
                           }),
                       metrics::bounds(kind));
    };
    o["ttft"] = per(HistKind::ttft, &metrics::WorkerMetrics::ttft);
    o["itl"] = per(HistKind::itl, &metrics::WorkerMetrics::itl);
    o["e2e"] = per(HistKind::e2e, &metrics::WorkerMetrics::e2e);
    if (reported_fresh(b, now))
      o["reported"] = {{"running", b.observations.reported.running.load()},
                       {"waiting", b.observations.reported.waiting.load()},
                       {"kv_usage", b.observations.reported.kv_permille.load() / 1000.0}};
    else
      o["reported"] = nullptr;
    backends.push_back(std::move(o));
  }
  boost::json::array routes;
  for (const auto& r : fleet.routes) {
    const auto& m = r.cfg->match;
    std::string match = m.methods.empty() ? "ANY" : "";
    for (std::size_t i = 0; i < m.methods.size(); ++i) match += (i ? "," : "") + m.methods[i];
    match += " ";
    match += !m.path.empty() ? m.path : !m.path_prefix.empty() ? m.path_prefix + "*" : "*";
    std::string model;
    for (std::size_t i = 0; i < m.models.size(); ++i) model += (i ? "," : "") + m.models[i];
    boost::json::array bs;
    for (const auto* b : r.backends) bs.push_back(boost::json::string(b->name));
    routes.push_back({{"name", r.cfg->name},
                      {"match", match},
                      {"model", model},
                      {"policy", r.policy->name()},
                      {"backends", std::move(bs)},
                      {"queued", r.queue->depth()}});
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
  boost::json::object gw{
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
      {"gateway", std::move(gw)},
      {"backends", std::move(backends)},
      {"routes", std::move(routes)}});
}

}  // namespace llmux::gateway
