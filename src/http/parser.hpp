// SPDX-License-Identifier: Apache-2.0 AND BSL-1.0
#pragma once
// llmux::http::Parser<isRequest>: a drop-in replacement for Beast's HTTP/1 parser
// (boost::beast::http::basic_parser<isRequest>, Boost 1.81) for the gateway's hot path.
//
// Why: callgrind put ~6,000 instructions per proxied request inside Beast's parser, most of it
// in basic_parser_base::parse_field (~2,100 for ~8 fields: byte at a time, table lookups;
// Beast's find_fast SIMD path is a stub), parse_fields, do_field and validate_list. This parser
// follows Beast's own implementation state for state (parser.cpp, parser_framing.cpp and
// parser_syntax.cpp port impl/basic_parser.ipp and detail/basic_parser.ipp, Copyright (c)
// 2016-2019 Vinnie Falco, Boost Software License 1.0, http://www.boost.org/LICENSE_1_0.txt),
// with the scans made fast: field names, values, the request-target and the search for CR /
// CRLFCRLF go 16 bytes at a time with SSE2 (baseline on x86-64; parser_scan.hpp, which also has
// the portable scalar fallback used elsewhere, e.g. on aarch64, or with -DLLMUX_NO_SIMD), and
// Connection / Content-Length / Transfer-Encoding values that are a single token skip Beast's
// list parsing (same result). Field names map to the enum as Beast's string_to_field maps them
// (the same names and equality; a cheaper hash: parser_field_name.cpp).
//
// Behaviour: the same as Beast's, byte for byte: the same callbacks (the same virtual functions
// with the same signatures, so a class derived from basic_parser<b> compiles unchanged on
// Parser<b>), with the same arguments in the same order, the same bytes consumed by every put(),
// the same boost::beast::http::error codes in the same situations, the same getters. Views given
// to callbacks point into the caller's buffer, but for a value with obs-fold (a scratch buffer,
// as in Beast). tests/fuzz/parser_fuzz.cpp checks this differentially against Beast's parser
// (with every option, limit and way of cutting the input), and tests/unit/http/parser_test.cpp
// on a table of cases, with both the SIMD and the scalar scans.
//
// Thread safety: one thread, like Beast's. Not reusable after a message (as Beast's).
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <type_traits>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/optional.hpp>

