// SPDX-License-Identifier: Apache-2.0
#pragma once
// The simulator's OpenAI API surface as pure functions: request parsing and validation (with
// vLLM's error messages and statuses), prompt rendering to token ids, and the JSON bodies and
// SSE frames vLLM sends. No I/O here; the server (sim/server.cpp and its parts) does the I/O.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace llmux::sim {

enum class Endpoint { Completions, Chat, Responses };

struct ApiError {
  int status = 400;
  std::string message;
  std::string type;  // empty: derived from status
  std::optional<std::string> param;
  /// Written in Anthropic's shape `{"type":"error","error":{"type","message"}}` (vLLM's
  /// /v1/messages translates its serving errors so; its schema errors stay OpenAI-shaped).
  bool anthropic = false;
};

/// One message of a conversation as the chat template renders it (tool calls, tool results and
/// reasoning already turned into text, see sim/input_items).
struct Message {
  std::string role;
  std::string content;
  /// An assistant message's reasoning (`reasoning_content` or `reasoning`), rendered as Qwen3's
  /// template does: a `<think>` block before the content, for the assistant messages after the
  /// last user query only.
  std::string reasoning = {};
};

/// A function tool a request offers (chat `tools[].function`, Responses `tools[]` of type
/// function): its name and JSON schema, for the statistical tool-call mode.
struct FunctionTool {
  std::string name;
  boost::json::value parameters;
};

/// One tool call the simulator emits.
struct OutputCall {
  std::string name;
  std::string arguments;  // JSON text
  std::string call_id;    // call_… (chat: the tool call's id)
  std::string item_id;    // fc_… (Responses output item)
};

/// What a scripted or statistical turn has emitted (so far): reasoning, text, tool calls.
struct TurnOutput {
  std::string reasoning;
  std::string text;
  std::vector<OutputCall> calls;
  std::string reasoning_id;  // rs_… (Responses output item)
  std::int64_t reasoning_tokens = 0;
};

/// A validated generation request.
struct GenRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::string model;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats
  std::optional<std::int64_t> max_tokens;
  double temperature = 1.0;
  std::optional<std::uint64_t> seed;
  int priority = 0;  // vLLM's `priority` (lower runs first; --scheduling-policy priority)
  bool ignore_eos = false;
  std::vector<std::uint32_t> prompt_ids;
  /// Chat `continue_final_message`: the final message is rendered open (no end of turn, no
  /// generation prompt) and the output continues it. `continued_from` is where that final
  /// message's reasoning and content begin in prompt_ids (what the prompt was before it).
  bool continue_final_message = false;
  std::size_t continued_from = 0;
  std::string continued_reasoning;
  std::string continued_content;
  // Responses API.
  std::vector<Message> conversation;  // history + this input (what the next turn builds on)
  std::string instructions;
  std::string previous_response_id;
  bool store = true;
  bool background = false;
  boost::json::value raw_input;  // echoed in the response object's `input` is not needed
  // Tools and reasoning (chat and Responses), echoed by the Responses object as vLLM does.
  boost::json::value tools = boost::json::array{};
  boost::json::value tool_choice = "auto";
  boost::json::value reasoning;  // null, or {effort, generate_summary, summary}
  bool parallel_tool_calls = true;
  std::vector<FunctionTool> function_tools;
  /// The last user message or tool output of the input (what a script turn's `match` reads).
  std::string last_input;
  /// `POST /v1/messages`: a chat request (vLLM converts it to one) answered in Anthropic's
  /// Messages dialect (sim/messages_request, sim/messages_frames).
  bool messages_api = false;
};

/// What the server knows when validating (model name, limits, the response store).
struct ApiContext {
  std::string served_model_name;
  std::int64_t max_model_len = 0;
  bool priority_scheduling = false;  // --scheduling-policy priority: `priority` may be nonzero
  /// Returns the stored conversation of a response id, or nullopt when unknown.
  std::function<std::optional<std::vector<Message>>(std::string_view)> lookup_conversation;
};

