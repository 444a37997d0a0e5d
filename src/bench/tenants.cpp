// SPDX-License-Identifier: Apache-2.0
#include "bench/tenants.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "bench/workload.hpp"

namespace llmux::bench {

ClientGroup parse_tenant(std::string_view text) {
  const std::vector<std::string_view> parts = split_fields(text);
  if (parts.size() < 2 || parts.size() > 4)
    throw std::invalid_argument(fmt::format(
        "--tenant '{}': expected NAME:CLIENTS[:PRIORITY[:WORKLOAD]], e.g. alice:4:interactive "
        "or nightly:32:batch:64/1024",
        text));
  ClientGroup tenant;
  tenant.kind = ClientGroup::Kind::tenant;
  tenant.name = std::string(parts[0]);
  if (tenant.name.empty())
    throw std::invalid_argument(fmt::format("--tenant '{}': the name is empty", text));
  tenant.clients = parse_count(parts[1], "CLIENTS", "--tenant", text);
  if (parts.size() > 2) tenant.priority = std::string(parts[2]);
  if (parts.size() > 3)
    std::tie(tenant.input, tenant.output) = parse_lengths(parts[3], "--tenant", text);
  return tenant;
}

double jain_index(std::span<const double> rates) {
  double sum = 0, squares = 0;
  for (double rate : rates) {
    sum += rate;
    squares += rate * rate;
  }
  if (rates.empty() || squares <= 0) return 1.0;
  return sum * sum / (static_cast<double>(rates.size()) * squares);
}

Table tenant_table(std::span<const GroupFigures> figures) {
  Table table({"Tenant", "Class", "Clients", "OK", "Failed", "TTFT p50 (ms)", "TTFT p99 (ms)",
               "E2E p50 (s)", "E2E p99 (s)", "Output tok/s"});
  std::vector<double> rates;
  for (const auto& tenant : figures) {
    const Aggregate& agg = tenant.agg;
    rates.push_back(agg.output_tok_s);
    table.add_row({tenant.name, tenant.priority.empty() ? "(none sent)" : tenant.priority,
                   std::to_string(tenant.clients), std::to_string(agg.ok),
                   std::to_string(agg.failed), fmt::format("{:.1f}", agg.ttft.p50 * 1e3),
                   fmt::format("{:.1f}", agg.ttft.p99 * 1e3), fmt::format("{:.3f}", agg.e2e.p50),
                   fmt::format("{:.3f}", agg.e2e.p99), fmt::format("{:.1f}", agg.output_tok_s)});
  }
  table.add_row({"Jain's index over the token rates", "", "", "", "", "", "", "", "",
                 fmt::format("{:.3f}", jain_index(rates))});
  return table;
}

boost::json::object tenants_json(std::span<const GroupFigures> figures) {
  boost::json::object out;
  boost::json::array tenants;
  std::vector<double> rates;
  for (const auto& tenant : figures) {
    const Aggregate& agg = tenant.agg;
    rates.push_back(agg.output_tok_s);
    tenants.push_back({{"name", tenant.name},
                       {"priority", tenant.priority},
                       {"clients", tenant.clients},
                       {"ok", agg.ok},
                       {"failed", agg.failed},
                       {"rejected", agg.rejected},
                       {"ttft_p50_s", agg.ttft.p50},
                       {"ttft_p99_s", agg.ttft.p99},
                       {"e2e_p50_s", agg.e2e.p50},
                       {"e2e_p99_s", agg.e2e.p99},
                       {"output_tokens", agg.output_tokens},
                       {"output_tok_s", agg.output_tok_s}});
  }
  out["tenants"] = std::move(tenants);
  out["jain_index"] = jain_index(rates);
  return out;
}

}  // namespace llmux::bench
