// SPDX-License-Identifier: Apache-2.0
#pragma once
// Every worker's metrics added up, for a scrape (gateway/metrics_render.hpp: Prometheus text,
// gateway/dashboard_data.cpp: the dashboard's JSON) and the admin API: counters by key,
// histograms, a backend's totals, and the state name the dashboard and the API show.
#include <array>
#include <cstdint>
#include <map>
#include <string_view>

#include "gateway/metrics.hpp"
#include "gateway/worker.hpp"
#include "upstream/backend.hpp"

namespace llmux::gateway {

/// Every worker's counters, added up by key.
std::map<std::uint64_t, std::uint64_t> counters(const GatewayState& state);
/// The family of a counter's key, and its labels' parts (0, 1, 2: route or backend, backend or
/// model, status or kind, by family).
metrics::Family family_of(std::uint64_t key);
int key_part(std::uint64_t key, int part_index);

/// One histogram over every worker.
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

/// A backend's counters since start, over every worker (by its metric id).
struct BackendTotals {
  std::uint64_t requests = 0, errors = 0, prompt_tokens = 0, cached_tokens = 0,
                generation_tokens = 0;
  // Streams cut here that went on elsewhere, and streams continued here (gateway/migration.hpp).
  std::uint64_t migrated_out = 0, migrated_in = 0;
};
BackendTotals backend_totals(const GatewayState& state, int metric_id);
/// The same from counters already added up.
BackendTotals totals(const std::map<std::uint64_t, std::uint64_t>& all, int metric_id);

/// The dashboard's and the API's name for a backend's state.
std::string_view dashboard_state(const upstream::Backend& backend, std::int64_t now);
/// True while the load the backend last reported still counts.
bool reported_fresh(const upstream::Backend& backend, std::int64_t now);

}  // namespace llmux::gateway
