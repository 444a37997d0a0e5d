// SPDX-License-Identifier: Apache-2.0
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
// Cost: an event whose `event:` line and single `data:` line arrive in one chunk — what a proxy
// that relays whole events hands over — is dispatched in place, with no copy and no allocation;
// otherwise no allocation per event once the internal buffers have grown to the largest line
// and event. Used by the bench (every response it reads) and the gateway's taps (every stream
// it relays), so both read SSE the same way.
//
// Thread safety and ownership: one parser per stream, used by one thread at a time. The views
// in SseEvent point into the parser's buffers or into the chunk being fed; they are valid only
// during the callback.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace llmux::openai {

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
  bool mid_event() const {
    return has_data_ || (bufs_ && (!bufs_->line.empty() || !bufs_->event.empty()));
  }
  /// Lines that ended in CR or CRLF rather than LF (servers send LF; a strict reader may
  /// insist on it).
  std::uint64_t cr_line_ends() const { return cr_line_ends_; }
  /// Number of comment lines seen (servers send them as keep-alives).
  std::uint64_t comments() const { return comments_; }
  /// Number of events dispatched so far.
  std::uint64_t events() const { return events_; }
  /// Forgets everything (for reuse on a new stream); keeps buffer capacity.
  void reset();

 private:
  /// Processes one complete line; returns true when it completes an event to dispatch.
  /// `in_chunk`: the line points into the chunk being fed (valid until feed() returns), so a
  /// value may be kept as a view instead of copied.
  bool on_line(std::string_view line, bool in_chunk);
  SseEvent current() const {
    if (!bufs_)
      return SseEvent{event_in_chunk_ ? event_view_ : "", data_in_chunk_ ? data_view_ : "", ""};
    return SseEvent{event_in_chunk_ ? event_view_ : std::string_view(bufs_->event),
                    data_in_chunk_ ? data_view_ : std::string_view(bufs_->data), bufs_->id};
  }
  std::size_t data_size() const {
    return data_in_chunk_ ? data_view_.size() : bufs_ ? bufs_->data.size() : 0;
  }
  std::size_t line_size() const { return bufs_ ? bufs_->line.size() : 0; }
  /// Copies values still held as views into the parser's buffers (the chunk is going away).
  void own_views();
  void clear_event();

  Limits limits_{};
  // Lines and events that span chunks, and the last event id: allocated when first needed (a
  // relay that hands over whole events never needs them).
  struct Buffers {
    std::string line;   // a partial line carried over between chunks
    std::string data;   // data of the event being built
    std::string event;  // event name of the event being built
    std::string id;     // last event id
  };
  Buffers& bufs() {
    if (!bufs_) bufs_ = std::make_unique<Buffers>();
    return *bufs_;
  }
  std::unique_ptr<Buffers> bufs_;
  // The event's name and data while they are one view into the current chunk (see on_line).
  std::string_view event_view_;
  std::string_view data_view_;
  bool event_in_chunk_ = false;
  bool data_in_chunk_ = false;
  bool has_data_ = false;
  bool skip_lf_ = false;  // the previous chunk ended in '\r'; a leading '\n' belongs to it
  bool first_line_ = true;
  bool failed_ = false;
  std::uint64_t comments_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t cr_line_ends_ = 0;
};

template <typename F>
std::size_t SseParser::feed(std::string_view bytes, F&& on_event) {
  std::size_t dispatched = 0;
  std::size_t pos = 0;
  const std::size_t size = bytes.size();
  // Where the next LF at or after pos is (size: none), found again once pos has passed it: a line
  // ends at the first CR before it, else at it. Two memchr scans instead of string_view's
  // find_first_of, which calls memchr on "\r\n" for every byte (~40 instructions per byte of an
  // event stream, measured with callgrind); each byte is scanned for LF once, so a run of CR-only
  // lines costs no more than one line.
  std::size_t lf_pos = 0;
  bool lf_known = false;
  while (pos < size && !failed_) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes[pos] == '\n') {
        ++pos;
        continue;
      }
    }
    if (!lf_known || lf_pos < pos) {
      const void* lf_found = std::memchr(bytes.data() + pos, '\n', size - pos);
      lf_pos = lf_found
                   ? static_cast<std::size_t>(static_cast<const char*>(lf_found) - bytes.data())
                   : size;
      lf_known = true;
    }
    const void* cr_found = std::memchr(bytes.data() + pos, '\r', lf_pos - pos);
    const std::size_t line_end =
        cr_found ? static_cast<std::size_t>(static_cast<const char*>(cr_found) - bytes.data())
        : lf_pos < size ? lf_pos
                        : std::string_view::npos;
    if (line_end == std::string_view::npos) {
      if (line_size() + (size - pos) > limits_.max_line) {
        failed_ = true;
        break;
      }
      bufs().line.append(bytes.substr(pos));
      break;
    }
    std::string_view line;
    const bool in_chunk = line_size() == 0;
    if (in_chunk) {
      line = bytes.substr(pos, line_end - pos);
    } else {
      bufs().line.append(bytes.substr(pos, line_end - pos));
      line = bufs_->line;
    }
    if (line.size() > limits_.max_line) {
      failed_ = true;
      break;
    }
    skip_lf_ = bytes[line_end] == '\r';
    if (skip_lf_) ++cr_line_ends_;
    pos = line_end + 1;
    const bool dispatch = on_line(line, in_chunk);
    if (bufs_) bufs_->line.clear();
    if (failed_) break;
    if (dispatch) {
      ++dispatched;
      ++events_;
      on_event(current());
      clear_event();
    }
  }
  own_views();
  return dispatched;
}

}  // namespace llmux::openai
