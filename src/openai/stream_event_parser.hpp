// SPDX-License-Identifier: Apache-2.0
#pragma once
// The parsing behind openai::StreamInterpreter (openai/stream.hpp): one EventParser per call, over
// the interpreter's state and its scratch's simdjson parser. Its work is in three files:
//   stream_event_parser.cpp    an event's or a whole body's framing ([DONE], padding, errors)
//                              and what every dialect shares (text, usage, ids, errors);
//   stream_chat_events.cpp     /v1/completions and /v1/chat/completions chunks and bodies;
//   stream_responses_events.cpp  /v1/responses typed events and bodies;
//   stream_messages_events.cpp   Anthropic's /v1/messages events and bodies.
// Internal to src/openai.
#include <cstdint>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "openai/stream.hpp"

namespace llmux::openai {

class EventParser {
 public:
  EventParser(StreamInterpreter& interpreter, simdjson::ondemand::parser& parser,
              std::string& buffer)
      : interpreter_(interpreter), parser_(parser), buffer_(buffer) {}

  /// One SSE event of the interpreter's dialect (StreamInterpreter::on_event).
  EventInfo on_event(std::string_view event_name, std::string_view data);
  /// A whole non-streamed response body (StreamInterpreter::on_body).
  EventInfo on_body(std::string_view body);
  /// A chat/completions body's usage only (StreamInterpreter::on_body_usage).
  EventInfo on_body_usage(std::string_view body);

 private:
  using Value = simdjson::ondemand::value;
  using Object = simdjson::ondemand::object;

  // What every dialect shares (stream_event_parser.cpp).
  void set_finish_reason(std::string_view reason);
  void set_id(std::string_view id, bool first_only);
  /// What a piece of generated text is (GeneratedText keeps content and reasoning apart).
  enum class TextKind { content, reasoning, tool_call };
  void add_text(std::string_view text, TextKind kind = TextKind::content);
  void add_text_value(Value& value, TextKind kind = TextKind::content);
  void merge_usage(const StreamUsage& usage);
  /// A whole body's `info` completed by its `usage` (null: it had none): the usage merged, its
  /// tokens the usage's completion tokens (exact) or else the estimate of its text.
  EventInfo whole_body_counts(EventInfo info, const StreamUsage* usage);
  void set_error(StreamError error);

  // completions and chat (stream_chat_events.cpp).
  void parse_delta(Value& delta);
  void parse_choice(Value& choice);
  EventInfo chat_or_completion(Object& object);

  // responses (stream_responses_events.cpp).
  EventInfo responses(std::string_view event_name, Object& object);
  /// A whole /v1/responses body.
  EventInfo responses_body(Object& object);

  // messages (stream_messages_events.cpp).
  EventInfo messages(std::string_view event_name, Object& object);
  EventInfo messages_body(Object& object);
  void messages_content_block(Value& block);

  StreamInterpreter& interpreter_;  // its counts, usage and Extra (id, finish reason, text)
  simdjson::ondemand::parser& parser_;
  std::string& buffer_;  // the text being parsed, with SIMDJSON_PADDING bytes after it

  // This call's event.
  std::uint64_t estimated_tokens_ = 0;
  bool any_text_ = false;
};

}  // namespace llmux::openai
