// SPDX-License-Identifier: Apache-2.0
#include "gateway/taps.hpp"

#include <limits>

namespace llmux::gateway {
namespace {

std::optional<std::int64_t> as_i64(std::optional<std::uint64_t> value) {
  if (!value || *value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return std::nullopt;
  return static_cast<std::int64_t>(*value);
}

ResponseTap::Kind kind_of(std::string_view content_type) {
  if (content_type.starts_with("text/event-stream")) return ResponseTap::Kind::sse;
  const auto semi = content_type.find(';');
  const std::string_view media = content_type.substr(0, semi);
  if (media.ends_with("/json") || media.ends_with("+json")) return ResponseTap::Kind::json;
  return ResponseTap::Kind::none;
}

}  // namespace

std::size_t last_event_boundary(const char* data, std::size_t size) {
  for (std::size_t i = size; i >= 2; --i) {
    if (data[i - 1] == '\n' &&
        (data[i - 2] == '\n' || (i >= 3 && data[i - 2] == '\r' && data[i - 3] == '\n'))) {
      return i;
    }
  }
  return 0;
}

openai::Dialect dialect_of(std::string_view path) {
  if (path.starts_with("/v1/responses")) return openai::Dialect::responses;
  if (path.starts_with("/v1/chat/completions")) return openai::Dialect::chat;
  if (path.starts_with("/v1/messages")) return openai::Dialect::messages;
  return openai::Dialect::completions;
}

ResponseTap::ResponseTap(openai::Dialect dialect, std::string_view content_type,
                         openai::JsonScratch& scratch)
    : kind_(kind_of(content_type)),
      // Only the Responses API's ids are worth keeping (previous_response_id names them).
      reader_(dialect, scratch, /*capture_text=*/false,
              /*capture_ids=*/dialect == openai::Dialect::responses) {}

void ResponseTap::feed(std::string_view piece, bool last) {
  switch (kind_) {
    case Kind::none:
      return;
    case Kind::sse:
      sse_.feed(piece, [this](const openai::SseEvent& event) { reader_.on_event(event); });
      return;
    case Kind::json:
      if (last && body_.empty() && !body_too_big_) {
        read_body(piece);  // the whole body in one piece: no copy of our own
        return;
      }
      if (!body_too_big_ && body_.size() + piece.size() <= kMaxBody) {
        body_.append(piece);
      } else {
        body_too_big_ = true;
        body_ = std::string();
      }
      if (last && !body_too_big_) read_body(body_);
      return;
  }
}

void ResponseTap::read_body(std::string_view body) {
  // The Responses API's id is learned from its body; of chat and completions answers only the
  // usage is wanted.
  if (reader_.dialect() == openai::Dialect::responses)
    reader_.on_body(body);
  else
    reader_.on_body_usage(body);
}

std::optional<std::int64_t> ResponseTap::prompt_tokens() const {
  return as_i64(reader_.usage().prompt_tokens);
}
std::optional<std::int64_t> ResponseTap::completion_tokens() const {
  return as_i64(reader_.usage().completion_tokens);
}
std::optional<std::int64_t> ResponseTap::cached_tokens() const {
  return as_i64(reader_.usage().cached_tokens);
}

std::int64_t ResponseTap::next_sequence_number() const {
  const auto last = as_i64(reader_.sequence_number());
  return last && *last < std::numeric_limits<std::int64_t>::max() ? *last + 1 : 0;
}

}  // namespace llmux::gateway
