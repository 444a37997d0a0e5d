// SPDX-License-Identifier: Apache-2.0
#pragma once
// Anthropic's Messages API out, as vLLM writes it from the chat output it converts
// (vllm/entrypoints/anthropic/serving.py at commit 0001948b: message_stream_converter,
// messages_full_converter; api_router.py create_messages). No I/O.
//
// A stream, one SSE event per `event: <type>\ndata: <json>\n\n`, no `ping`, no `[DONE]`:
//   message_start        with the first token (vLLM reads it from the chat stream's first
//                        chunk): {"type","message":{"id","content":[],"model","stop_reason":null,
//                        "stop_sequence":null,"usage":{"input_tokens","output_tokens":0}}}
//                        (exclude_unset: the message has no "type" and "role" here)
//   content_block_start  when a token opens a block: {"type","content_block":{…},"index"}:
//                        thinking {"type","thinking":""}, text {"type","text":""}, tool_use
//                        {"type","id","name","input":{}}
//   content_block_delta  {"type","delta":{…},"index"}: thinking_delta, text_delta,
//                        input_json_delta (`partial_json`); a thinking block gets a
//                        signature_delta just before it stops
//   content_block_stop   {"type","index"} when the next block starts, and for the last block
//                        after the last token
//   message_delta        {"type","delta":{"stop_reason"},"usage":{"input_tokens","output_tokens"}}
//   message_stop         {"type"}
// stop_reason: chat's finish reason stop → end_turn, length → max_tokens, tool_calls → tool_use.
#include <string>
#include <string_view>
#include <variant>

#include "sim/api.hpp"
#include "sim/job.hpp"

namespace llmux::sim {

/// The events of output token `index` of a /v1/messages stream: message_start with the first,
/// the stop of the block before and the start of its own when it opens a block, and its delta.
/// The first token's delta event is broken as `job.faults.malformed` says.
void append_messages_token_events(Job& job, int index);

/// After the last token: the open block's stop, message_delta and message_stop.
void append_messages_done_events(Job& job);

/// The stop_reason vLLM maps chat's finish reason to; empty for none (then left out).
std::string_view messages_stop_reason(std::string_view finish_reason);

/// The non-streaming body (AnthropicMessagesResponse with exclude_none: no `stop_sequence`).
/// vLLM parses each tool call's arguments back into `input` with json.loads; arguments that are
/// not a JSON object (a call cut by max_tokens) make that fail: a 500 `internal_error`.
std::variant<std::string, ApiError> messages_body(const ResponseMeta& meta, const TurnOutput& turn,
                                                  const Usage& usage);

/// Anthropic's error body: `{"type":"error","error":{"type":…,"message":…}}`.
std::string anthropic_error_json(std::string_view type, std::string_view message);

}  // namespace llmux::sim
