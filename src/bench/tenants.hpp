// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux bench run --tenant NAME:CLIENTS[:PRIORITY[:WORKLOAD]]`: several tenants sharing one
// gateway at once, each a closed loop of its own clients sending `X-Llmux-Tenant: NAME` (and
// `X-Llmux-Priority: PRIORITY`) with its own workload (IN/OUT: prompt tokens and max_tokens);
// then each tenant's TTFT, E2E and token rate, and Jain's fairness index over the token rates:
// (Σx)² / (n·Σx²), 1 when every tenant got the same rate, 1/n when one got everything.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "bench/commands.hpp"
#include "bench/driver.hpp"
#include "bench/report.hpp"

namespace llmux::bench {

/// Parses NAME:CLIENTS[:PRIORITY[:WORKLOAD]] (WORKLOAD: IN/OUT tokens); throws
/// std::invalid_argument naming what is wrong.
TenantLoad parse_tenant(std::string_view text);

/// One level with every tenant at once (one thread each), records tagged with their tenant,
/// merged in start order.
RunResult run_tenants(const RunCommand& command, const RunOptions& base_options,
                      const LoadSpec& spec);

/// Jain's index of `rates` (1 for none).
double jain_index(std::span<const double> rates);

/// Per tenant: clients, class, requests ok/failed, TTFT and E2E p50/p99, output tok/s; and the
/// index over the token rates.
struct TenantFigures {
  std::string name, priority;
  std::size_t clients = 0;
  Aggregate agg;
};
std::vector<TenantFigures> tenant_figures(const RunCommand& command, const RunResult& run,
                                          const AggregateOptions& options);
Table tenant_table(std::span<const TenantFigures> figures);
boost::json::object tenants_json(std::span<const TenantFigures> figures);

}  // namespace llmux::bench
