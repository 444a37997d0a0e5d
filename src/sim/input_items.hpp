// SPDX-License-Identifier: Apache-2.0
#pragma once
// Conversation inputs as vLLM takes them, turned into the messages the chat template renders:
// chat `messages` (assistant `tool_calls`, `tool` results) and Responses `input` items
// (`message`, `function_call`, `function_call_output`, `reasoning`, `custom_tool_call`,
// `custom_tool_call_output`, `item_reference`), and the `tools` a request offers. Pure; used by
// sim/api. A malformed item is vLLM's schema error: 400 "Bad Request" with `param` the field.
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/api.hpp"

namespace llmux::sim {

/// A schema error as vLLM's RequestValidationError handler answers it (400, "Bad Request").
ApiError bad_request(std::string message, std::optional<std::string> param = std::nullopt);
/// "a string", "an array", … for error messages.
std::string_view json_kind_name(const boost::json::value& value);

/// Chat `messages`. Assistant `tool_calls` and `reasoning`/`reasoning_content` are accepted;
/// tool calls are rendered as Qwen's `<tool_call>` blocks, `tool` messages as a user turn's
/// `<tool_response>` (as Qwen3's template does).
std::optional<ApiError> parse_chat_messages(const boost::json::value& messages,
                                            std::vector<Message>& out);

/// Responses `input` when it is an array of items.
std::optional<ApiError> parse_response_input(const boost::json::value& input,
                                             std::vector<Message>& out);

/// `tools`, `tool_choice`, `parallel_tool_calls` and (Responses) `reasoning` of a request into
/// `request`; `rendered` receives the tool definitions as the template puts them in the system
/// prompt (empty without tools).
std::optional<ApiError> parse_tools(Endpoint endpoint, const boost::json::object& object,
                                    GenRequest& request, std::string& rendered);

/// Puts the rendered tool definitions into the system message (first one, or a new one).
void add_tools_to_prompt(std::vector<Message>& msgs, const std::string& rendered);

/// Whether `message` is a tool's output (a user turn holding a `<tool_response>`).
bool is_tool_result(const Message& message);

/// The text of the last user message or tool output of `msgs` ("" when none).
std::string last_input_text(const std::vector<Message>& msgs);

/// A tool call as Qwen3's template renders it in the history:
/// `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`.
std::string render_tool_call(std::string_view name, std::string_view arguments);

/// JSON text as Python's json.dumps writes it (`{"a": 1, "b": [1, 2]}`), as vLLM's tool parsers
/// write tool-call arguments.
std::string python_json(const boost::json::value& value);

}  // namespace llmux::sim
