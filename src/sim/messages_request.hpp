// SPDX-License-Identifier: Apache-2.0
#pragma once
// Anthropic's Messages API in: a `POST /v1/messages` or `/v1/messages/count_tokens` body
// validated (sim/messages_schema) and turned into the chat request vLLM builds from it
// (vllm/entrypoints/anthropic/serving.py at commit 0001948b, _convert_anthropic_to_openai_request),
// then rendered by the sim's chat path (sim/input_items, sim/chat_template), so the prompt's
// tokens, prefix caching, tool and reasoning rendering are chat's. Pure.
//
// The conversion, as vLLM's:
//   system        a string, or its text blocks joined with nothing between them; blocks (and
//                 inline system messages' blocks) starting with `x-anthropic-billing-header`
//                 dropped (Claude Code's per-request hash, which would defeat prefix caching)
//   inline system `role: "system"` messages in `messages` folded into that system prompt, in order
//   text          a message's text blocks its content; `image` blocks add no tokens here
//   thinking      an assistant's `thinking` blocks its reasoning (`redacted_thinking` dropped)
//   tool_use      an assistant's tool call, arguments `json.dumps(input)`
//   tool_result   in a user message: a `tool` message before the user's own text (its text
//                 parts joined by "\n"); in an assistant message: text "Tool result: …"
//   tools         chat function tools (`input_schema` the parameters, "type": "object" added)
//   tool_choice   auto → "auto", any → "required", none → "none", tool → the named function;
//                 "auto" when tools come without it
//   stream        forces stream_options include_usage and continuous_usage_stats
// A user message left without content (only tool results) is not added, as in vLLM.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "sim/api.hpp"

namespace llmux::sim {

/// A /v1/messages body as the chat GenRequest vLLM serves it (`messages_api` set). Errors:
/// schema errors in vLLM's OpenAI shape (400 "Bad Request"); an unknown model (404
/// NotFoundError) and a conversation with no message to answer (400 BadRequestError) in
/// Anthropic's shape, as vLLM's translate_error_response writes them. Never throws.
std::variant<GenRequest, ApiError> parse_messages_request(std::string_view body,
                                                          const ApiContext& context);

/// /v1/messages/count_tokens: the request's prompt rendered as chat with the generation prompt
/// (serving.py count_tokens: render_chat_request), in tokens; errors as above.
std::variant<std::int64_t, ApiError> count_message_tokens(std::string_view body,
                                                          const ApiContext& context);

/// The count_tokens answer: `{"input_tokens":N,"context_management":{"original_input_tokens":N}}`
/// (AnthropicCountTokensResponse with exclude_none).
std::string count_tokens_body(std::int64_t input_tokens);

}  // namespace llmux::sim
