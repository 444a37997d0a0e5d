// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics_sum.hpp"

#include "upstream/health.hpp"

namespace llmux::gateway {

using metrics::Family;

std::map<std::uint64_t, std::uint64_t> counters(const GatewayState& state) {
  std::map<std::uint64_t, std::uint64_t> out;
  state.metrics.each([&](const metrics::WorkerMetrics& metrics) {
    metrics.counters.each([&](std::uint64_t key, std::uint64_t value) { out[key] += value; });
  });
  return out;
}

metrics::Family family_of(std::uint64_t key) {
  return static_cast<metrics::Family>(key >> 48);
}
int key_part(std::uint64_t key, int part_index) {
  return static_cast<int>((key >> (32 - 16 * part_index)) & 0xffff);
}

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

BackendTotals totals(const std::map<std::uint64_t, std::uint64_t>& all, int metric_id) {
  BackendTotals result;
  for (const auto& [key, value] : all) {
    switch (family_of(key)) {
      case Family::requests:
        if (key_part(key, 1) != metric_id) break;
        result.requests += value;
        if (key_part(key, 2) >= 500) result.errors += value;
        break;
      case Family::attempt_failures:
        if (key_part(key, 0) == metric_id) result.errors += value;
        break;
      case Family::prompt_tokens:
        if (key_part(key, 0) == metric_id) result.prompt_tokens += value;
        break;
      case Family::cached_tokens:
        if (key_part(key, 0) == metric_id) result.cached_tokens += value;
        break;
      case Family::generation_tokens:
        if (key_part(key, 0) == metric_id) result.generation_tokens += value;
        break;
      case Family::migrations:
        if (key_part(key, 1) == metric_id) result.migrated_out += value;
        if ((key_part(key, 2) & 0xfff) == metric_id) result.migrated_in += value;
        break;
      default:
        break;
    }
  }
  return result;
}

BackendTotals backend_totals(const GatewayState& state, int metric_id) {
  return totals(counters(state), metric_id);
}

}  // namespace llmux::gateway
