// SPDX-License-Identifier: Apache-2.0
// bench compare's gateway analysis: a gateway path against the direct path, keeping scale-out
// (a burst spread over two machines) apart from the gateway's own overhead.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"

namespace llmux::bench::detail {

std::string backends_cell(const std::map<std::string, std::size_t>& b) {
  std::string s;
  for (const auto& [name, n] : b) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", name, n);
  return s.empty() ? "unknown" : s;
}

namespace {

const Measured* at(const PathMeasured& p, std::size_t level) {
  if (level == 0) return &p.serial;
  const auto it = p.levels.find(level);
  return it == p.levels.end() ? nullptr : &it->second;
}

}  // namespace

GatewayRow gateway_row(const std::string& path, const std::string& baseline,
                       const PathMeasured& gateway, const PathMeasured& direct, std::size_t level) {
  GatewayRow row;
  row.path = path;
  row.baseline = baseline;
  row.level = level;
  row.tok_s_ratio = row.added_p50_ms = row.added_p99_ms = row.per_machine = NAN;
  const Measured* g = at(gateway, level);
  const Measured* d = at(direct, level);
  if (!g) return row;
  std::size_t share = 0;
  for (const Record& r : g->records) {
    if (r.warmup || r.t.backend.empty()) continue;
    share = std::max(share, ++row.backends[r.t.backend]);
  }
  if (d) row.tok_s_ratio = g->mean / d->mean;
  row.scale_out = level > 0 && row.backends.size() > 1;
  const Measured* lat = d;
  if (row.scale_out) {
    lat = at(direct, share);
    const double machines = static_cast<double>(row.backends.size());
    if (lat) row.per_machine = g->mean / (machines * lat->mean);
    row.reading = fmt::format(
        "scale-out, not overhead: the gateway spread the {} requests over {} machines ({}) while "
        "direct sends all to one",
        level, row.backends.size(), backends_cell(row.backends));
    if (lat && std::isfinite(row.per_machine))
      row.reading += fmt::format(
          "; per machine {:.1f}% of direct N={}, whose latency the added latency is measured "
          "against",
          row.per_machine * 100, share);
    else
      row.reading +=
          fmt::format("; no direct level of N={} to measure the added latency against", share);
  } else if (level == 0) {
    row.reading = "overhead: one request at a time, the same work as direct";
  } else if (row.backends.size() == 1) {
    row.reading = fmt::format("overhead: all {} on one machine, as direct", level);
  } else {
    row.reading =
        "overhead if the gateway used one machine (its responses name no backend: no "
        "X-Llmux-Backend)";
  }
  if (lat && lat->agg.e2e.count && g->agg.e2e.count) {
    row.latency_level = lat == d ? level : share;
    row.added_p50_ms = (g->agg.e2e.p50 - lat->agg.e2e.p50) * 1e3;
    row.added_p99_ms = (g->agg.e2e.p99 - lat->agg.e2e.p99) * 1e3;
  }
  return row;
}

}  // namespace llmux::bench::detail
