#pragma once
// Taps: what the gateway reads from response bytes while relaying them, without delaying or
// copying them. Pure functions and small state machines; one per request, one thread.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace llmux::gateway {

/// End of the last complete SSE event in data[0, n): just past its blank line ("\n\n" or
/// "\n\r\n"); 0 when no event is complete yet.
std::size_t last_event_boundary(const char* data, std::size_t n);

/// Reads token counts from `usage` in relayed bytes (completions/chat usage, or the Responses
/// API's input/output_tokens). SSE is relayed in whole events, so an event's usage is never
/// split between two pieces; a non-streaming body usually arrives in one piece (a usage object
/// split across two reads is missed: the access log then has no token counts, nothing else).
struct UsageTap {
  std::optional<std::int64_t> prompt, completion;
  void feed(std::string_view piece);
};

/// The Responses API's stream numbers its events (`sequence_number`); the gateway's own error
/// event, sent when the backend dies mid-stream, continues the numbering.
struct SequenceTap {
  std::optional<std::int64_t> last;
  void feed(std::string_view piece);
  std::int64_t next() const { return last ? *last + 1 : 0; }
};

/// The integer after `key` (skipping spaces and a colon) in `hay`; nullopt when absent or not
/// a number. Used by the taps; exposed for tests.
std::optional<std::int64_t> find_int_after(std::string_view hay, std::string_view key);

}  // namespace llmux::gateway
