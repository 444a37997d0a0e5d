// SPDX-License-Identifier: Apache-2.0
#include "openai/stream.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

#include "core/tokenizer.hpp"
#include "openai/stream_event_parser.hpp"

namespace llmux::openai {
namespace od = simdjson::ondemand;

std::string_view to_string(Dialect dialect) {
  switch (dialect) {
    case Dialect::completions:
      return "completions";
    case Dialect::chat:
      return "chat";
    case Dialect::responses:
      return "responses";
    case Dialect::messages:
      return "messages";
  }
  return "completions";
}

std::optional<Dialect> parse_dialect(std::string_view name) {
  if (name == "completions") return Dialect::completions;
  if (name == "chat") return Dialect::chat;
  if (name == "responses") return Dialect::responses;
  if (name == "messages") return Dialect::messages;
  return std::nullopt;
}

std::string_view endpoint_path(Dialect dialect) {
  switch (dialect) {
    case Dialect::completions:
      return "/v1/completions";
    case Dialect::chat:
      return "/v1/chat/completions";
    case Dialect::responses:
      return "/v1/responses";
    case Dialect::messages:
      return "/v1/messages";
  }
  return "/v1/completions";
}

struct JsonScratch::Impl {
  od::parser parser;
  std::string buf;  // the text being parsed, with SIMDJSON_PADDING bytes after it
};

JsonScratch::JsonScratch() : impl_(std::make_unique<Impl>()) {}
JsonScratch::~JsonScratch() = default;

StreamInterpreter::StreamInterpreter(Dialect dialect, bool capture_text)
    : owned_(std::make_unique<JsonScratch>()),
      scratch_(owned_.get()),
      dialect_(dialect),
      capture_(capture_text) {}
StreamInterpreter::StreamInterpreter(Dialect dialect, JsonScratch& shared, bool capture_text,
                                     bool capture_ids)
    : scratch_(&shared), dialect_(dialect), capture_(capture_text), capture_ids_(capture_ids) {}

StreamInterpreter::Extra& StreamInterpreter::extra() {
  if (!extra_) extra_ = std::make_unique<Extra>();
  return *extra_;
}

namespace {
const std::string kEmpty;
const std::optional<StreamError> kNoError;
}  // namespace

const std::optional<StreamError>& StreamInterpreter::error() const {
  return extra_ ? extra_->error : kNoError;
}
const std::string& StreamInterpreter::id() const {
  return extra_ ? extra_->id : kEmpty;
}
const std::string& StreamInterpreter::finish_reason() const {
  return extra_ ? extra_->finish_reason : kEmpty;
}
const std::string& StreamInterpreter::text() const {
  return extra_ ? extra_->text : kEmpty;
}
StreamInterpreter::~StreamInterpreter() = default;
StreamInterpreter::StreamInterpreter(StreamInterpreter&&) noexcept = default;
StreamInterpreter& StreamInterpreter::operator=(StreamInterpreter&&) noexcept = default;

EventInfo StreamInterpreter::on_event(std::string_view event_name, std::string_view data) {
  return EventParser(*this, scratch_->impl_->parser, scratch_->impl_->buf)
      .on_event(event_name, data);
}
EventInfo StreamInterpreter::on_body(std::string_view body) {
  return EventParser(*this, scratch_->impl_->parser, scratch_->impl_->buf).on_body(body);
}
EventInfo StreamInterpreter::on_body_usage(std::string_view body) {
  return EventParser(*this, scratch_->impl_->parser, scratch_->impl_->buf).on_body_usage(body);
}
void StreamInterpreter::reset() {
  usage_ = {};
  tokens_ = 0;
  content_events_ = 0;
  done_ = false;
  if (extra_) *extra_ = Extra{};
  last_completion_tokens_.reset();
  sequence_number_.reset();
}
void StreamInterpreter::reset(Dialect dialect) {
  reset();
  dialect_ = dialect;
}

}  // namespace llmux::openai
