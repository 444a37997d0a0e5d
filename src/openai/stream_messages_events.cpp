// SPDX-License-Identifier: Apache-2.0
// Anthropic's /v1/messages events and bodies, as vLLM serves them (vllm/entrypoints/anthropic/)
// and as Anthropic's API does (openai/stream_event_parser.hpp):
//
//   message_start        {"message": {"id", "model", "usage": {"input_tokens", ...}}}
//   content_block_start  {"index", "content_block": {"type": "text"|"thinking"|"tool_use", ...}}
//   content_block_delta  {"index", "delta": {"type": "text_delta", "text"} | thinking_delta
//                        {"thinking"} | input_json_delta {"partial_json"} | signature_delta}
//   content_block_stop   {"index"}
//   message_delta        {"delta": {"stop_reason"}, "usage": {"output_tokens", ...}}
//   message_stop         the end
//   ping                 nothing
//   error                {"error": {"type", "message"}}
//
// Usage: Anthropic counts `input_tokens` apart from the prompt tokens read from or written to
// its cache (`cache_read_input_tokens`, `cache_creation_input_tokens`); vLLM reports the whole
// prompt as `input_tokens` and sends no cache fields. The prompt is their sum either way, the
// cached part the cache reads.
#include <simdjson.h>

#include <cstdint>

#include "openai/json_read.hpp"
#include "openai/stream_event_parser.hpp"

namespace llmux::openai {
namespace od = simdjson::ondemand;
using namespace json_read;

namespace {

/// An Anthropic `usage` object: true when it held any count.
bool parse_messages_usage(od::value& value, StreamUsage& usage) {
  if (!is_type(value, od::json_type::object)) return false;
  std::optional<std::uint64_t> input, cache_read, cache_creation, output;
  for (auto field : value.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value count = field.value();
    if (key == "input_tokens")
      input = get_u64(count);
    else if (key == "cache_read_input_tokens")
      cache_read = get_u64(count);
    else if (key == "cache_creation_input_tokens")
      cache_creation = get_u64(count);
    else if (key == "output_tokens")
      output = get_u64(count);
  }
  if (input || cache_read || cache_creation) {
    // Saturating: counts that overflow are nonsense, not a small number.
    std::uint64_t prompt = 0;
    for (const auto& part : {input, cache_read, cache_creation})
      prompt = part && *part > UINT64_MAX - prompt ? UINT64_MAX : prompt + part.value_or(0);
    usage.prompt_tokens = prompt;
  }
  if (cache_read) usage.cached_tokens = cache_read;
  if (output) usage.completion_tokens = output;
  return input || cache_read || cache_creation || output;
}

}  // namespace

/// A content block (a body's, or a content_block_start's), a content_block_delta's delta, or
/// message_delta's delta: its text, thinking or tool input, its stop reason.
void EventParser::messages_content_block(od::value& block) {
  if (!is_type(block, od::json_type::object)) return;
  std::string_view type;
  for (auto field : block.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value value = field.value();
    if (key == "type") {
      get_str(value, type);
      if (type == "tool_use")
        if (GeneratedText* generated = interpreter_.generated_) generated->tool_call = true;
    } else if (key == "text") {
      add_text_value(value);
    } else if (key == "thinking") {
      add_text_value(value, TextKind::reasoning);
    } else if (key == "stop_reason") {  // message_delta's delta
      std::string_view reason;
      if (get_str(value, reason)) set_finish_reason(reason);
    } else if (key == "partial_json" || key == "name") {
      add_text_value(value, TextKind::tool_call);
    } else if (key == "input") {
      // A whole body's tool_use block: its arguments as the model wrote them.
      od::object input;
      std::string_view raw;
      if (!value.get_object().get(input) && !input.raw_json().get(raw))
        add_text(raw, TextKind::tool_call);
    }
  }
}

EventInfo EventParser::messages(std::string_view event_name, od::object& object) {
  EventInfo info;
  std::string_view type;
  StreamUsage usage;
  bool got_usage = false;
  std::optional<StreamError> error;
  for (auto field : object) {
    std::string_view key = field.unescaped_key();
    od::value value = field.value();
    if (key == "type") {
      get_str(value, type);
    } else if (key == "message") {  // message_start
      if (!is_type(value, od::json_type::object)) continue;
      for (auto message_field : value.get_object()) {
        std::string_view message_key = message_field.unescaped_key();
        od::value message_value = message_field.value();
        if (message_key == "id") {
          std::string_view id;
          if (get_str(message_value, id)) set_id(id, /*first_only=*/true);
        } else if (message_key == "usage") {
          got_usage = parse_messages_usage(message_value, usage) || got_usage;
        }
      }
    } else if (key == "content_block" || key == "delta") {
      // A block's start (its first text, usually empty, or a tool_use's name), or a delta of a
      // block — or message_delta's {"stop_reason"}.
      messages_content_block(value);
    } else if (key == "usage") {  // message_delta
      got_usage = parse_messages_usage(value, usage) || got_usage;
    } else if (key == "error") {
      if (!is_type(value, od::json_type::null)) {
        error.emplace();
        parse_error_object(value, *error);
      }
    }
  }
  if (type.empty()) type = event_name;
  if (GeneratedText* generated = interpreter_.generated_;
      generated && (type == "content_block_start" || type == "message_delta"))
    generated->output_began = true;
  if (got_usage) {
    info.usage = true;
    merge_usage(usage);
  }
  if (type == "message_stop") info.done = true;
  if (type == "error" || error) {
    info.error = true;
    StreamError reported = error.value_or(StreamError{});
    if (reported.type.empty()) reported.type = "error";
    set_error(std::move(reported));
  }
  info.tokens = static_cast<std::uint32_t>(estimated_tokens_);
  info.content = any_text_;
  return info;
}

EventInfo EventParser::messages_body(od::object& object) {
  EventInfo info;
  StreamUsage usage;
  bool got_usage = false;
  for (auto field : object) {
    std::string_view key = field.unescaped_key();
    od::value value = field.value();
    if (key == "id") {
      std::string_view id;
      if (get_str(value, id)) set_id(id, /*first_only=*/false);
    } else if (key == "stop_reason") {
      std::string_view reason;
      if (get_str(value, reason)) set_finish_reason(reason);
    } else if (key == "usage") {
      got_usage = parse_messages_usage(value, usage);
    } else if (key == "error") {
      if (!is_type(value, od::json_type::null)) {
        StreamError error;
        parse_error_object(value, error);
        info.error = true;
        set_error(std::move(error));
      }
    } else if (key == "content" && is_type(value, od::json_type::array)) {
      for (od::value block : value.get_array()) messages_content_block(block);
    }
  }
  return whole_body_counts(info, got_usage ? &usage : nullptr);
}

}  // namespace llmux::openai
