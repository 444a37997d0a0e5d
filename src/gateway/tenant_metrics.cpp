// SPDX-License-Identifier: Apache-2.0
#include "gateway/tenant_metrics.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "gateway/metrics_sum.hpp"
#include "gateway/sharing.hpp"

namespace llmux::gateway {

namespace {

using metrics::Family;

/// The (tenant, class) label ids of a classified request; nullopt before it is.
std::optional<std::pair<int, int>> label_ids(const Fleet& fleet, const AccessRecord& rec) {
  if (rec.priority < 0 || rec.tenant.empty()) return std::nullopt;
  auto& names = metrics::names();
  return std::pair{names.tenants.id(rec.tenant), names.classes.id(priority_name(fleet, rec))};
}

/// The upper bound (seconds) of the bucket holding quantile `q` of `summed`.
double quantile(const Summed& summed, const metrics::Bounds& bounds, double q) {
  if (summed.count == 0) return 0;
  const auto wanted = static_cast<std::uint64_t>(q * static_cast<double>(summed.count) + 0.5);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds.upper_ns.size(); ++i) {
    cumulative += summed.buckets[i];
    if (cumulative >= std::max<std::uint64_t>(wanted, 1))
      return static_cast<double>(bounds.upper_ns[i]) / 1e9;
  }
  return std::numeric_limits<double>::infinity();
}

struct Pair {
  int tenant = 0, priority_class = 0;
  bool operator<(const Pair& other) const {
    return std::tie(tenant, priority_class) < std::tie(other.tenant, other.priority_class);
  }
};

struct PairTotals {
  std::uint64_t started = 0, finished = 0, prompt_tokens = 0, completion_tokens = 0;
  double queued = 0;
  Summed queue_wait;
};

std::map<Pair, PairTotals> totals_by_pair(const GatewayState& state, const Fleet& fleet) {
  std::map<Pair, PairTotals> out;
  for (const auto& [key, value] : counters(state)) {
    const Family family = family_of(key);
    if (family != Family::tenant_started && family != Family::tenant_finished &&
        family != Family::tenant_tokens)
      continue;
    PairTotals& totals = out[{key_part(key, 0), key_part(key, 1)}];
    if (family == Family::tenant_started) totals.started += value;
    if (family == Family::tenant_finished) totals.finished += value;
    if (family == Family::tenant_tokens) {
      if (static_cast<metrics::TokenKind>(key_part(key, 2)) == metrics::TokenKind::prompt)
        totals.prompt_tokens += value;
      else
        totals.completion_tokens += value;
    }
  }
  auto& names = metrics::names();
  for (const auto& route : fleet.routes)
    route.queue->each_waiting([&](std::string_view tenant, int priority_class, int waiting) {
      const auto& classes = fleet.cfg.priorities.classes;
      const std::string_view class_name =
          priority_class < static_cast<int>(classes.size())
              ? std::string_view(classes[static_cast<std::size_t>(priority_class)].name)
              : std::string_view();
      out[{names.tenants.find(tenant), names.classes.find(class_name)}].queued += waiting;
    });
  for (auto& [pair, totals] : out)
    state.metrics.each([&](const metrics::WorkerMetrics& worker_metrics) {
      if (const auto* histogram = worker_metrics.queue_wait.find(pair.tenant, pair.priority_class))
        histogram->add_to(totals.queue_wait.buckets, totals.queue_wait.count,
                          totals.queue_wait.sum_ns);
    });
  return out;
}

double running(const PairTotals& totals) {
  const double active = static_cast<double>(totals.started) - static_cast<double>(totals.finished);
  return std::max(0.0, active - totals.queued);
}

}  // namespace

void count_tenant_start(const Fleet& fleet, metrics::WorkerMetrics& worker_metrics,
                        const AccessRecord& rec) {
  if (const auto ids = label_ids(fleet, rec))
    worker_metrics.count(Family::tenant_started, ids->first, ids->second);
}

void count_tenant_end(const Fleet& fleet, metrics::WorkerMetrics& worker_metrics,
                      const AccessRecord& rec) {
  const auto ids = label_ids(fleet, rec);
  if (!ids) return;
  const auto [tenant, priority_class] = *ids;
  worker_metrics.count(Family::tenant_finished, tenant, priority_class);
  if (rec.prompt_tokens && *rec.prompt_tokens > 0)
    worker_metrics.count(Family::tenant_tokens, tenant, priority_class,
                         static_cast<int>(metrics::TokenKind::prompt),
                         static_cast<std::uint64_t>(*rec.prompt_tokens));
  if (rec.completion_tokens && *rec.completion_tokens > 0)
    worker_metrics.count(Family::tenant_tokens, tenant, priority_class,
                         static_cast<int>(metrics::TokenKind::completion),
                         static_cast<std::uint64_t>(*rec.completion_tokens));
  worker_metrics.queue_wait.at(tenant, priority_class)
      .record(metrics::bounds(metrics::HistKind::queue_wait),
              rec.queue_ms > 0 ? static_cast<std::int64_t>(rec.queue_ms * 1e6) : 0);
}

