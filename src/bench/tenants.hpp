// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux bench run --tenant NAME:CLIENTS[:PRIORITY[:WORKLOAD]]`: several tenants sharing one
// gateway at once, each a closed loop of its own clients (bench/groups.hpp runs them) sending
// `X-Llmux-Tenant: NAME` (and `X-Llmux-Priority: PRIORITY`) with its own workload (IN/OUT: prompt
// tokens and max_tokens, each N or MIN-MAX); then each tenant's TTFT, E2E and token rate, and
// Jain's fairness index over the token rates:
// (Σx)² / (n·Σx²), 1 when every tenant got the same rate, 1/n when one got everything.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "bench/commands.hpp"
#include "bench/groups.hpp"
#include "bench/report.hpp"

namespace llmux::bench {

/// Parses NAME:CLIENTS[:PRIORITY[:WORKLOAD]] (WORKLOAD: IN/OUT tokens, each N or MIN-MAX) into a
/// ClientGroup of kind tenant (run by bench/groups.hpp); throws std::invalid_argument naming what
/// is wrong.
ClientGroup parse_tenant(std::string_view text);

/// Jain's index of `rates` (1 for none).
double jain_index(std::span<const double> rates);

/// Per tenant: clients, class, requests ok/failed, TTFT and E2E p50/p99, output tok/s; and the
/// index over the token rates.
Table tenant_table(std::span<const GroupFigures> figures);
boost::json::object tenants_json(std::span<const GroupFigures> figures);

}  // namespace llmux::bench
