#pragma once
// An incremental Server-Sent Events parser (WHATWG "event stream interpretation").
//
// Feed it the response body in whatever chunks the socket delivers — a chunk may end in the
// middle of a line, of a field name, or between the '\r' and '\n' of a CRLF — and it calls back
// once per complete event. Lines end in LF, CRLF or a lone CR; a line starting with ':' is a
// comment; `data:` lines of one event are joined with '\n'; an empty line dispatches the event;
// one space after the colon is dropped; a leading UTF-8 BOM is skipped. An event whose block
// has no `data:` line is not dispatched (as the spec says). The `event:` name is given as sent
// (empty when there was none, where a browser would say "message"). `retry:` is ignored.
//
// Cost: no allocation per event once the internal buffers have grown to the largest line and
// event; a line wholly inside one chunk is parsed in place.
//
// Thread safety and ownership: one parser per stream, used by one thread at a time. The views
// in SseEvent point into the parser's buffers or into the chunk being fed; they are valid only
// during the callback.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmux::bench {

struct SseEvent {
  std::string_view event;  ///< the `event:` field; empty when absent
  std::string_view data;   ///< the `data:` lines joined with '\n'
  std::string_view id;     ///< the last `id:` seen on the stream (it persists across events)
};

class SseParser {
 public:
  struct Limits {
    std::size_t max_line = 1 << 20;     ///< bytes in one line
    std::size_t max_event = 16u << 20;  ///< bytes of data in one event
  };

  SseParser() = default;
  explicit SseParser(Limits limits) : limits_(limits) {}

  /// Parses `bytes`, calling `on_event(const SseEvent&)` for each complete event. Returns the
  /// number of events dispatched. After a limit is exceeded the parser is failed() and ignores
  /// further input.
  template <typename F>
  std::size_t feed(std::string_view bytes, F&& on_event);

  /// True when a line or event was exceeding Limits; the stream should be treated as broken.
  bool failed() const { return failed_; }
  /// True when bytes of an unfinished event are buffered: if the stream ended now, that event
  /// would be lost (a broken stream, unless the server simply omitted the final blank line).
  bool mid_event() const { return !line_.empty() || has_data_ || !event_.empty(); }
  /// Number of comment lines seen (servers send them as keep-alives).
  std::uint64_t comments() const { return comments_; }
  /// Number of events dispatched so far.
  std::uint64_t events() const { return events_; }
  /// Forgets everything (for reuse on a new stream); keeps buffer capacity.
  void reset();

 private:
  /// Processes one complete line; returns true when it completes an event to dispatch.
  bool on_line(std::string_view line);
  SseEvent current() const { return SseEvent{event_, data_, id_}; }
  void clear_event();

  Limits limits_{};
  std::string line_;   // a partial line carried over between chunks
  std::string data_;   // data of the event being built
  std::string event_;  // event name of the event being built
  std::string id_;     // last event id
  bool has_data_ = false;
  bool skip_lf_ = false;  // the previous chunk ended in '\r'; a leading '\n' belongs to it
  bool first_line_ = true;
  bool failed_ = false;
  std::uint64_t comments_ = 0;
  std::uint64_t events_ = 0;
};

template <typename F>
std::size_t SseParser::feed(std::string_view in, F&& on_event) {
  std::size_t dispatched = 0;
  std::size_t i = 0;
  const std::size_t n = in.size();
  while (i < n && !failed_) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (in[i] == '\n') {
        ++i;
        continue;
      }
    }
    const std::size_t j = in.find_first_of("\r\n", i);
    if (j == std::string_view::npos) {
      if (line_.size() + (n - i) > limits_.max_line) {
        failed_ = true;
        break;
      }
      line_.append(in.substr(i));
      break;
    }
    std::string_view line;
    if (line_.empty()) {
      line = in.substr(i, j - i);
    } else {
      line_.append(in.substr(i, j - i));
      line = line_;
    }
    if (line.size() > limits_.max_line) {
      failed_ = true;
      break;
    }
    skip_lf_ = in[j] == '\r';
    i = j + 1;
    const bool dispatch = on_line(line);
    line_.clear();
    if (failed_) break;
    if (dispatch) {
      ++dispatched;
      ++events_;
      on_event(current());
      clear_event();
    }
  }
  return dispatched;
}

}  // namespace llmux::bench