namespace llmux::http {
// The scalar build (LLMUX_NO_SIMD) gets its own symbols, so that a test can link both.
#if defined(LLMUX_NO_SIMD)
inline namespace parser_scalar {
#else
inline namespace parser_simd {
#endif

namespace parser_detail {
class FoldBuffer;
}

/// Whether this build's scans use SSE2 (false: the portable scalar fallback).
bool parser_uses_simd() noexcept;

template <bool isRequest>
class Parser {
 public:
  using is_request = std::integral_constant<bool, isRequest>;
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  virtual ~Parser() = default;
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  bool got_some() const { return state_ != state::nothing_yet; }
  bool is_done() const { return state_ == state::complete; }
  bool is_header_done() const { return state_ > state::fields; }
  bool upgrade() const { return (f_ & flagConnectionUpgrade) != 0; }
  bool chunked() const { return (f_ & flagChunked) != 0; }
  bool keep_alive() const;
  boost::optional<std::uint64_t> content_length() const;
  boost::optional<std::uint64_t> content_length_remaining() const;
  bool need_eof() const { return (f_ & flagNeedEOF) != 0; }
  void body_limit(boost::optional<std::uint64_t> v) { body_limit_ = v; }
  void header_limit(std::uint32_t v) { header_limit_ = v; }
  bool eager() const { return (f_ & flagEager) != 0; }
  void eager(bool v) {
    if (v)
      f_ |= flagEager;
    else
      f_ &= ~flagEager;
  }
  bool skip() const { return (f_ & flagSkipBody) != 0; }
  void skip(bool v);

  /// As Beast's: a sequence of more than one buffer is flattened first.
  template <class ConstBufferSequence>
  std::size_t put(const ConstBufferSequence& buffers, error_code& ec);
  std::size_t put(boost::asio::const_buffer buffer, error_code& ec);
  void put_eof(error_code& ec);

 protected:
  Parser() = default;
  Parser(Parser&&) = default;
  Parser& operator=(Parser&&) = default;

  virtual void on_request_impl(boost::beast::http::verb method, string_view method_str,
                               string_view target, int version, error_code& ec) = 0;
  virtual void on_response_impl(int code, string_view reason, int version, error_code& ec) = 0;
  virtual void on_field_impl(boost::beast::http::field name, string_view name_string,
                             string_view value, error_code& ec) = 0;
  virtual void on_header_impl(error_code& ec) = 0;
  virtual void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                 error_code& ec) = 0;
  virtual std::size_t on_body_impl(string_view body, error_code& ec) = 0;
  virtual void on_chunk_header_impl(std::uint64_t size, string_view extensions, error_code& ec) = 0;
  virtual std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body,
                                         error_code& ec) = 0;
  virtual void on_finish_impl(error_code& ec) = 0;

  /// In on_field_impl, given its name and value: the field's line as received, when it is
  /// exactly name ": " value CRLF (one space after the colon, no trailing whitespace, no
  /// obs-fold): a view into the caller's buffer that a callback may copy whole instead of
  /// joining the pieces. Empty for any other line. (Not in Beast's interface.)
  string_view field_line(string_view name, string_view value) const {
    if (!field_line_ok_) return {};
    return string_view(name.data(),
                       static_cast<std::size_t>(value.data() + value.size() + 2 - name.data()));
  }

 private:
  template <bool>
  friend class Parser;

  enum class state {
    nothing_yet = 0,
    start_line,
    fields,
    body0,
    body,
    body_to_eof0,
    body_to_eof,
    chunk_header0,
    chunk_header,
    chunk_body,
    complete
  };

  static constexpr std::size_t max_stack_buffer = 8192;
  static constexpr unsigned flagSkipBody = 1 << 0;
  static constexpr unsigned flagEager = 1 << 1;
  static constexpr unsigned flagGotSome = 1 << 2;
  static constexpr unsigned flagHasBody = 1 << 3;
  static constexpr unsigned flagHTTP11 = 1 << 4;
  static constexpr unsigned flagNeedEOF = 1 << 5;
  static constexpr unsigned flagExpectCRLF = 1 << 6;
  static constexpr unsigned flagConnectionClose = 1 << 7;
  static constexpr unsigned flagConnectionUpgrade = 1 << 8;
  static constexpr unsigned flagConnectionKeepAlive = 1 << 9;
  static constexpr unsigned flagContentLength = 1 << 10;
  static constexpr unsigned flagChunked = 1 << 11;
  static constexpr unsigned flagUpgrade = 1 << 12;
  static constexpr unsigned flagFinalChunk = 1 << 13;

  static constexpr std::uint64_t default_body_limit() {
    return isRequest ? 1 * 1024 * 1024 : 8 * 1024 * 1024;  // Beast's: 1MB, 8MB
  }

  boost::optional<std::uint64_t> content_length_unchecked() const {
    if (f_ & flagContentLength) return len0_;
    return boost::none;
  }
  void maybe_need_more(const char* p, std::size_t n, error_code& ec);
  void parse_start_line(const char*& p, const char* last, error_code& ec, std::true_type);
  void parse_start_line(const char*& p, const char* last, error_code& ec, std::false_type);
  void parse_fields(const char*& p, const char* last, error_code& ec);
  void finish_header(error_code& ec, std::true_type);
  void finish_header(error_code& ec, std::false_type);
  void parse_body(const char*& p, std::size_t n, error_code& ec);
  void parse_body_to_eof(const char*& p, std::size_t n, error_code& ec);
  void parse_chunk_header(const char*& p, std::size_t n, error_code& ec);
  void parse_chunk_body(const char*& p, std::size_t n, error_code& ec);
  void do_field(boost::beast::http::field f, string_view value, error_code& ec);

  boost::optional<std::uint64_t> body_limit_ =
      boost::optional<std::uint64_t>(default_body_limit());  // max payload body
  std::uint64_t len_ = 0;                                    // size of chunk or body
  std::uint64_t len0_ = 0;                                   // content length if known
  std::unique_ptr<char[]> buf_;                              // flattened buffer sequence
  std::size_t buf_len_ = 0;                                  // size of buf_
  std::size_t skip_ = 0;                                     // resume search here
  std::uint32_t header_limit_ = 8192;                        // max header size
  unsigned short status_ = 0;                                // response status
  state state_ = state::nothing_yet;                         // initial state
  unsigned f_ = 0;                                           // flags
  bool field_line_ok_ = false;                               // field_line() has the line
};

template <bool isRequest>
template <class ConstBufferSequence>
std::size_t Parser<isRequest>::put(const ConstBufferSequence& buffers, error_code& ec) {
  static_assert(boost::asio::is_const_buffer_sequence<ConstBufferSequence>::value,
                "ConstBufferSequence type requirements not met");
  auto const p = boost::asio::buffer_sequence_begin(buffers);
  auto const last = boost::asio::buffer_sequence_end(buffers);
  if (p == last) {
    ec = {};
    return 0;
  }
  if (std::next(p) == last) return put(boost::asio::const_buffer(*p), ec);
  const std::size_t size = boost::asio::buffer_size(buffers);
  if (size <= max_stack_buffer) {
    char stack[max_stack_buffer];
    boost::asio::buffer_copy(boost::asio::mutable_buffer(stack, sizeof(stack)), buffers);
    return put(boost::asio::const_buffer{stack, size}, ec);
  }
  if (size > buf_len_) {
    buf_.reset(new char[size]);
    buf_len_ = size;
  }
  boost::asio::buffer_copy(boost::asio::buffer(buf_.get(), size), buffers);
  return put(boost::asio::const_buffer{buf_.get(), size}, ec);
}

extern template class Parser<true>;
extern template class Parser<false>;

}  // namespace parser_simd / parser_scalar
}  // namespace llmux::http