/// Parses and validates a request body for `endpoint`. Never throws.
std::variant<GenRequest, ApiError> parse_request(Endpoint endpoint, std::string_view body,
                                                 const ApiContext& ctx);

/// Completion budget once the prompt is known: the effective max_tokens, or a context-length
/// error (vLLM's 400).
std::variant<std::int64_t, ApiError> effective_max_tokens(const GenRequest& req,
                                                          std::int64_t max_model_len);

/// Serialises a string as a JSON string literal (with quotes).
std::string json_quote(std::string_view text);

/// Usage numbers of one request.
struct Usage {
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t cached_tokens = 0;
  /// --enable-prompt-tokens-details: completions and chat report `prompt_tokens_details`
  /// (`{"cached_tokens": N}`, when N > 0, as vLLM 0.11 does). The Responses API always reports
  /// `input_tokens_details`.
  bool prompt_tokens_details = false;
};

/// Everything the body builders need about one finished or running request.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::Completions;
  std::string id;       // cmpl-… / chatcmpl-… / resp_…
  std::string item_id;  // msg_… (responses)
  std::string model;
  std::int64_t created = 0;
  std::string finish_reason;       // "stop" | "length" | "" while running
  std::string kv_transfer_params;  // JSON of a producer's handle (sim/kv_params); empty: null
};

/// The `kv_transfer_params` of a completions or chat body.
inline std::string_view kv_transfer_params_json(const ResponseMeta& meta) {
  return meta.kv_transfer_params.empty() ? std::string_view("null") : meta.kv_transfer_params;
}

// ---- non-streaming bodies ----
std::string completion_body(const ResponseMeta& meta, std::string_view text, const Usage& usage);
std::string chat_body(const ResponseMeta& meta, std::string_view text, const Usage& usage);
/// A chat body of a scripted/statistical turn: `reasoning`, `content` (null when empty) and
/// `tool_calls`; finish_reason `tool_calls` when it stopped after a call (sim/turn_frames.cpp).
std::string chat_turn_body(const ResponseMeta& meta, const TurnOutput& out, const Usage& usage);
/// A finished response's status as vLLM gives it: "incomplete" when max_output_tokens cut it
/// (finish_reason "length"; incomplete_details.reason "max_output_tokens"), else "completed".
inline const char* finished_status(const ResponseMeta& meta) {
  return meta.finish_reason == "length" ? "incomplete" : "completed";
}
/// The Responses API object. `status`: queued | in_progress | completed | incomplete | cancelled.
/// With `turn`, the output items are its reasoning, message and function_call items.
boost::json::object response_object(const ResponseMeta& meta, const GenRequest& req,
                                    std::string_view status, std::string_view text,
                                    const std::optional<Usage>& usage,
                                    const TurnOutput* turn = nullptr);

// ---- streaming frames (each a complete `data: …\n\n` or `event: …\ndata: …\n\n`) ----
/// `usage` of completions and chat as vLLM writes it: `prompt_tokens_details` is
/// `{"cached_tokens": N}` when the details are on and N > 0, else null — or, with
/// `null_details` false, left out (vLLM's streamed usage, written with exclude_none).
std::string usage_json(const Usage& usage, bool null_details = true);
/// First chat chunk: role only.
std::string chat_role_frame(const ResponseMeta& meta, const std::optional<Usage>& continuous);
std::string completion_token_frame(const ResponseMeta& meta, std::string_view text,
                                   std::string_view finish_reason,
                                   const std::optional<Usage>& continuous);
std::string chat_token_frame(const ResponseMeta& meta, std::string_view text,
                             std::string_view finish_reason,
                             const std::optional<Usage>& continuous);
/// Final usage chunk (`choices: []`), for completions and chat.
std::string usage_frame(const ResponseMeta& meta, const Usage& usage);
std::string done_frame();
/// An error in the middle of a stream, as vLLM sends it.
std::string stream_error_frame(int status, std::string_view message);
/// A typed Responses API event with its sequence number.
std::string responses_event(std::string_view type, boost::json::object data, std::int64_t seq);

}  // namespace llmux::sim
