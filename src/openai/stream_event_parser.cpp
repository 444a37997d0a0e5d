// SPDX-License-Identifier: Apache-2.0
// An event's or a whole body's framing, and what every dialect shares
// (openai/stream_event_parser.hpp).
#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "core/tokenizer.hpp"
#include "openai/json_read.hpp"
#include "openai/stream_event_parser.hpp"

namespace llmux::openai {
namespace od = simdjson::ondemand;
using namespace json_read;

void EventParser::set_finish_reason(std::string_view reason) {
  if (interpreter_.capture_ids_) interpreter_.extra().finish_reason = reason;
}

void EventParser::set_id(std::string_view id, bool first_only) {
  if (!interpreter_.capture_ids_) return;
  auto& extra = interpreter_.extra();
  if (!first_only || extra.id.empty()) extra.id = id;
}

void EventParser::add_text(std::string_view text, TextKind kind) {
  if (text.empty()) return;
  estimated_tokens_ += std::max<std::size_t>(1, Tokenizer::count(text));
  any_text_ = true;
  if (interpreter_.capture_) interpreter_.extra().text.append(text);
  if (GeneratedText* generated = interpreter_.generated_) {
    if (kind == TextKind::tool_call) {
      generated->tool_call = true;
    } else if (generated->content.size() + generated->reasoning.size() + text.size() >
               generated->limit) {
      generated->over_limit = true;
    } else if (!generated->over_limit) {
      (kind == TextKind::reasoning ? generated->reasoning : generated->content).append(text);
    }
  }
}

void EventParser::add_text_value(od::value& value, TextKind kind) {
  std::string_view text;
  if (get_str(value, text)) add_text(text, kind);
}

void EventParser::merge_usage(const StreamUsage& usage) {
  if (usage.prompt_tokens) interpreter_.usage_.prompt_tokens = usage.prompt_tokens;
  if (usage.completion_tokens) interpreter_.usage_.completion_tokens = usage.completion_tokens;
  if (usage.cached_tokens) interpreter_.usage_.cached_tokens = usage.cached_tokens;
}

EventInfo EventParser::whole_body_counts(EventInfo info, const StreamUsage* usage) {
  if (usage) {
    info.usage = true;
    merge_usage(*usage);
  }
  if (usage && usage->completion_tokens) {
    info.tokens = static_cast<std::uint32_t>(*usage->completion_tokens);
    info.tokens_exact = true;
  } else {
    info.tokens = static_cast<std::uint32_t>(estimated_tokens_);
  }
  info.content = any_text_ || info.tokens > 0;
  return info;
}

void EventParser::set_error(StreamError error) {
  auto& extra = interpreter_.extra();
  if (!extra.error) extra.error = std::move(error);
}

EventInfo EventParser::on_body(std::string_view body) {
  estimated_tokens_ = 0;
  any_text_ = false;
  EventInfo info;
  const std::size_t size = body.size();
  if (buffer_.size() < size + simdjson::SIMDJSON_PADDING)
    buffer_.resize(size + simdjson::SIMDJSON_PADDING);
  if (size > 0) std::memcpy(buffer_.data(), body.data(), size);
  try {
    od::document doc = parser_.iterate(buffer_.data(), size, buffer_.size());
    od::object obj = doc.get_object();
    switch (interpreter_.dialect_) {
      case Dialect::responses:
        info = responses_body(obj);
        break;
      case Dialect::messages:
        info = messages_body(obj);
        break;
      default:
        info = chat_or_completion(obj);
    }
  } catch (const simdjson::simdjson_error&) {
    info = EventInfo{};
    info.malformed = true;
  }
  info.done = true;
  interpreter_.done_ = true;
  interpreter_.tokens_ += info.tokens;
  if (info.content) ++interpreter_.content_events_;
  return info;
}

EventInfo EventParser::on_body_usage(std::string_view body) {
  // A Messages body's usage counts in fields of its own (stream_messages_events.cpp).
  if (interpreter_.dialect_ == Dialect::messages) return on_body(body);
  const std::string_view obj = last_usage_object(body);
  if (obj.empty()) return on_body(body);
  EventInfo info;
  if (StreamUsage usage; read_usage_flat(obj, usage)) {  // the usual plain object
    merge_usage(usage);
    info.usage = true;
    info.done = true;
    interpreter_.done_ = true;
    return info;
  }
  const std::size_t size = obj.size();
  if (buffer_.size() < size + simdjson::SIMDJSON_PADDING)
    buffer_.resize(size + simdjson::SIMDJSON_PADDING);
  std::memcpy(buffer_.data(), obj.data(), size);
  try {
    od::document doc = parser_.iterate(buffer_.data(), size, buffer_.size());
    od::value value = doc.get_value();
    StreamUsage usage;
    parse_usage(value, usage);
    merge_usage(usage);
    info.usage = true;
  } catch (const simdjson::simdjson_error&) {
    return on_body(body);  // not what it seemed: the whole body, as ever
  }
  info.done = true;
  interpreter_.done_ = true;
  return info;
}

EventInfo EventParser::on_event(std::string_view event_name, std::string_view data) {
  estimated_tokens_ = 0;
  any_text_ = false;
  EventInfo info;
  std::string_view trimmed = data;
  while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t' ||
                              trimmed.front() == '\n' || trimmed.front() == '\r')) {
    trimmed.remove_prefix(1);
  }
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t' ||
                              trimmed.back() == '\n' || trimmed.back() == '\r')) {
    trimmed.remove_suffix(1);
  }
  if (trimmed == "[DONE]") {
    info.done = true;
    interpreter_.done_ = true;
    return info;
  }
  const std::size_t size = data.size();
  if (buffer_.size() < size + simdjson::SIMDJSON_PADDING)
    buffer_.resize(size + simdjson::SIMDJSON_PADDING);
  if (size > 0) std::memcpy(buffer_.data(), data.data(), size);
  if (GeneratedText* generated = interpreter_.generated_;
      generated && generated->first_event.empty() && size <= GeneratedText::kMaxFirstEvent)
    generated->first_event.assign(data);
  try {
    od::document doc = parser_.iterate(buffer_.data(), size, buffer_.size());
    od::object obj = doc.get_object();
    switch (interpreter_.dialect_) {
      case Dialect::responses:
        info = responses(event_name, obj);
        break;
      case Dialect::messages:
        info = messages(event_name, obj);
        break;
      default:
        info = chat_or_completion(obj);
    }
  } catch (const simdjson::simdjson_error&) {
    EventInfo bad;
    bad.malformed = true;
    estimated_tokens_ = 0;
    return bad;
  }
  interpreter_.tokens_ += info.tokens;
  if (info.content) ++interpreter_.content_events_;
  if (info.done) interpreter_.done_ = true;
  return info;
}

}  // namespace llmux::openai
