// SPDX-License-Identifier: Apache-2.0
#pragma once
// The few JSON fields routing needs, read from a request body without copying or
// re-serialising it (simdjson on-demand; the body must have SIMDJSON_PADDING spare capacity).
#include <cstdint>
#include <string>
#include <string_view>

namespace llmux::gateway {

struct BodyFields {
  std::string model;
  std::string previous_response_id;
  std::string user;
  std::string prompt_cache_key;  // the Responses API's cache hint (Codex sends one per session)
  bool stream = false;
  bool store_false = false;      // `store: false`: the backend keeps no copy of the response
  bool names_priority = false;   // the body has a top-level `priority` (vLLM's)
  std::int64_t max_tokens = -1;  // max_tokens, max_completion_tokens or max_output_tokens; -1: none
  std::size_t body_bytes = 0;    // the body's size (it may be released before the request ends)
  // `stream_options.include_usage`: -1 no `stream_options` field at all; 0 the field is there
  // but does not ask for usage (null, not an object, include_usage absent or false); 1 asks.
  int include_usage = -1;
  bool parsed = false;  // false: not JSON (the backend will say so)
  /// Why another backend could not continue this request's output (gateway/migration.hpp): a
  /// field whose meaning depends on the output so far (n > 1, best_of, echo, logprobs,
  /// penalties counted on output tokens, structured output), the client's own
  /// `continue_final_message`, a prompt of token ids. Null: nothing stands in the way.
  const char* not_continuable = nullptr;
};

/// Reads top-level `model`, `stream`, `stream_options.include_usage`, `previous_response_id`,
/// `user` (else the Messages API's `metadata.user_id`), `prompt_cache_key`, `store`, the output
/// cap, and the fields that keep an output from being continued elsewhere. `body` must stay valid;
/// it is padded in place if its capacity is short (the only copy, and a rare one).
BodyFields read_body_fields(std::string& body);

/// How a body's messages are ordered: as written (OpenAI's APIs), or as vLLM renders a Messages
/// API request: its system messages first (after `system`), then the others.
enum class PromptOrder { as_written, messages_api };

/// The prompt of a request body as one text, in the order the model reads it: the Responses
/// API's `instructions` and `input` (a string, or items: message text, function call arguments
/// and outputs), chat `messages` (role and text of each), a completion's `prompt`, or a Messages
/// API request's `system` and `messages` (text, thinking, tool_use input, tool_result content;
/// Claude Code's per-request billing block left out). Each part on its own line, roles included,
/// so two requests share a prefix of this text exactly when their prompts start the same.
/// Appends to `out`; nothing for a body that is not JSON. A body read by read_body_fields() is
/// parsed in place; another is copied first.
void read_prompt_text(const std::string& body, std::string& out,
                      PromptOrder order = PromptOrder::as_written);

}  // namespace llmux::gateway
