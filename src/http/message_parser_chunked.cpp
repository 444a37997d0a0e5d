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
bool chunk_is_qdtext(unsigned char c) {
  return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
         (c >= 0x5d && c <= 0x7e) || c >= 0x80;
}

// quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text )
bool chunk_is_quotable(unsigned char c) {
  return c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7f);
}

const char* chunk_skip_whitespace(const char* p, const char* end) {
  while (p < end && message_detail::is_whitespace(*p)) ++p;
  return p;
}

const char* chunk_skip_token(const char* p, const char* end) {
  return parser_detail::find_non_token(p, end);
}

/// chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ) (RFC 9112 §7.1.1),
/// chunk-ext-name = token, chunk-ext-val = token / quoted-string: the whole of [p, end).
bool chunk_extensions_valid(const char* p, const char* end) {
  while (p < end) {
    p = chunk_skip_whitespace(p, end);
    if (p == end || *p != ';') return false;  // whitespace must come before a ';'
    p = chunk_skip_whitespace(p + 1, end);
    const char* name_end = chunk_skip_token(p, end);
    if (name_end == p) return false;
    p = name_end;
    const char* after = chunk_skip_whitespace(p, end);
    if (after == end || *after != '=') continue;  // no value; the loop checks what follows
    p = chunk_skip_whitespace(after + 1, end);
    if (p == end) return false;
    if (*p == '"') {
      for (++p;; ++p) {
        if (p == end) return false;
        const auto c = static_cast<unsigned char>(*p);
        if (c == '"') break;
        if (c == '\\') {
          if (++p == end || !chunk_is_quotable(static_cast<unsigned char>(*p))) return false;
        } else if (!chunk_is_qdtext(c)) {
          return false;
        }
      }
      ++p;
    } else {
      const char* value_end = chunk_skip_token(p, end);
      if (value_end == p) return false;
      p = value_end;
    }
  }
  return true;
}

}  // namespace

ParseStep MessageParser::parse_chunked(std::string_view input) {
  std::size_t at = 0;  // bytes of the input consumed by this call
  for (;;) {
    switch (stage_) {
      case Stage::chunk_line: {
        // chunk-size [ chunk-ext ] CRLF, found whole before it is read (the scan for its CR
        // resumes where it stopped); at most header_bytes long (deliberate difference 6).
        const char* const line = input.data() + at;
        const std::size_t available = input.size() - at;
        const std::size_t window = static_cast<std::size_t>(
            std::min<std::uint64_t>(available, limits_.header_bytes + 1ull));
        const char* const cr = parser_detail::find_cr(line + position_, line + window);
        const std::size_t length = static_cast<std::size_t>(cr - line);
        if (length > limits_.header_bytes) return fail(bhttp::error::bad_chunk_extension, at);
        if (cr == line + window) {
          position_ = window;
          return {ParseEvent::need_more, at, {}, {}};
        }
        if (length + 1 == available) {
          position_ = length;
          return {ParseEvent::need_more, at, {}, {}};
        }
        if (cr[1] != '\n') return fail(bhttp::error::bad_line_ending, at);
        // chunk-size = 1*HEXDIG
        std::uint64_t size = 0;
        const char* p = line;
        for (; p < cr && parser_detail::tables.hex[static_cast<unsigned char>(*p)] >= 0; ++p) {
          if (size >> 60) return fail(bhttp::error::bad_chunk, at);  // overflow
          size = size << 4 | static_cast<std::uint64_t>(
                                 parser_detail::tables.hex[static_cast<unsigned char>(*p)]);
        }
        if (p == line) return fail(bhttp::error::bad_chunk, at);
        // The limit first, as Beast checks it.
        if (limits_.body_bytes && size > *limits_.body_bytes - body_received_)
          return fail(bhttp::error::body_limit, at);
        if (!chunk_extensions_valid(p, cr)) return fail(bhttp::error::bad_chunk_extension, at);
        at += length + 2;
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
        const std::size_t available = input.size() - at;
        if (available == 0) return {ParseEvent::need_more, at, {}, {}};
        const std::size_t n =
            static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, available));
        remaining_ -= n;
        body_received_ += n;
        if (remaining_ == 0) stage_ = Stage::chunk_data_end;
        return {ParseEvent::body, at + n, input.substr(at, n), {}};
      }
      case Stage::chunk_data_end: {
        const std::size_t available = input.size() - at;
        if (available >= 1 && input[at] != '\r') return fail(bhttp::error::bad_chunk, at);
        if (available >= 2 && input[at + 1] != '\n') return fail(bhttp::error::bad_chunk, at);
        if (available < 2) return {ParseEvent::need_more, at, {}, {}};
        at += 2;
        stage_ = Stage::chunk_line;
        position_ = 0;
        break;
      }
      case Stage::trailer_lines: {
        const char* const section = input.data() + at;
        const std::size_t size = static_cast<std::size_t>(
            std::min<std::uint64_t>(input.size() - at, limits_.header_bytes + 2ull));
        const SectionResult result = scan_field_lines(section, size, /*trailers=*/true);
        if (result == SectionResult::need_more) return {ParseEvent::need_more, at, {}, {}};
        if (result == SectionResult::failed) return fail(error_, at);
        make_views(section, tables().trailer_slots, tables().trailer_fields);
        at += position_;
        position_ = 0;
        stage_ = Stage::done;
        return {ParseEvent::message_end, at, {}, {}};
      }
      default:  // not a stage of a chunked body: parse() does not come here for one
        return {ParseEvent::error, at, {}, error_};
    }
  }
}

}  // namespace LLMUX_PARSER_NAMESPACE
}  // namespace llmux::http