std::vector<TenantRow> tenant_rows(const GatewayState& state, const Fleet& fleet) {
  std::vector<TenantRow> rows;
  auto& names = metrics::names();
  const auto& bounds = metrics::bounds(metrics::HistKind::queue_wait);
  for (const auto& [pair, totals] : totals_by_pair(state, fleet)) {
    TenantRow row;
    row.tenant = names.tenants.name(pair.tenant);
    row.priority = names.classes.name(pair.priority_class);
    row.queued = totals.queued;
    row.running = running(totals);
    row.requests = totals.started;
    row.prompt_tokens = totals.prompt_tokens;
    row.completion_tokens = totals.completion_tokens;
    row.queue_wait_p50_s = quantile(totals.queue_wait, bounds, 0.5);
    row.queue_wait_p99_s = quantile(totals.queue_wait, bounds, 0.99);
    rows.push_back(std::move(row));
  }
  return rows;
}

void render_tenant_metrics(const GatewayState& state, const Fleet& fleet,
                           std::vector<prometheus::MetricFamily>& out) {
  using prometheus::ClientMetric;
  using prometheus::MetricFamily;
  using prometheus::MetricType;
  auto family = [](const char* name, const char* help, MetricType type) {
    MetricFamily metric_family;
    metric_family.name = name;
    metric_family.help = help;
    metric_family.type = type;
    return metric_family;
  };
  MetricFamily requests =
      family("llmux_tenant_requests_total", "Requests begun, by tenant and priority class",
             MetricType::Counter);
  MetricFamily queued = family("llmux_tenant_queued_requests",
                               "Requests waiting in a route's queue, by tenant and priority class",
                               MetricType::Gauge);
  MetricFamily running_now = family(
      "llmux_tenant_running_requests",
      "Requests begun and not waiting nor ended, by tenant and priority class", MetricType::Gauge);
  MetricFamily tokens = family("llmux_tenant_tokens_total",
                               "Tokens of the answers (the backends' usage), by tenant, priority "
                               "class and kind (prompt, completion)",
                               MetricType::Counter);
  MetricFamily wait = family("llmux_tenant_queue_wait_seconds",
                             "Time a request waited in its route's queue (0: it did not), by "
                             "tenant and priority class",
                             MetricType::Histogram);
  auto& names = metrics::names();
  const auto& bounds = metrics::bounds(metrics::HistKind::queue_wait);
  for (const auto& [pair, totals] : totals_by_pair(state, fleet)) {
    const std::vector<ClientMetric::Label> labels{
        {"tenant", std::string(names.tenants.name(pair.tenant))},
        {"class", std::string(names.classes.name(pair.priority_class))}};
    ClientMetric metric;
    metric.label = labels;
    metric.counter.value = static_cast<double>(totals.started);
    requests.metric.push_back(metric);
    metric.gauge.value = totals.queued;
    queued.metric.push_back(metric);
    metric.gauge.value = running(totals);
    running_now.metric.push_back(metric);
    for (const auto& [kind, count] : {std::pair{"prompt", totals.prompt_tokens},
                                      std::pair{"completion", totals.completion_tokens}}) {
      ClientMetric token_metric;
      token_metric.label = labels;
      token_metric.label.push_back({"kind", kind});
      token_metric.counter.value = static_cast<double>(count);
      tokens.metric.push_back(std::move(token_metric));
    }
    if (totals.queue_wait.count == 0) continue;
    ClientMetric wait_metric;
    wait_metric.label = labels;
    wait_metric.histogram.sample_count = totals.queue_wait.count;
    wait_metric.histogram.sample_sum = static_cast<double>(totals.queue_wait.sum_ns) / 1e9;
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bounds.upper_ns.size(); ++i) {
      cumulative += totals.queue_wait.buckets[i];
      wait_metric.histogram.bucket.push_back(
          {cumulative, static_cast<double>(bounds.upper_ns[i]) / 1e9});
    }
    wait_metric.histogram.bucket.push_back(
        {totals.queue_wait.count, std::numeric_limits<double>::infinity()});
    wait.metric.push_back(std::move(wait_metric));
  }
  for (auto* metric_family : {&requests, &queued, &running_now, &tokens, &wait})
    out.push_back(std::move(*metric_family));
}

}  // namespace llmux::gateway
