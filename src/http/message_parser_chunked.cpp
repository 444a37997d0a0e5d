// SPDX-License-Identifier: Apache-2.0
// llmux::http::MessageParser (message_parser.hpp): chunked bodies (RFC 9112 §7.1): chunk-size
// lines with their extensions (checked, then skipped), chunk data returned as views, the CRLF
// after it, the last chunk and the trailer section (checked as header fields are; views after
// message_end).
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "http/message_parser.hpp"
#include "http/message_parser_detail.hpp"
#include "http/parser_namespace.hpp"
#include "http/parser_scan.hpp"

namespace llmux::http {
inline namespace LLMUX_PARSER_NAMESPACE {

namespace bhttp = boost::beast::http;

namespace {

// qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text (RFC 9110 §5.6.4)
bool chunk_is_qdtext(unsigned char byte) {
  return byte == '\t' || byte == ' ' || byte == 0x21 || (byte >= 0x23 && byte <= 0x5b) ||
         (byte >= 0x5d && byte <= 0x7e) || byte >= 0x80;
}

// quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
bool chunk_is_quotable(unsigned char byte) {
  return byte == '\t' || byte == ' ' || (byte >= 0x21 && byte != 0x7f);
}

const char* chunk_skip_whitespace(const char* cursor, const char* end) {
  while (cursor < end && message_detail::is_whitespace(*cursor)) ++cursor;
  return cursor;
}

const char* chunk_skip_token(const char* cursor, const char* end) {
  return parser_detail::find_non_token(cursor, end);
}

/// chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ) (RFC 9112 §7.1.1),
/// chunk-ext-name = token, chunk-ext-val = token / quoted-string: the whole of [cursor, end).
bool chunk_extensions_valid(const char* cursor, const char* end) {
  while (cursor < end) {
    cursor = chunk_skip_whitespace(cursor, end);
    if (cursor == end || *cursor != ';') return false;  // whitespace must come before a ';'
    cursor = chunk_skip_whitespace(cursor + 1, end);
    const char* name_end = chunk_skip_token(cursor, end);
    if (name_end == cursor) return false;
    cursor = name_end;
    const char* after = chunk_skip_whitespace(cursor, end);
    if (after == end || *after != '=') continue;  // no value; the loop checks what follows
    cursor = chunk_skip_whitespace(after + 1, end);
    if (cursor == end) return false;
    if (*cursor == '"') {
      for (++cursor;; ++cursor) {
        if (cursor == end) return false;
        const auto byte = static_cast<unsigned char>(*cursor);
        if (byte == '"') break;
        if (byte == '\\') {
          if (++cursor == end || !chunk_is_quotable(static_cast<unsigned char>(*cursor)))
            return false;
        } else if (!chunk_is_qdtext(byte)) {
          return false;
        }
      }
      ++cursor;
    } else {
      const char* value_end = chunk_skip_token(cursor, end);
      if (value_end == cursor) return false;
      cursor = value_end;
    }
  }
  return true;
}

}  // namespace

ParseStep MessageParser::parse_chunked(std::string_view input) {
  std::size_t consumed = 0;  // bytes of the input consumed by this call
  for (;;) {
    switch (stage_) {
      case Stage::chunk_line: {
        // chunk-size [ chunk-ext ] CRLF, found whole before it is read (the scan for its CR
        // resumes where it stopped); at most header_bytes long (deliberate difference 6).
        const char* const line = input.data() + consumed;
        const std::size_t available = input.size() - consumed;
        const std::size_t window = static_cast<std::size_t>(
            std::min<std::uint64_t>(available, limits_.header_bytes + 1ull));
        const char* const line_end = parser_detail::find_cr(line + position_, line + window);
        const std::size_t length = static_cast<std::size_t>(line_end - line);
        if (length > limits_.header_bytes) return fail(bhttp::error::bad_chunk_extension, consumed);
        if (line_end == line + window) {
          position_ = window;
          return {ParseEvent::need_more, consumed, {}, {}};
        }
        if (length + 1 == available) {
          position_ = length;
          return {ParseEvent::need_more, consumed, {}, {}};
        }
        if (line_end[1] != '\n') return fail(bhttp::error::bad_line_ending, consumed);
        // chunk-size = 1*HEXDIG
        std::uint64_t size = 0;
        const char* size_end = line;
        for (; size_end < line_end &&
               parser_detail::tables.hex[static_cast<unsigned char>(*size_end)] >= 0;
             ++size_end) {
          if (size >> 60) return fail(bhttp::error::bad_chunk, consumed);  // overflow
          size = size << 4 | static_cast<std::uint64_t>(
                                 parser_detail::tables.hex[static_cast<unsigned char>(*size_end)]);
        }
        if (size_end == line) return fail(bhttp::error::bad_chunk, consumed);
        // The limit first, as Beast checks it.
        if (limits_.body_bytes && size > *limits_.body_bytes - body_received_)
          return fail(bhttp::error::body_limit, consumed);
        if (!chunk_extensions_valid(size_end, line_end))
          return fail(bhttp::error::bad_chunk_extension, consumed);
        consumed += length + 2;
        position_ = 0;
        if (size == 0) {  // last-chunk: the trailer section follows
          stage_ = Stage::trailer_lines;
          step_ = LineStep::line_start;
          tables().trailer_slots.clear();
          break;
        }
        remaining_ = size;
        stage_ = Stage::chunk_data;
        break;
      }
      case Stage::chunk_data: {
        const std::size_t available = input.size() - consumed;
        if (available == 0) return {ParseEvent::need_more, consumed, {}, {}};
        const std::size_t taken =
            static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, available));
        remaining_ -= taken;
        body_received_ += taken;
        if (remaining_ == 0) stage_ = Stage::chunk_data_end;
        return {ParseEvent::body, consumed + taken, input.substr(consumed, taken), {}};
      }
      case Stage::chunk_data_end: {
        const std::size_t available = input.size() - consumed;
        if (available >= 1 && input[consumed] != '\r')
          return fail(bhttp::error::bad_chunk, consumed);
        if (available >= 2 && input[consumed + 1] != '\n')
          return fail(bhttp::error::bad_chunk, consumed);
        if (available < 2) return {ParseEvent::need_more, consumed, {}, {}};
        consumed += 2;
        stage_ = Stage::chunk_line;
        position_ = 0;
        break;
      }
      case Stage::trailer_lines: {
        const char* const section = input.data() + consumed;
        const std::size_t size = static_cast<std::size_t>(
            std::min<std::uint64_t>(input.size() - consumed, limits_.header_bytes + 2ull));
        const SectionResult result = scan_field_lines(section, size, /*trailers=*/true);
        if (result == SectionResult::need_more) return {ParseEvent::need_more, consumed, {}, {}};
        if (result == SectionResult::failed) return fail(error_, consumed);
        make_views(section, tables().trailer_slots, tables().trailer_fields);
        consumed += position_;
        position_ = 0;
        stage_ = Stage::done;
        return {ParseEvent::message_end, consumed, {}, {}};
      }
      default:  // not a stage of a chunked body: parse() does not come here for one
        return {ParseEvent::error, consumed, {}, error_};
    }
  }
}

}  // namespace LLMUX_PARSER_NAMESPACE
}  // namespace llmux::http
