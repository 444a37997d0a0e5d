// SPDX-License-Identifier: Apache-2.0
#pragma once
// llmux::http::MessageParser: llmux's own HTTP/1.1 message parser, written from RFC 9112 (message
// syntax and framing) and RFC 9110 (fields, lists), for the gateway's hot path: the gateway's
// request reader (gateway/request.hpp), its backend response reader (gateway/
// upstream_response.hpp) and the benchmark's client (http/client.cpp) are built on it.
//
// How it is used: the caller owns the connection's buffer and calls parse() with the bytes it
// holds that are not consumed yet. Each call returns one ParseStep: an event (need_more, header,
// body, message_end, error) and how many bytes of the input it consumed; the caller drops exactly
// those bytes from the front of its buffer (for every event, need_more included) and calls again
// (after a read, for need_more). A typical loop:
//
//   for (;;) {
//     const ParseStep step = parser.parse(unconsumed_bytes);
//     ... use the header getters or step.body here: they are views into the caller's buffer ...
//     buffer.consume(step.consumed);
//     if (step.event == ParseEvent::need_more) read more, or parser.parse_eof() on a close;
//     if (step.event == ParseEvent::message_end || step.event == ParseEvent::error) break;
//   }
//   parser.reset();  // the next message on the connection
//
// One pass: the header is consumed only once its blank line has arrived (it is a single event,
// its views stay valid as long as the caller's bytes stay where they are), but the scan keeps its
// place: a header arriving in many pieces is scanned once, each byte once, the start line and
// every field line checked as soon as they are complete (or as soon as a byte is wrong). The
// method, target, reason, field names and values are views into the caller's buffer: nothing is
// copied, and the field table is a vector reused from message to message (no allocation per
// field once it has grown). Body bytes come back as views too (step.body): a Content-Length
// body, the data of each chunk, or everything until the close. Chunk extensions are checked
// (RFC 9112 §7.1.1) and skipped. Trailer fields are checked like header fields and are
// available through trailer_fields() after the message_end event (views, as the header's).
//
// Limits (ParseLimits): header_bytes counts the start line and the field lines, CRLFs included,
// not the blank line that ends the header (error::header_limit); the same limit applies to the
// trailer section on its own (header_limit) and to each chunk-size line (error::
// bad_chunk_extension). body_bytes: a Content-Length above it is refused at the header, chunked
// and close-delimited bodies are counted as they arrive (error::body_limit).
//
// Errors are boost::beast::http::error codes, as Beast's parser gives them, so that the
// gateway's answers stay the same: a message Beast 1.81's basic_parser rejects is rejected here
// too, in the same class (header_limit, body_limit, end_of_stream, or malformed: a syntax error
// or partial_message), and the same fields, body and framing come out of a message both accept
// (tests/fuzz/message_parser_diff.hpp checks it, in tests/unit/http/message_parser_test.cpp and
// the message_parser fuzz target). Scans: parser_scan.hpp's (SSE2, or one byte at a time under
// LLMUX_NO_SIMD; the same results).
//
// Deliberate differences from Beast (each one rejects, or keeps fewer connections alive, where
// RFC 9112 allows or requires it; each has a unit test named after it):
//  1. Obsolete line folding (a field line starting with SP or HTAB) is rejected with
//     error::bad_obs_fold, in the header and in trailers (Beast joins the lines with spaces).
//     RFC 9112 §5.2: a server MAY reject it with 400, a proxy MAY reject such a response (502).
//  2. A request whose Transfer-Encoding does not end in the single coding "chunked" (chunked
//     not last, chunked twice, no coding at all, a coding with parameters) is rejected with
//     error::bad_transfer_encoding (Beast reads "gzip" as no body and "chunked, gzip" as a
//     body without a length). RFC 9112 §6.3 (4): chunked not final in a request MUST be
//     answered with 400; §6.1: chunked MUST NOT be applied more than once. Other codings
//     before chunked ("gzip, chunked") are framed as chunked, as Beast frames them: whether
//     the server implements them is its decision (RFC 9112 §6.1: 501; the gateway's
//     check_request_framing answers it).
//  3. A response whose Transfer-Encoding is not a valid list of codings (RFC 9112 §6.1,
//     RFC 9110 §5.6.1), has a coding with parameters (no registered coding takes any, and Beast
//     reads "gzip;q=1, chunked" as close-delimited), or has chunked twice, is rejected with
//     error::bad_transfer_encoding: its framing cannot be determined reliably, which RFC 9112
//     §6.3 and §11.2 say to handle as an error (the gateway answers 502).
//  4. Content-Length and Transfer-Encoding together are always an error (Beast accepts a
//     non-chunked Transfer-Encoding followed by Content-Length): error::bad_transfer_encoding
//     when the Transfer-Encoding comes second, error::bad_content_length when the
//     Content-Length does (Beast's codes). RFC 9112 §6.3 (3): such a message ought to be
//     handled as an error; a server MAY reject it.
//  5. An HTTP/1.0 message is kept alive only with "keep-alive" and without "close" in its
//     Connection options and without Transfer-Encoding (Beast ignores "close" there and keeps a
//     1.0 chunked message alive). RFC 9112 §9.3 (close first), §6.1 (a 1.0 message with
//     Transfer-Encoding: close the connection after it).
//  6. header_bytes counts the whole header, start line and fields together (Beast counts the
//     start line and the fields each against the limit, so it accepts up to about twice the
//     limit when the header comes in one read), and also bounds the trailer section and each
//     chunk-size line with its extensions (Beast has no bound there). RFC 9110 §5.4 (a server
//     MUST answer fields larger than it wishes to process with a 4xx), RFC 9112 §7.1.1 (limit
//     chunk extensions, answer 4xx).
//  7. A chunk extension's quoted-string takes what RFC 9110 §5.6.4 allows (qdtext: HTAB, SP,
//     visible bytes but '"' and '\', obs-text; quoted-pair: '\' and one of those or '"' or
//     '\'); a control byte or DEL in it is error::bad_chunk_extension (Beast takes any byte
//     there). RFC 9112 §7.1.1 gives the chunk-ext grammar; a message that does not match it is
//     invalid.
//
// Thread safety: one connection's thread, as its buffer.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/system/error_code.hpp>
#include "http/parser_namespace.hpp"

