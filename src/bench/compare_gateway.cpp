// SPDX-License-Identifier: Apache-2.0
// bench compare's gateway analysis: a gateway path against the direct path, keeping scale-out
// (a burst spread over two machines) apart from the gateway's own overhead.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/commands_internal.hpp"

namespace llmux::bench::detail {

std::string backends_cell(const std::map<std::string, std::size_t>& backends) {
  std::string cell;
  for (const auto& [name, count] : backends)
    cell += fmt::format("{}{} {}", cell.empty() ? "" : ", ", name, count);
  return cell.empty() ? "unknown" : cell;
}

namespace {

const Measured* at(const PathMeasured& path_measured, std::size_t level) {
  if (level == 0) return &path_measured.serial;
  const auto it = path_measured.levels.find(level);
  return it == path_measured.levels.end() ? nullptr : &it->second;
}

}  // namespace

GatewayRow gateway_row(const std::string& path, const std::string& baseline,
                       const PathMeasured& gateway, const PathMeasured& direct, std::size_t level) {
  GatewayRow row;
  row.path = path;
  row.baseline = baseline;
  row.level = level;
  row.tok_s_ratio = row.added_p50_ms = row.added_p99_ms = row.per_machine = NAN;
  const Measured* gateway_measured = at(gateway, level);
  const Measured* direct_measured = at(direct, level);
  if (!gateway_measured) return row;
  std::size_t share = 0;
  for (const Record& record : gateway_measured->records) {
    if (record.warmup || record.t.backend.empty()) continue;
    share = std::max(share, ++row.backends[record.t.backend]);
  }
  if (direct_measured) row.tok_s_ratio = gateway_measured->mean / direct_measured->mean;
  row.scale_out = level > 0 && row.backends.size() > 1;
  const Measured* lat = direct_measured;
  if (row.scale_out) {
    lat = at(direct, share);
    const double machines = static_cast<double>(row.backends.size());
    if (lat) row.per_machine = gateway_measured->mean / (machines * lat->mean);
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
  if (lat && lat->agg.e2e.count && gateway_measured->agg.e2e.count) {
    row.latency_level = lat == direct_measured ? level : share;
    row.added_p50_ms = (gateway_measured->agg.e2e.p50 - lat->agg.e2e.p50) * 1e3;
    row.added_p99_ms = (gateway_measured->agg.e2e.p99 - lat->agg.e2e.p99) * 1e3;
  }
  return row;
}

}  // namespace llmux::bench::detail
