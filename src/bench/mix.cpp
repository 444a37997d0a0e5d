// SPDX-License-Identifier: Apache-2.0
#include "bench/mix.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <boost/json.hpp>

namespace llmux::bench {
namespace json = boost::json;

ClientGroup parse_mix(std::string_view text) {
  const std::vector<std::string_view> parts = split_fields(text);
  if (parts.size() != 3)
    throw std::invalid_argument(
        fmt::format("--mix '{}': expected NAME:CLIENTS:IN/OUT (each N or MIN-MAX tokens), e.g. "
                    "agent:4:5000-60000/200-2000",
                    text));
  ClientGroup mix_class;
  mix_class.kind = ClientGroup::Kind::mix;
  mix_class.name = std::string(parts[0]);
  if (mix_class.name.empty())
    throw std::invalid_argument(fmt::format("--mix '{}': the name is empty", text));
  mix_class.clients = parse_count(parts[1], "CLIENTS", "--mix", text);
  std::tie(mix_class.input, mix_class.output) = parse_lengths(parts[2], "--mix", text);
  return mix_class;
}

const std::vector<NamedWorkload>& named_workloads() {
  static const std::vector<NamedWorkload> workloads{
      {"agent-mix",
       "4 agent clients with long prompts (5,000-60,000 tokens, as a coding agent's growing "
       "history; 200-2,000 out) beside 16 short chats (100-500 tokens, 50-300 out)",
       {"agent:4:5000-60000/200-2000", "chat:16:100-500/50-300"}},
  };
  return workloads;
}

std::vector<ClientGroup> workload_classes(std::string_view name) {
  std::string names;
  for (const NamedWorkload& workload : named_workloads()) {
    if (workload.name == name) {
      std::vector<ClientGroup> classes;
      for (std::string_view text : workload.classes) classes.push_back(parse_mix(text));
      return classes;
    }
    names += fmt::format("{}{}", names.empty() ? "" : ", ", workload.name);
  }
  throw std::invalid_argument(fmt::format("--workload '{}': not one of {}", name, names));
}

namespace {

double mean_prompt_tokens(const Aggregate& agg) {
  return agg.ok ? static_cast<double>(agg.prompt_tokens) / static_cast<double>(agg.ok)
                : std::numeric_limits<double>::quiet_NaN();
}

/// The figures of one row: from TTFT p50 to the token rate.
std::vector<std::string> figure_cells(const Aggregate& agg) {
  return {fmt_num(mean_prompt_tokens(agg), 0),
          fmt_num(agg.ttft.p50 * 1e3),
          fmt_num(agg.ttft.p99 * 1e3),
          fmt_num(agg.itl.p50 * 1e3, 2),
          fmt_num(agg.itl.p99 * 1e3, 2),
          fmt_num(agg.itl.max * 1e3, 1),
          fmt_num(agg.e2e.p50, 3),
          fmt_num(agg.e2e.p99, 3),
          fmt_num(agg.output_tok_s)};
}

json::object figures_json(const Aggregate& agg) {
  return {{"ok", agg.ok},
          {"failed", agg.failed},
          {"rejected", agg.rejected},
          {"prompt_tokens", agg.prompt_tokens},
          {"prompt_tokens_mean", json_number(mean_prompt_tokens(agg))},
          {"ttft_p50_s", json_number(agg.ttft.p50)},
          {"ttft_p99_s", json_number(agg.ttft.p99)},
          {"itl_p50_s", json_number(agg.itl.p50)},
          {"itl_p99_s", json_number(agg.itl.p99)},
          {"itl_max_s", json_number(agg.itl.max)},
          {"tpot_p50_s", json_number(agg.tpot.p50)},
          {"e2e_p50_s", json_number(agg.e2e.p50)},
          {"e2e_p99_s", json_number(agg.e2e.p99)},
          {"output_tokens", agg.output_tokens},
          {"output_tok_s", json_number(agg.output_tok_s)}};
}

}  // namespace

Table mix_table(std::span<const GroupFigures> classes, const Aggregate& all) {
  Table table({"Mix class", "Clients", "Prompt tokens", "max_tokens", "OK", "Failed",
               "Mean prompt tokens", "TTFT p50 (ms)", "TTFT p99 (ms)", "ITL p50 (ms)",
               "ITL p99 (ms)", "ITL max (ms)", "E2E p50 (s)", "E2E p99 (s)", "Output tok/s"});
  std::size_t clients = 0;
  for (const GroupFigures& mix_class : classes) {
    clients += mix_class.clients;
    std::vector<std::string> row{mix_class.name,
                                 std::to_string(mix_class.clients),
                                 to_string(mix_class.input),
                                 to_string(mix_class.output),
                                 std::to_string(mix_class.agg.ok),
                                 std::to_string(mix_class.agg.failed)};
    for (auto& cell : figure_cells(mix_class.agg)) row.push_back(std::move(cell));
    table.add_row(std::move(row));
  }
  std::vector<std::string> row{"All classes",          std::to_string(clients),   "", "",
                               std::to_string(all.ok), std::to_string(all.failed)};
  for (auto& cell : figure_cells(all)) row.push_back(std::move(cell));
  table.add_row(std::move(row));
  return table;
}

json::object mix_json(std::span<const GroupFigures> classes, const Aggregate& all) {
  json::array rows;
  for (const GroupFigures& mix_class : classes) {
    json::object row = figures_json(mix_class.agg);
    row["name"] = mix_class.name;
    row["clients"] = mix_class.clients;
    row["input_min"] = mix_class.input.min;
    row["input_max"] = mix_class.input.max;
    row["output_min"] = mix_class.output.min;
    row["output_max"] = mix_class.output.max;
    rows.push_back(std::move(row));
  }
  json::object out;
  out["classes"] = std::move(rows);
  out["all"] = figures_json(all);
  out["window_s"] = json_number(all.wall_s);
  return out;
}

}  // namespace llmux::bench