namespace llmux::http {
inline namespace LLMUX_PARSER_NAMESPACE {

enum class MessageKind : std::uint8_t { request, response };

/// One field line: the name as Beast's enum (field::unknown for others) and as received, and the
/// value without the whitespace around it. Views into the caller's buffer.
struct FieldView {
  boost::beast::http::field name;
  std::string_view name_string;
  std::string_view value;
};

struct ParseLimits {
  std::uint32_t header_bytes = 8192;        // the start line and the field lines
  std::optional<std::uint64_t> body_bytes;  // none: no limit
};

enum class ParseEvent {
  need_more,    // the input ends inside the message: read more (or parse_eof on a close)
  header,       // the header is complete: the getters below describe it
  body,         // ParseStep::body holds body bytes (may be empty for a zero-length chunk part)
  message_end,  // the message is complete (trailer_fields() are available)
  error         // ParseStep::error says why; the parser stays failed until reset()
};

struct ParseStep {
  ParseEvent event = ParseEvent::need_more;
  std::size_t consumed = 0;  // bytes of the input the caller drops now (whatever the event)
  std::string_view body;     // event body: the bytes, a view into the input
  boost::system::error_code error;
};

class MessageParser {
 public:
  explicit MessageParser(MessageKind kind, ParseLimits limits = {});

  /// Parses `input`: the bytes of the connection's buffer not consumed yet (those of an earlier
  /// need_more included). One event per call.
  ParseStep parse(std::string_view input);
  /// The peer closed: message_end for a body that runs until the close, else
  /// error::end_of_stream before any byte of a message, error::partial_message inside one.
  ParseStep parse_eof();
  /// Ready for the next message on the connection; the limits, the kind and the capacity of the
  /// field tables stay.
  void reset();
  /// The message has no body whatever its header says (a response to HEAD). Call it before the
  /// header event, or right after it (before the next parse()).
  void expect_no_body();
  /// The field tables' memory (what fields() and trailer_fields() are made from) goes back to
  /// this thread's spares, and the views they gave end; the next message takes tables from the
  /// spares again when its fields come. For a caller that keeps the parser while a long body
  /// streams: a held-open stream then holds no table. Call it after the header event, once the
  /// fields have been read.
  void release_field_tables();
  void set_limits(ParseLimits limits) { limits_ = limits; }
  const ParseLimits& limits() const { return limits_; }

  bool header_done() const { return header_seen_; }
  bool message_done() const { return stage_ == Stage::done; }
  /// Whether any byte of the current message has been given to parse().
  bool started() const { return started_; }

  /// The request target once the whole header section was scanned, also when the header was
  /// then refused (its framing, the body's declared length over the limit): valid while the
  /// caller's bytes stay where they were; empty before.
  std::string_view scanned_target() const {
    return header_base_ ? view(target_) : std::string_view();
  }

  // After the header event, valid while the caller's bytes stay where they were:
  std::string_view method() const { return view(method_); }
  boost::beast::http::verb verb() const { return verb_; }
  std::string_view target() const { return view(target_); }
  unsigned version() const { return version_; }  // 10 or 11
  unsigned status() const { return status_; }
  std::string_view reason() const { return view(reason_); }
  std::span<const FieldView> fields() const {
    return tables_ ? std::span<const FieldView>(tables_->fields) : std::span<const FieldView>();
  }
  /// After message_end, for a chunked body with trailer fields (else empty).
  std::span<const FieldView> trailer_fields() const {
    return tables_ ? std::span<const FieldView>(tables_->trailer_fields)
                   : std::span<const FieldView>();
  }

  // Framing, decided at the header:
  /// The last transfer coding is chunked (whether or not the message has a body).
  bool chunked() const { return te_chunked_; }
  std::optional<std::uint64_t> content_length() const;
  bool keep_alive() const;
  /// Connection: upgrade was received.
  bool upgrade() const { return connection_upgrade_; }
  /// The body runs until the peer closes (a response without a length).
  bool body_until_eof() const { return until_eof_; }
  /// Body bytes received so far (data of chunks only, for a chunked body).
  std::uint64_t body_received() const { return body_received_; }

 private:
  // Where parse() stands.
  enum class Stage : std::uint8_t {
    start_line,
    field_lines,
    length_body,     // remaining_ bytes of a Content-Length body
    eof_body,        // until the close
    chunk_line,      // a chunk-size line (or the last chunk's)
    chunk_data,      // remaining_ bytes of a chunk's data
    chunk_data_end,  // the CRLF after a chunk's data
    trailer_lines,   // the trailer section after the last chunk
    done,
    failed
  };
  // Where the scan of the current line stands (the start line's steps, then a field line's).
  enum class LineStep : std::uint8_t {
    method,
    target,
    version,
    status,
    reason,
    start_line_end,  // the CRLF of the start line
    line_start,
    name,
    before_value,
    value,
    after_cr
  };
  // A piece of the current section, as offsets from its first byte (the buffer may move
  // between calls; views are made when the section is complete).
  struct Span {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
  };
  struct FieldSlot {
    boost::beast::http::field name;
    Span name_span, value_span;
  };
  enum class SectionResult { complete, need_more, failed };
  /// The field tables: the slots found by the scans, the views made of them when a section is
  /// complete. Behind a pointer, taken from this thread's spares when the first field line is
  /// scanned: a parser waiting for its header (a backend's answer still being computed) holds
  /// none, nor one kept while a body streams (release_field_tables).
  struct FieldTables {
    std::vector<FieldSlot> field_slots, trailer_slots;
    std::vector<FieldView> fields, trailer_fields;
  };
  static std::vector<std::unique_ptr<FieldTables>>& spare_field_tables();
  /// The tables, taken from the spares (or made) when the parser holds none.
  FieldTables& tables();

  std::string_view view(Span span) const { return {header_base_ + span.offset, span.length}; }
  ParseStep fail(boost::beast::http::error error, std::size_t consumed);
  ParseStep parse_header(std::string_view input);
  ParseStep parse_chunked(std::string_view input);
  SectionResult scan_start_line(const char* section, std::size_t size);
  SectionResult scan_field_lines(const char* section, std::size_t size, bool trailers);
  /// The error `ec` found at `offset` of the section: header_limit when it lies beyond the limit.
  SectionResult section_error(boost::beast::http::error ec, std::size_t offset);
  /// The section ends at `size` inside a line: header_limit, or need_more (offsets kept).
  SectionResult section_need_more(std::size_t size);
  /// A complete field line: framing fields (message_parser_fields.cpp); false on an error.
  bool take_field(boost::beast::http::field name, std::string_view value, bool trailers);
  bool take_content_length(std::string_view value);
  bool take_transfer_encoding(std::string_view value);
  bool take_connection(std::string_view value);
  /// The header is complete: decides the framing; false on an error.
  bool finish_header();
  void make_views(const char* base, const std::vector<FieldSlot>& slots,
                  std::vector<FieldView>& views);

  // (Members ordered so that a parser kept while a body streams takes little room.)
  ParseLimits limits_;
  MessageKind kind_;
  Stage stage_ = Stage::start_line;
  LineStep step_ = LineStep::method;
  /// Why the parser failed (Stage::failed): always one of Beast's HTTP errors.
  boost::beast::http::error error_ = {};

  // The scan of the current section (header or trailers), offsets from its first byte.
  std::size_t position_ = 0;  // where the scan resumes
  std::size_t line_start_ = 0;
  std::size_t token_start_ = 0;  // of the start line's version, status or reason
  std::size_t value_start_ = 0;
  Span name_;

  // The start line.
  const char* header_base_ = nullptr;
  Span method_, target_, reason_;
  boost::beast::http::verb verb_ = boost::beast::http::verb::unknown;
  unsigned version_ = 0;
  unsigned status_ = 0;

  std::unique_ptr<FieldTables> tables_;

  // Framing.
  std::optional<std::uint64_t> content_length_;
  bool te_present_ = false;      // a Transfer-Encoding field was received
  bool te_chunked_ = false;      // its last coding is chunked
  bool te_has_chunked_ = false;  // chunked appeared in it
  bool connection_close_ = false;
  bool connection_keep_alive_ = false;
  bool connection_upgrade_ = false;
  bool no_body_expected_ = false;
  bool until_eof_ = false;
  bool header_seen_ = false;
  bool first_field_line_ = true;
  bool started_ = false;
  std::uint64_t remaining_ = 0;  // of the body or of the current chunk
  std::uint64_t body_received_ = 0;
};

}  // namespace LLMUX_PARSER_NAMESPACE
}  // namespace llmux::http
