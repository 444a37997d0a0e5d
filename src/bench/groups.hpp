// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux bench run`'s client groups (commands.hpp's ClientGroup: --tenant, --mix): several closed
// loops at once in one level, each with its own clients, headers and workload; what their options
// share (counts, lengths N or MIN-MAX, distinct names); each group's synthetic prompts; and each
// group's figures, taken from its own requests over the run's one window.
//
// Thread safety: run_groups blocks the calling thread (one thread per group inside); the rest are
// pure functions.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/commands.hpp"
#include "bench/driver.hpp"
#include "bench/stats.hpp"
#include "bench/workload.hpp"

namespace llmux::bench {

/// `text` cut at every ':'.
std::vector<std::string_view> split_fields(std::string_view text);

/// A count of at least 1; throws std::invalid_argument "OPTION 'WHOLE': WHAT ..." otherwise.
std::size_t parse_count(std::string_view text, std::string_view what, std::string_view option,
                        std::string_view whole);

/// IN/OUT, each a length N or bounds MIN-MAX (1 <= MIN <= MAX): {input, output}; throws
/// std::invalid_argument naming `option`, `whole` and what is wrong.
std::pair<TokenRange, TokenRange> parse_lengths(std::string_view text, std::string_view option,
                                                std::string_view whole);

/// "N" for one length, "MIN-MAX" for bounds.
std::string to_string(TokenRange range);

/// Throws std::invalid_argument when two groups have the same name (their requests are told
/// apart by it).
void check_group_names(std::span<const ClientGroup> groups);

/// The most prompt tokens a group's distinct prompts hold together (about 28 MB of text, as much
/// again in request bodies): a group of long prompts gets fewer distinct prompts, then reuses
/// them in turn.
inline constexpr std::size_t kGroupPromptTokens = std::size_t{8} << 20;

/// Gives each group with a workload of its own its synthetic prompts, seeded by `run.seed` and
/// the group's name: a length N drawn as the run's own lengths are (its --input-spread and
/// --output-spread around N), bounds MIN-MAX drawn uniformly; the group's `input` and `output`
/// become the bounds drawn from. `count` distinct prompts, fewer when they would hold more than
/// kGroupPromptTokens tokens (but at least one per client). Returns what the workload line says
/// of them ("; mix class agent: ...").
std::string make_group_prompts(std::span<ClientGroup> groups, const SyntheticSpec& run,
                               std::size_t count);

/// One level with every group at once (one thread each): a tenant's requests carry
/// X-Llmux-Tenant and X-Llmux-Priority, a mix class's no header of its own; a request count is
/// shared out in proportion to the clients. Records tagged with their group, merged in start
/// order.
RunResult run_groups(const RunCommand& command, const RunOptions& base_options,
                     const LoadSpec& spec);

/// One group's figures: its measured requests, their rates over the run's window.
struct GroupFigures {
  std::string name, priority;
  std::size_t clients = 0;
  TokenRange input, output;
  Aggregate agg;
};
/// The figures of the groups of `kind`, in the order given.
std::vector<GroupFigures> group_figures(const RunCommand& command, const RunResult& run,
                                        const AggregateOptions& options, ClientGroup::Kind kind);

}  // namespace llmux::bench
