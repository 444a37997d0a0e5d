// SPDX-License-Identifier: Apache-2.0
// The /v1/completions and /v1/chat/completions chunks and bodies (openai/stream_event_parser.hpp).
#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "core/tokenizer.hpp"
#include "openai/json_read.hpp"
#include "openai/stream_event_parser.hpp"

namespace llmux::openai {
namespace od = simdjson::ondemand;
using namespace json_read;

void EventParser::parse_delta(od::value& delta) {
  if (!is_type(delta, od::json_type::object)) return;
  for (auto field : delta.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "content") {
      add_text_value(val);
    } else if (key == "reasoning_content" || key == "reasoning") {
      add_text_value(val, TextKind::reasoning);
    } else if (key == "tool_calls" && is_type(val, od::json_type::array)) {
      if (GeneratedText* generated = interpreter_.generated_) generated->tool_call = true;
      for (od::value call : val.get_array()) {
        if (!is_type(call, od::json_type::object)) continue;
        for (auto call_field : call.get_object()) {
          std::string_view call_key = call_field.unescaped_key();
          if (call_key != "function") continue;
          od::value function = call_field.value();
          if (!is_type(function, od::json_type::object)) continue;
          for (auto function_field : function.get_object()) {
            std::string_view function_key = function_field.unescaped_key();
            od::value function_value = function_field.value();
            if (function_key == "name" || function_key == "arguments")
              add_text_value(function_value, TextKind::tool_call);
          }
        }
      }
    }
  }
}

void EventParser::parse_choice(od::value& choice) {
  if (!is_type(choice, od::json_type::object)) return;
  for (auto field : choice.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "text") {
      add_text_value(val);
    } else if (key == "delta" || key == "message") {
      parse_delta(val);
    } else if (key == "finish_reason") {
      std::string_view reason;
      if (get_str(val, reason)) set_finish_reason(reason);
    }
  }
}

EventInfo EventParser::chat_or_completion(od::object& obj) {
  EventInfo info;
  bool has_choices = false;
  bool got_usage = false;
  StreamUsage usage;
  bool flat_error = false;
  StreamError flat;
  for (auto field : obj) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "choices") {
      if (!is_type(val, od::json_type::array)) continue;
      for (od::value choice : val.get_array()) {
        has_choices = true;
        parse_choice(choice);
      }
    } else if (key == "usage") {
      if (is_type(val, od::json_type::object)) {
        parse_usage(val, usage);
        got_usage = true;
      }
    } else if (key == "error") {
      StreamError error;
      parse_error_object(val, error);
      if (!is_type(val, od::json_type::null)) {
        info.error = true;
        set_error(std::move(error));
      }
    } else if (key == "object") {
      std::string_view object_type;
      if (get_str(val, object_type) && object_type == "error") flat_error = true;
    } else if (key == "message") {
      flat.message = scalar_text(val);
    } else if (key == "type") {
      flat.type = scalar_text(val);
    } else if (key == "code") {
      flat.code = scalar_text(val);
    } else if (key == "id") {
      std::string_view id;
      if (get_str(val, id)) set_id(id, /*first_only=*/true);
    }
  }
  if (flat_error && !info.error) {
    info.error = true;
    set_error(std::move(flat));
  }
  if (got_usage) {
    info.usage = true;
    merge_usage(usage);
  }
  if (has_choices && got_usage && usage.completion_tokens) {
    // Continuous usage: completion_tokens is cumulative; this chunk carries the growth.
    const std::uint64_t prev = interpreter_.last_completion_tokens_.value_or(0);
    const std::uint64_t now = *usage.completion_tokens;
    info.tokens = static_cast<std::uint32_t>(now > prev ? now - prev : 0);
    info.tokens_exact = true;
  } else {
    info.tokens = static_cast<std::uint32_t>(estimated_tokens_);
  }
  if (got_usage && usage.completion_tokens)
    interpreter_.last_completion_tokens_ = usage.completion_tokens;
  info.content = any_text_ || info.tokens > 0;
  return info;
}

}  // namespace llmux::openai
