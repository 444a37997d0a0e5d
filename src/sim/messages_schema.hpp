// SPDX-License-Identifier: Apache-2.0
#pragma once
// The schema of Anthropic's Messages API as vLLM validates it: the pydantic models of
// vllm/entrypoints/anthropic/protocol.py (vLLM main at commit 00589e56, the protocol that goes
// with serving.py at 0001948b; see docs/sim.md#the-messages-api) checked field by field, and the
// error vLLM answers when they fail. That error is FastAPI's RequestValidationError through vLLM's
// handler, so it keeps vLLM's OpenAI shape even on /v1/messages: 400, type "Bad Request", param
// null, and the message `str(exc)` — "N validation error(s):" and one pydantic error dict per
// line (type, loc, msg; input only when it is a scalar, ctx for literals). Pure.
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "sim/api.hpp"

namespace llmux::sim {

/// Which request model validates a body.
enum class MessagesSchema {
  messages,      // AnthropicMessagesRequest (POST /v1/messages)
  count_tokens,  // AnthropicCountTokensRequest (POST /v1/messages/count_tokens)
};

/// Parses `body` into `document` and checks it against `schema`: nullopt when valid, else the
/// error vLLM answers (every failing field, in the model's field order, as pydantic reports them).
/// Fields the model does not declare (`thinking`, `context_management`, `service_tier`, …) are
/// ignored, as pydantic's default `extra="ignore"` does.
std::optional<ApiError> validate_messages_body(std::string_view body, MessagesSchema schema,
                                               boost::json::value& document);

/// Python's repr() of a string, as pydantic's error dicts print it ('…', or "…" when the text
/// holds a single quote and no double quote).
std::string python_repr(std::string_view text);

}  // namespace llmux::sim
