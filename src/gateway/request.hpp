// SPDX-License-Identifier: Apache-2.0
#pragma once
// A client's request as the gateway keeps it while serving it, and the parser that reads it.
// llmux's HTTP/1.1 parser (http/message_parser.hpp) without a fields container: when the header
// is complete, its bytes (the request line and the field lines) are copied into the request's
// block in one piece, and the fields become a list of views into it, in order; a field line that
// is not exactly name ": " value CRLF (other spacing) gets that form appended to the block, so
// that every field's line() is what a proxy forwards. Nothing is allocated per field, lookups
// walk a short list instead of a tree, and a connection's next request reuses the memory of the
// last one. The body is read whole into a string.
//
// Thread safety: one thread. A Request is movable, not copyable (its views point into its block).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/system/error_code.hpp>
#include "http/message_parser.hpp"

namespace llmux::gateway {

namespace bhttp = boost::beast::http;

/// Room a body gets past its end when it is read (Content-Length known): the padding simdjson
/// needs to parse it in place (static_assert in request_view.cpp).
inline constexpr std::uint64_t kBodyPadding = 64;

/// One header field, as received (views into its Request, which keeps each field as a line:
/// the name, ": ", the value and CRLF, the lines in the order received).
struct HeaderField {
  bhttp::field name = bhttp::field::unknown;  // Beast's known fields; unknown for the rest
  std::string_view name_string, value;
  /// name ": " value CRLF: what a proxy forwards of the field (a view into its Request).
  std::string_view line() const {
    return {name_string.data(),
            static_cast<std::size_t>(value.data() + value.size() + 2 - name_string.data())};
  }
};

class Request {
 public:
  Request() = default;
  Request(Request&&) = default;
  Request& operator=(Request&&) = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  bhttp::verb method() const { return method_; }
  std::string_view method_string() const { return method_string_; }
  std::string_view target() const { return target_; }
  /// The target without its query: what routes and the access log read.
  std::string_view path() const { return target_.substr(0, target_.find('?')); }
  unsigned version() const { return version_; }
  /// What the client asked for the connection after this request (Connection, HTTP version).
  bool keep_alive() const { return keep_alive_; }
  std::string& body() { return body_; }
  const std::string& body() const { return body_; }
  /// The body is not needed any more: its memory goes to this thread's spare bodies (a small
  /// one; a large one is freed), which the next request read on the thread reuses instead of
  /// allocating its own. The body is empty afterwards, and holds no memory.
  void release_body();

  std::span<const HeaderField> fields() const { return fields_; }
  const HeaderField* begin() const { return fields_.data(); }
  const HeaderField* end() const { return fields_.data() + fields_.size(); }
  /// The first field's value by name (case-insensitive), or "" when there is none.
  std::string_view operator[](bhttp::field name) const;
  std::string_view operator[](std::string_view name) const;
  std::size_t count(bhttp::field name) const;
  std::size_t count(std::string_view name) const;

 private:
  friend class RequestParser;
  std::vector<char> block_;  // method, target, names and values
  std::vector<HeaderField> fields_;
  std::string body_;
  std::string_view method_string_, target_;
  bhttp::verb method_ = bhttp::verb::unknown;
  unsigned version_ = 11;
  bool keep_alive_ = true;
};

/// Reads one request into a Request (emptied first; its memory kept), with llmux's HTTP/1.1
/// parser (http/message_parser.hpp). put() is given the bytes of the connection's buffer that are
/// not consumed yet and parses as far as they go: the header once it is whole (copied into the
/// request in one piece, so the connection's buffer may change after put() returns), then the
/// body as it comes. Trailer fields of a chunked body are read and dropped (they never become
/// header fields).
class RequestParser {
 public:
  explicit RequestParser(Request& into);
  ~RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  /// Limits: the header's bytes (the request line and the fields) and the body's (none: no
  /// limit). Set before the first put().
  void header_limit(std::uint32_t bytes);
  void body_limit(std::optional<std::uint64_t> bytes);

  /// Parses `input` (the unconsumed bytes, those of an earlier call that were not consumed
  /// first) and returns how many of them it consumed. `error` is http::error::need_more when the
  /// request goes on past `input`, another boost::beast::http::error when the bytes are not a
  /// request it accepts, clear when the request is complete.
  std::size_t put(std::string_view input, boost::system::error_code& error);
  /// The client closed: the end of a request is never delimited by the close, so this is
  /// error::partial_message inside a request and error::end_of_stream before one.
  void put_eof(boost::system::error_code& error);

  bool got_some() const { return parser_->started(); }
  /// The request target once the header section is whole, also when the header was then refused
  /// (http::MessageParser::scanned_target(); a view into the bytes last given to put()). For
  /// answering a request that cannot be read in its API's dialect.
  std::string_view scanned_target() const { return parser_->scanned_target(); }
  bool is_header_done() const { return parser_->header_done(); }
  bool is_done() const { return parser_->message_done(); }
  bool keep_alive() const { return parser_->keep_alive(); }

 private:
  /// The header event: the request takes the header's bytes (`header`, a view into the caller's
  /// buffer) and its fields become views into its own block.
  void take_header(std::string_view header);
  /// The body's memory, reserved once its length is known (with simdjson's padding).
  void reserve_body(std::uint64_t content_length);

  Request& request_;
  /// One of this thread's parsers, given back when the request has been read (its field tables
  /// keep their memory: no allocation per request).
  std::unique_ptr<http::MessageParser> parser_;
};

}  // namespace llmux::gateway
