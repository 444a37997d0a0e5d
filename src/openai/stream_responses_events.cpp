// SPDX-License-Identifier: Apache-2.0
// The /v1/responses typed events and bodies (openai/stream_event_parser.hpp).
#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "core/tokenizer.hpp"
#include "openai/json_read.hpp"
#include "openai/stream_event_parser.hpp"

namespace llmux::openai {
namespace od = simdjson::ondemand;
using namespace json_read;

EventInfo EventParser::responses(std::string_view event_name, od::object& obj) {
  EventInfo info;
  std::string_view type;
  std::string_view delta;
  bool has_delta = false;
  bool got_usage = false;
  StreamUsage usage;
  std::string status;
  std::optional<StreamError> resp_error;
  std::optional<StreamError> top_error;
  StreamError event_error;
  for (auto field : obj) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "type") {
      get_str(val, type);
    } else if (key == "sequence_number") {
      if (auto sequence = get_u64(val)) interpreter_.sequence_number_ = sequence;
    } else if (key == "delta") {
      has_delta = get_str(val, delta);
    } else if (key == "response") {
      if (!is_type(val, od::json_type::object)) continue;
      for (auto response_field : val.get_object()) {
        std::string_view response_key = response_field.unescaped_key();
        od::value response_value = response_field.value();
        if (response_key == "id") {
          std::string_view id;
          if (get_str(response_value, id)) set_id(id, /*first_only=*/false);
        } else if (response_key == "status") {
          status = scalar_text(response_value);
        } else if (response_key == "usage") {
          if (is_type(response_value, od::json_type::object)) {
            parse_usage(response_value, usage);
            got_usage = true;
          }
        } else if (response_key == "error") {
          if (!is_type(response_value, od::json_type::null)) {
            resp_error.emplace();
            parse_error_object(response_value, *resp_error);
          }
        }
      }
    } else if (key == "error") {
      if (!is_type(val, od::json_type::null)) {
        top_error.emplace();
        parse_error_object(val, *top_error);
      }
    } else if (key == "message") {
      event_error.message = scalar_text(val);
    } else if (key == "code") {
      event_error.code = scalar_text(val);
    }
  }
  if (type.empty()) type = event_name;
  if (GeneratedText* generated = interpreter_.generated_) {
    if (interpreter_.sequence_number_)
      generated->last_sequence_number = static_cast<std::int64_t>(*interpreter_.sequence_number_);
    if (type != "response.created" && type != "response.in_progress")
      generated->output_began = true;
  }

  if (has_delta && is_text_delta_type(type)) add_text(delta);
  if (got_usage) {
    info.usage = true;
    merge_usage(usage);
  }
  if (type == "response.completed" || type == "response.incomplete") {
    info.done = true;
    if (!status.empty()) set_finish_reason(status);
  } else if (type == "response.failed") {
    info.done = true;
    info.error = true;
    StreamError error = resp_error.value_or(StreamError{});
    if (error.message.empty()) error.message = "response.failed";
    if (error.type.empty()) error.type = "response.failed";
    set_error(std::move(error));
    if (!status.empty()) set_finish_reason(status);
  } else if (type == "error") {
    info.error = true;
    StreamError error = top_error ? *top_error : event_error;
    if (error.type.empty()) error.type = "error";
    set_error(std::move(error));
  }
  if (top_error && !info.error) {
    info.error = true;
    set_error(std::move(*top_error));
  }
  info.tokens = static_cast<std::uint32_t>(estimated_tokens_);
  info.content = any_text_;
  return info;
}

/// A whole /v1/responses body.
EventInfo EventParser::responses_body(od::object& obj) {
  EventInfo info;
  bool got_usage = false;
  StreamUsage usage;
  for (auto field : obj) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "id") {
      std::string_view id;
      if (get_str(val, id)) set_id(id, /*first_only=*/false);
    } else if (key == "status") {
      set_finish_reason(scalar_text(val));
    } else if (key == "usage") {
      if (is_type(val, od::json_type::object)) {
        parse_usage(val, usage);
        got_usage = true;
      }
    } else if (key == "error") {
      if (!is_type(val, od::json_type::null)) {
        StreamError error;
        parse_error_object(val, error);
        info.error = true;
        set_error(std::move(error));
      }
    } else if (key == "output") {
      if (!is_type(val, od::json_type::array)) continue;
      for (od::value item : val.get_array()) {
        if (!is_type(item, od::json_type::object)) continue;
        for (auto item_field : item.get_object()) {
          std::string_view item_key = item_field.unescaped_key();
          od::value item_value = item_field.value();
          if (item_key == "arguments") {
            add_text_value(item_value);
          } else if (item_key == "content" && is_type(item_value, od::json_type::array)) {
            for (od::value part : item_value.get_array()) {
              if (!is_type(part, od::json_type::object)) continue;
              for (auto part_field : part.get_object()) {
                std::string_view part_key = part_field.unescaped_key();
                od::value part_value = part_field.value();
                if (part_key == "text") add_text_value(part_value);
              }
            }
          }
        }
      }
    }
  }
  return whole_body_counts(info, got_usage ? &usage : nullptr);
}

}  // namespace llmux::openai
