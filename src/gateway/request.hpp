// SPDX-License-Identifier: Apache-2.0
#pragma once
// A client's request as the gateway keeps it while serving it, and the parser that reads it.
// llmux's HTTP/1 parser (http/parser.hpp, Beast's basic_parser's drop-in) without Beast's fields
// container: the method, the target and every field's line (name ": " value CRLF) are copied, as
// they are parsed, into one block, and when the header is complete the fields become a list of
// views into it, in order. Nothing is allocated per field, lookups walk a short list instead of a
// tree, and a connection's next request reuses the memory of the last one. Trailer fields of a
// chunked body are dropped as they are parsed (they never become header fields). The body is read
// whole into a string (string_body's behaviour).
//
// Thread safety: one thread. A Request is movable, not copyable (its views point into its block).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include "core/bytes.hpp"
#include "http/parser.hpp"

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

/// Reads one request into a Request (emptied first; its memory kept). Limits as Beast's:
/// header_limit(), body_limit().
class RequestParser final : public llmux::http::Parser<true> {
 public:
  explicit RequestParser(Request& into);
  ~RequestParser() override;
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

 private:
  using error_code = boost::system::error_code;
  using sv = boost::beast::string_view;  // Beast's (boost::core::string_view in 1.81)
  void on_request_impl(bhttp::verb method, sv method_string, sv target, int version,
                       error_code&) override;
  void on_response_impl(int, sv, int, error_code&) override {}
  void on_field_impl(bhttp::field name, sv name_string, sv value, error_code&) override;
  void on_header_impl(error_code&) override;
  void on_body_init_impl(boost::optional<std::uint64_t> const& content_length,
                         error_code&) override;
  std::size_t on_body_impl(sv body, error_code&) override;
  void on_chunk_header_impl(std::uint64_t, sv, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, sv body, error_code&) override;
  void on_finish_impl(error_code&) override {}

  std::uint32_t keep(std::string_view s);

  /// Where a field's name and value lie in the staged bytes while the header is read.
  struct FieldAt {
    bhttp::field name;
    std::uint32_t at, name_size, value_size;
  };
  /// What is read of a header before it is complete: its bytes and where each field lies. The
  /// request gets them, exactly sized, when the header is complete (a held-open stream keeps its
  /// request: no slack). Pooled per thread: no allocation in the steady state.
  struct Stage {
    ByteBuilder bytes;
    std::vector<FieldAt> at;
  };
  friend struct ParserStages;
  Request& r_;
  Stage stage_;
  std::uint32_t method_size_ = 0, target_size_ = 0;
};

}  // namespace llmux::gateway
