// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads an OpenAI-compatible streaming response event by event, in one of four dialects:
//
//   completions  /v1/completions        `data: {"choices":[{"text": ...}]}` ... `data: [DONE]`
//   chat         /v1/chat/completions   `choices[].delta.content` (also `reasoning_content`,
//                                       `reasoning` and tool-call text); the first chunk carries
//                                       only `{"role":"assistant"}` and is NOT content
//   responses    /v1/responses          typed events: `response.output_text.delta` (and the
//                                       reasoning / refusal / function-argument deltas) carry
//                                       text; `response.completed` / `response.incomplete`
//                                       carry `response.usage`; `error` and `response.failed`
//                                       are errors
//   messages     /v1/messages           Anthropic's Messages API (vLLM serves it too):
//                                       `content_block_delta` events carry text, thinking and
//                                       tool input; `message_start` and `message_delta` carry
//                                       usage; `message_stop` ends it; `error` is an error
//
// For each SSE event it says how many tokens the event carries and whether it is content (the
// bench takes TTFT at the first content event), usage, an error, or the end. Token counts are
// llmux::Tokenizer::count of the event's text — an estimate, exact for the simulator — except
// when the chunk also carries `usage` (vLLM's `continuous_usage_stats`): then the count is the
// growth of the cumulative `completion_tokens`, exact. The final usage-only chunk
// (`"choices": []`) carries no tokens. An OpenAI error object inside the stream (nested
// `{"error": {...}}` or the old flat `{"object": "error", ...}`) is reported as an error event.
//
// JSON is parsed with simdjson's On-Demand API from an internal padded buffer.
//
// Thread safety and ownership: one interpreter per stream, used by one thread at a time; it owns
// its parser and buffers, or borrows a JsonScratch shared by the thread's streams (reuse it with
// reset() to avoid allocations). Returned string views and references are valid until the next
// call.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "openai/sse.hpp"

namespace llmux::openai {

enum class Dialect { completions, chat, responses, messages };

std::string_view to_string(Dialect dialect);
/// "completions", "chat", "responses" or "messages"; nullopt otherwise.
std::optional<Dialect> parse_dialect(std::string_view name);
/// The request path of a dialect: "/v1/completions", "/v1/chat/completions", "/v1/responses",
/// "/v1/messages".
std::string_view endpoint_path(Dialect dialect);

/// Token usage as the server reported it (Responses' input/output tokens are mapped to
/// prompt/completion; Messages' prompt tokens are its input tokens plus those read from and
/// written to the cache).
struct StreamUsage {
  std::optional<std::uint64_t> prompt_tokens;
  std::optional<std::uint64_t> completion_tokens;
  std::optional<std::uint64_t> cached_tokens;  ///< prompt_tokens_details / input_tokens_details
};

/// An error object received inside the stream.
struct StreamError {
  std::string message;
  std::string type;  ///< e.g. "BadRequestError"; for Responses `error` events, the event type
  std::string code;  ///< `code` as text (vLLM sends the HTTP status as a number)
};

/// What one SSE event meant.
struct EventInfo {
  std::uint32_t tokens = 0;   ///< tokens this event carries
  bool content = false;       ///< carries generated text (counts for TTFT)
  bool tokens_exact = false;  ///< `tokens` came from continuous usage, not an estimate
  bool usage = false;         ///< carries usage (see StreamInterpreter::usage())
  bool error = false;         ///< an error event (see StreamInterpreter::error())
  bool done = false;          ///< `[DONE]`, or the Responses stream's final event
  bool malformed = false;     ///< data is not JSON of an expected shape
};

/// What a chat or completions stream has generated so far, kept by the interpreter when asked
/// (StreamInterpreter::keep_generated): what the gateway needs to have another backend continue
/// the stream (gateway/migration.hpp). Text is kept unescaped, as the events carry it.
struct GeneratedText {
  std::string content;     ///< chat `delta.content`, completions `text`
  std::string reasoning;   ///< chat `delta.reasoning` / `reasoning_content`
  bool tool_call = false;  ///< a `tool_calls` delta came
  /// The first event's data as it came (its id, created, model, system_fingerprint), at most
  /// kMaxFirstEvent bytes (a longer one is not kept).
  std::string first_event;
  std::size_t limit = 0;    ///< bytes of text kept at most
  bool over_limit = false;  ///< more came than `limit`: what is kept is incomplete
  /// Responses: an event other than `response.created` and `response.in_progress` came (an
  /// output item began, or the response ended).
  bool output_began = false;
  /// Responses: the last event's `sequence_number` (-1: none yet).
  std::int64_t last_sequence_number = -1;
  static constexpr std::size_t kMaxFirstEvent = 4096;
};

/// The JSON parser and its padded buffer. Parsing is synchronous, so one per thread can serve
/// every interpreter on that thread: the gateway keeps one per worker and a relayed stream costs
/// no parser of its own.
class JsonScratch {
 public:
  JsonScratch();
  ~JsonScratch();
  JsonScratch(const JsonScratch&) = delete;
  JsonScratch& operator=(const JsonScratch&) = delete;

