// SPDX-License-Identifier: Apache-2.0
#include "bench/groups.hpp"

#include <algorithm>
#include <functional>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace llmux::bench {

std::vector<std::string_view> split_fields(std::string_view text) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return parts;
}

std::size_t parse_count(std::string_view text, std::string_view what, std::string_view option,
                        std::string_view whole) {
  std::size_t value = 0;
  for (char character : text) {
    if (character < '0' || character > '9' || value > 1'000'000)
      throw std::invalid_argument(
          fmt::format("{} '{}': {} '{}' is not a number", option, whole, what, text));
    value = value * 10 + static_cast<std::size_t>(character - '0');
  }
  if (text.empty() || value == 0)
    throw std::invalid_argument(fmt::format("{} '{}': {} must be at least 1", option, whole, what));
  return value;
}

namespace {

TokenRange parse_length(std::string_view text, std::string_view what, std::string_view option,
                        std::string_view whole) {
  const std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    const std::size_t tokens = parse_count(text, what, option, whole);
    return {tokens, tokens};
  }
  const std::string low_name = fmt::format("{}_MIN", what), high_name = fmt::format("{}_MAX", what);
  const TokenRange range{parse_count(text.substr(0, dash), low_name, option, whole),
                         parse_count(text.substr(dash + 1), high_name, option, whole)};
  if (range.min > range.max)
    throw std::invalid_argument(fmt::format("{} '{}': {} bounds {}: {} is above {}", option, whole,
                                            what, text, low_name, high_name));
  return range;
}

}  // namespace

std::pair<TokenRange, TokenRange> parse_lengths(std::string_view text, std::string_view option,
                                                std::string_view whole) {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos)
    throw std::invalid_argument(fmt::format(
        "{} '{}': WORKLOAD is IN/OUT (prompt tokens / max_tokens), each N or MIN-MAX, e.g. "
        "64/1024 or 5000-60000/200-2000",
        option, whole));
  return {parse_length(text.substr(0, slash), "IN", option, whole),
          parse_length(text.substr(slash + 1), "OUT", option, whole)};
}

std::string to_string(TokenRange range) {
  return range.min == range.max ? std::to_string(range.min)
                                : fmt::format("{}-{}", range.min, range.max);
}

void check_group_names(std::span<const ClientGroup> groups) {
  std::set<std::string> names;
  for (const ClientGroup& group : groups)
    if (!names.insert(group.name).second)
      throw std::invalid_argument(fmt::format(
          "'{}' names two client groups (--tenant, --mix): each needs a name of its own",
          group.name));
}

std::string make_group_prompts(std::span<ClientGroup> groups, const SyntheticSpec& run,
                               std::size_t count) {
  std::string description;
  for (ClientGroup& group : groups) {
    if (group.input.empty()) continue;
    // One length: the run's spread around it, as the run's own lengths are drawn.
    SyntheticSpec around = run;
    around.input_tokens = group.input.min;
    around.output_tokens = group.output.min;
    if (group.input.min == group.input.max) group.input = around.input_range();
    if (group.output.min == group.output.max) group.output = around.output_range();
    const std::size_t mean_tokens = (group.input.min + group.input.max) / 2 + 1;
    const std::size_t distinct =
        std::min(count, std::max(group.clients, kGroupPromptTokens / mean_tokens));
    group.prompts = synthetic_workload(group.input, group.output,
                                       run.seed + std::hash<std::string>{}(group.name), distinct);
    description += fmt::format(
        "; {} {}: {} prompt tokens, max_tokens {}{}",
        group.kind == ClientGroup::Kind::tenant ? "tenant" : "mix class", group.name,
        to_string(group.input), to_string(group.output),
        distinct < count ? fmt::format(" ({} distinct prompts, then again in turn)", distinct)
                         : std::string());
  }
  return description;
}

RunResult run_groups(const RunCommand& command, const RunOptions& base_options,
                     const LoadSpec& spec) {
  const std::vector<ClientGroup>& groups = command.groups;
  std::vector<RunResult> parts(groups.size());
  std::vector<std::thread> threads;
  std::size_t clients = 0;
  for (const auto& group : groups) clients += group.clients;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    threads.emplace_back([&, i] {
      const ClientGroup& group = groups[i];
      RunOptions options = base_options;
      if (group.kind == ClientGroup::Kind::tenant) {
        options.headers.push_back({"X-Llmux-Tenant", group.name});
        if (!group.priority.empty())
          options.headers.push_back({"X-Llmux-Priority", group.priority});
      }
      // One progress line: the first group's (threads would overwrite each other's).
      options.progress = base_options.progress && i == 0;
      options.label =
          fmt::format("{} {} (1st of {} groups)", base_options.label, group.name, groups.size());
      options.request_id_prefix = fmt::format("{}-{}", base_options.request_id_prefix, group.name);
      LoadSpec group_spec = spec;
      group_spec.concurrency = group.clients;
      if (spec.num_requests)
        group_spec.num_requests =
            std::max<std::size_t>(1, spec.num_requests * group.clients / clients);
      if (spec.warmup_requests)
        group_spec.warmup_requests = spec.warmup_requests * group.clients / clients;
      parts[i] = run_load(options, group_spec,
                          group.prompts.empty() ? std::span<const PromptItem>(command.prompts)
                                                : std::span<const PromptItem>(group.prompts));
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (auto& record : parts[i].records) record.group = groups[i].name;
  return merge_concurrent(std::move(parts));
}

std::vector<GroupFigures> group_figures(const RunCommand& command, const RunResult& run,
                                        const AggregateOptions& options, ClientGroup::Kind kind) {
  std::vector<GroupFigures> out;
  for (const auto& group : command.groups) {
    if (group.kind != kind) continue;
    std::vector<RequestTiming> timings;
    for (const auto& record : run.records)
      if (!record.warmup && record.group == group.name) timings.push_back(record.t);
    AggregateOptions group_options = options;
    group_options.wall_s = run.wall_s;  // every group's rate over the same window
    out.push_back({group.name, group.priority, group.clients, group.input, group.output,
                   aggregate(timings, group_options)});
  }
  return out;
}

}  // namespace llmux::bench
