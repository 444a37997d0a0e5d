// SPDX-License-Identifier: Apache-2.0
#pragma once
// Multi-turn `/v1/responses` conversations for `llmux bench run --conversation-turns T`: each
// closed-loop client is one user holding one conversation of T turns, each turn sent when the
// previous one ended. Two ways to carry the history:
//
//   previous  the server keeps it: turn 1 sends the user message (and the system prompt as
//             `instructions`), turn k > 1 only the new user message with
//             `previous_response_id` = the previous turn's response id; `store: true`.
//   replay    the client keeps it, as the Codex CLI does: `store: false`, no
//             previous_response_id; every turn sends the whole history as `input` items (the
//             earlier user messages and the assistant's replies as returned) plus
//             `prompt_cache_key` = the conversation key.
//
// Every turn carries the header `X-Session-ID: <conversation key>` (the driver adds it).
//
// Thread safety: pure functions and plain values.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/workload.hpp"

namespace llmux::bench {

enum class ConversationMode { previous, replay };
std::string_view to_string(ConversationMode mode);
/// "previous" or "replay"; nullopt otherwise.
std::optional<ConversationMode> parse_conversation_mode(std::string_view text);

struct ConversationSpec {
  std::size_t turns = 0;  ///< turns per user; 0 = no conversations (one request per prompt)
  ConversationMode mode = ConversationMode::previous;
  std::string key_prefix = "conv";  ///< user u's conversation key is "<key_prefix>-<u>"
  /// After a turn that failed, the user waits this long before its next turn (a client that
  /// pauses when the server is away, instead of spending every turn in a burst of errors).
  double error_pause_s = 0;
  bool enabled() const { return turns > 0; }
};

/// One turn the server answered: the user message and the assistant's reply.
struct ConversationTurn {
  std::string user, assistant;
};

/// One user's conversation as the client holds it.
struct Conversation {
  std::string key;                        ///< X-Session-ID, and prompt_cache_key in replay
  std::string system;                     ///< sent as `instructions` (empty = none)
  std::vector<ConversationTurn> history;  ///< the turns that succeeded, in order
  std::string previous_response_id;       ///< response id of the last turn that succeeded
};

/// The `/v1/responses` body of the next turn of `conversation` with the new user message `user`
/// (its text; its max_tokens, else opt.max_tokens, as max_output_tokens). `instructions` is sent
/// when `conversation.system` is set — in previous mode only on a turn without
/// previous_response_id, since the server keeps the first turn's.
std::string build_turn_body(const Conversation& conversation, const PromptItem& user,
                            ConversationMode mode, const BodyOptions& opt);

/// After a turn: one that succeeded joins the history (with `reply`, the assistant's text) and
/// its response id is the next turn's previous_response_id; one that failed changes nothing
/// (the next turn builds on the last success).
void finish_turn(Conversation& conversation, const PromptItem& user, bool succeeded,
                 std::string_view response_id, std::string reply);

/// A deterministic stand-in for a reply of `tokens` tokens whose text was not received (a
/// server that streams no text): the history keeps its length.
std::string stand_in_reply(std::size_t tokens, std::uint64_t seed);

}  // namespace llmux::bench