 private:
  friend class StreamInterpreter;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class EventParser;

class StreamInterpreter {
 public:
  /// An interpreter with a JSON parser of its own.
  explicit StreamInterpreter(Dialect dialect, bool capture_text = false);
  /// An interpreter that parses with `shared` (which must outlive it; same thread only). Its own
  /// state is ~150 bytes; it allocates only for what it keeps beyond counts: ids and the finish
  /// reason (unless `capture_ids` is false), an error, the text.
  StreamInterpreter(Dialect dialect, JsonScratch& shared, bool capture_text = false,
                    bool capture_ids = true);
  ~StreamInterpreter();
  StreamInterpreter(StreamInterpreter&&) noexcept;
  StreamInterpreter& operator=(StreamInterpreter&&) noexcept;

  /// Interprets one event (the SSE `event:` name and its joined data).
  EventInfo on_event(std::string_view event_name, std::string_view data);
  EventInfo on_event(const SseEvent& event) { return on_event(event.event, event.data); }

  /// Interprets a whole non-streaming response body (or an HTTP error body) of this dialect:
  /// `choices[].text` / `choices[].message`, or the Responses `output[].content[].text` and
  /// `output[].arguments`. Sets usage(), error(), id(), finish_reason() and text() as the stream
  /// path does; the result is done, and its tokens are usage's completion/output tokens
  /// (tokens_exact) or, without usage, the estimate of the text.
  EventInfo on_body(std::string_view body);
  /// Only the usage of a non-streamed body (what the gateway's tap needs of a chat or
  /// completions answer): the object of its last `"usage"` key, parsed alone, a tenth of the
  /// body's JSON; the whole body as on_body() when it has none (an error answer) or that object
  /// does not parse.
  EventInfo on_body_usage(std::string_view body);

  /// From the next event on, keeps what the stream generates in `generated` (null: stops). The
  /// caller owns it; it must outlive its use here.
  void keep_generated(GeneratedText* generated) { generated_ = generated; }

  /// Forgets the stream's state (keeps buffers), optionally switching dialect.
  void reset();
  void reset(Dialect dialect);

  Dialect dialect() const { return dialect_; }
  /// Latest usage seen on the stream (fields stay empty until some usage arrives).
  const StreamUsage& usage() const { return usage_; }
  /// Sum of `tokens` over the events so far.
  std::uint64_t tokens() const { return tokens_; }
  /// Events that were content (TTFT is at the first).
  std::uint64_t content_events() const { return content_events_; }
  bool done() const { return done_; }
  /// The first error event's details, if any.
  const std::optional<StreamError>& error() const;
  /// The response or chunk id (`cmpl-…`, `chatcmpl-…`, `resp_…`), once seen.
  const std::string& id() const;
  /// Last non-null finish_reason (completions/chat) or the final status (responses).
  const std::string& finish_reason() const;
  /// The generated text, when constructed with capture_text.
  const std::string& text() const;
  /// The Responses stream's last `sequence_number`, once seen.
  std::optional<std::uint64_t> sequence_number() const { return sequence_number_; }

 private:
  friend class EventParser;  // the parsing code (openai/stream_event_parser.hpp)
  std::unique_ptr<JsonScratch> owned_;
  JsonScratch* scratch_;
  Dialect dialect_;
  bool capture_;
  StreamUsage usage_;
  std::uint64_t tokens_ = 0;
  std::uint64_t content_events_ = 0;
  bool done_ = false;
  bool capture_ids_ = true;
  // What is kept beyond counts, allocated when first needed: a stream the gateway relays
  // usually needs none of it while it is held open.
  struct Extra {
    std::optional<StreamError> error;
    std::string id, finish_reason, text;
  };
  Extra& extra();
  std::unique_ptr<Extra> extra_;
  GeneratedText* generated_ = nullptr;
  std::optional<std::uint64_t> last_completion_tokens_;
  std::optional<std::uint64_t> sequence_number_;
};

}  // namespace llmux::openai
