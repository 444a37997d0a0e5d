// SPDX-License-Identifier: Apache-2.0
#pragma once
// Continuing an earlier output exactly. A greedy request (temperature 0) whose prompt is an
// earlier prompt followed by what the simulator generated for it produces the rest of that very
// output, as an ideal deterministic engine would:
//   chat         `continue_final_message` (with `add_generation_prompt: false`), the final
//                assistant message holding the output so far (its reasoning in
//                `reasoning_content`, its text in `content`);
//   completions  the prompt followed by the text so far (at least kMinGeneratedTokens of it:
//                a shorter tail matches an earlier output by chance too often).
// Everything is derived from the request body vLLM would see: the earlier prompt is recognised,
// not announced. Pure: no I/O.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sim/api.hpp"
#include "sim/turn.hpp"

namespace llmux::sim {

/// Where a request's prompt continues an earlier output of generated words.
struct ContinuedWords {
  std::size_t earlier_prompt_size = 0;  // the earlier prompt: prompt_ids[0, earlier_prompt_size)
  std::size_t generated = 0;            // tokens of its output the prompt already holds
};

/// The shortest completions tail taken for a continuation.
constexpr std::size_t kMinGeneratedTokens = 2;

/// The earlier prompt and how much of its greedy word output `request`'s prompt already holds,
/// when it continues one (chat: the final message, without reasoning, is that output's start;
/// completions: the longest tail of the prompt that is). Only for temperature 0.
std::optional<ContinuedWords> find_continued_words(const GenRequest& request);

/// A chat turn (script or statistical) continued: what is left of `full` after the final
/// message's reasoning and content in `request`, when the turn began with exactly those (the
/// reasoning whole, the content a prefix of the turn's text); null otherwise. The left part keeps
/// the turn's tool calls; its tokens are cut as the whole turn's were.
std::shared_ptr<const TurnPlan> continue_turn(const GenRequest& request, const TurnPlan& full,
                                              std::string_view call_prefix, int call_hex);

}  // namespace llmux::sim
