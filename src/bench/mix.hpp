// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux bench run --mix NAME:CLIENTS:WORKLOAD` and `--workload agent-mix`: a workload mix, classes
// of closed-loop clients running at once (bench/groups.hpp runs them), each drawing its prompt
// and output lengths from bounds of its own (WORKLOAD IN/OUT, each MIN-MAX or one length N); then
// each class's TTFT, ITL and E2E: the ITL of short chats decoding beside long agent prompts is
// the stall those prompts' prefills cause them (issue 40), their TTFT what waiting behind them
// costs.
//
// Thread safety: pure functions.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "bench/commands.hpp"
#include "bench/groups.hpp"
#include "bench/report.hpp"

namespace llmux::bench {

/// Parses NAME:CLIENTS:WORKLOAD (WORKLOAD: IN/OUT, each N or MIN-MAX) into a ClientGroup of kind
/// mix; throws std::invalid_argument naming what is wrong.
ClientGroup parse_mix(std::string_view text);

/// The named workloads of `--workload`, each as the --mix classes it stands for.
struct NamedWorkload {
  std::string_view name, description;
  std::vector<std::string_view> classes;  ///< --mix texts
};
/// agent-mix: 4 agent clients (prompts 5,000-60,000 tokens, 200-2,000 out: Codex-style histories)
/// beside 16 short-chat clients (100-500 tokens, 50-300 out).
const std::vector<NamedWorkload>& named_workloads();
/// The classes of the named workload; throws std::invalid_argument listing the names otherwise.
std::vector<ClientGroup> workload_classes(std::string_view name);

/// Per class: clients, its bounds, requests ok/failed, mean prompt tokens (usage), TTFT, ITL and
/// E2E percentiles, output tok/s over the run's window; a last row for all of them (`all`: the
/// level's aggregate).
Table mix_table(std::span<const GroupFigures> classes, const Aggregate& all);
/// run.json's "mix": {"classes": [...], "all": {...}}, the same figures in seconds.
boost::json::object mix_json(std::span<const GroupFigures> classes, const Aggregate& all);

}  // namespace llmux::bench
