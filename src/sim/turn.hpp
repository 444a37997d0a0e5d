// SPDX-License-Identifier: Apache-2.0
#pragma once
// A turn the simulator says on purpose (a script turn, or a statistical tool call) instead of
// its generated words: reasoning, text and tool calls, cut into the tokens the engine generates
// one per step, and the bodies vLLM builds from them (Qwen3 with --reasoning-parser qwen3 and
// --tool-call-parser qwen3_coder). Pure: no I/O.
#include <boost/json/array.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/api.hpp"

namespace llmux::sim {

/// What a token of a turn is: reasoning, answer text, a tool call's header (the token that
/// names the function) or a piece of its arguments.
enum class Seg : std::uint8_t { Reasoning, Text, CallHeader, CallArgs };

struct TurnPiece {
  Seg seg = Seg::Text;
  int call = -1;     // the call's index for CallHeader/CallArgs
  std::string text;  // the token's text (empty for a header)
};

struct TurnPlan {
  TurnOutput full;  // everything the turn says, with its ids
  std::vector<TurnPiece> pieces;

  /// Cuts the reasoning, the text and each call (one header token, then its arguments) into
  /// tokens with the project's tokenizer, in that order (vLLM's reasoning, text, tool calls).
  void build();
  /// What the first `count` tokens said.
  TurnOutput emitted(std::size_t count) const;
  /// Whether pieces `first_index` and `second_index` belong to the same output item.
  bool same_item(std::size_t first_index, std::size_t second_index) const;
};

/// Builds and cuts a TurnPlan; ids are drawn here (rs_…, fc_…, and call ids of `call_prefix` and
/// `call_hex` hex digits: vLLM's chat bodies `chatcmpl-tool-` + 32, chat streams (qwen3_coder)
/// `call_` + 24, the Responses API `call_` + 32).
TurnPlan make_plan(std::string reasoning, std::string text,
                   std::vector<std::pair<std::string, std::string>> calls,
                   std::string_view call_prefix = "call_", int call_hex = 24);

/// The Responses output items of a turn: a reasoning item (content `reasoning_text`), a message
/// (when there is text, with id `msg_id`) and one function_call item per call.
boost::json::array turn_output_items(const TurnOutput& turn, std::string_view msg_id);

/// The turn as the next request's history holds it (text, then each call as `<tool_call>`).
std::string assistant_history(const TurnOutput& turn);

/// Chat's finish reason for a turn: `tool_calls` when it stopped after calling tools.
std::string_view chat_finish_reason(const TurnOutput& turn, std::string_view finish);

}  // namespace llmux::sim
