// SPDX-License-Identifier: Apache-2.0
#pragma once
// The SSE frames of a scripted or statistical turn (Job::turn_plan), as vLLM streams reasoning and
// tool calls: chat deltas `reasoning`, `content` and `tool_calls` (a header naming the function,
// then argument pieces); Responses reasoning, message and function_call items with their
// added / delta / done events. No I/O.
#include <optional>

#include <boost/json/object.hpp>

#include "sim/job.hpp"

namespace llmux::sim {

/// The frame(s) of token `index` of the job's TurnPlan; `last` closes the open item (Responses) or
/// carries the finish reason (chat).
void append_turn_token_frame(Job& job, int index, bool last);
/// The usage a stream's frames carry with continuous_usage_stats: vLLM's counts only, never
/// prompt_tokens_details; null without it.
std::optional<Usage> continuous_usage(const Job& job);

/// A chat chunk with the given `delta` object (JSON text), as vLLM writes chunks.
std::string chat_delta_frame(const ResponseMeta& meta, std::string_view delta,
                             std::string_view finish_reason,
                             const std::optional<Usage>& continuous);

}  // namespace llmux::sim
