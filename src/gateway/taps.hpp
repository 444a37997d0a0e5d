// SPDX-License-Identifier: Apache-2.0
#pragma once
// Taps: what the gateway reads from response bytes while relaying them, without delaying them.
// One ResponseTap per relayed response, on the worker's thread.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "openai/sse.hpp"
#include "openai/stream.hpp"

namespace llmux::gateway {

/// End of the last complete SSE event in data[0, size): just past its blank line ("\n\n" or
/// "\n\r\n"); 0 when no event is complete yet.
std::size_t last_event_boundary(const char* data, std::size_t size);

/// The OpenAI dialect of a request path: /v1/responses… → responses, /v1/chat/completions →
/// chat, anything else → completions (whose reader also finds `usage` in embeddings and
/// other JSON answers).
openai::Dialect dialect_of(std::string_view path);

/// Reads a response as the relay hands it on: token usage (prompt, cached, completion), the
/// response id, the Responses stream's sequence numbers, and event by event what a stream
/// carries. It uses the same readers as `llmux bench` (openai::SseParser and
/// openai::StreamInterpreter), parsing with the worker's JsonScratch. An event stream is read
/// event by event as it passes (the relay hands over whole events, which the SSE reader takes
/// in place); a JSON body is read once when it is complete — in place when it came in one
/// piece, else from a copy of at most kMaxBody bytes (a larger body goes unread: no token
/// counts in the access log, nothing else). Anything else is not read.
class ResponseTap {
 public:
  enum class Kind { none, sse, json };
  static constexpr std::size_t kMaxBody = 1u << 20;

  /// `content_type` of the response decides the Kind.
  ResponseTap(openai::Dialect dialect, std::string_view content_type, openai::JsonScratch& scratch);

  /// The next relayed bytes; `last` when the body ends with them.
  void feed(std::string_view piece, bool last);

  /// Keeps what the stream generates in `generated` from now on (openai::GeneratedText).
  void keep_generated(openai::GeneratedText* generated) { reader_.keep_generated(generated); }

  Kind kind() const { return kind_; }
  const openai::StreamInterpreter& reader() const { return reader_; }
  std::optional<std::int64_t> prompt_tokens() const;
  std::optional<std::int64_t> completion_tokens() const;
  std::optional<std::int64_t> cached_tokens() const;
  /// The number the gateway's own Responses `error` event takes: one past the last
  /// `sequence_number` relayed, 0 when none was.
  std::int64_t next_sequence_number() const;

 private:
  void read_body(std::string_view body);

  Kind kind_;
  openai::SseParser sse_;
  openai::StreamInterpreter reader_;
  std::string body_;  // a JSON body that came in several pieces
  bool body_too_big_ = false;
};

}  // namespace llmux::gateway
