// SPDX-License-Identifier: Apache-2.0 AND BSL-1.0
#pragma once
// Internal to llmux::http::Parser (parser.hpp): the pieces that do not depend on isRequest, as
// Beast's detail::basic_parser_base has them (parser_syntax.cpp). Ported from Beast 1.81's
// detail/basic_parser.ipp (Copyright (c) 2016-2019 Vinnie Falco, Boost Software License 1.0),
// with the same results, the scans made fast (parser_scan.hpp).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include "http/parser.hpp"

namespace llmux::http {
#if defined(LLMUX_NO_SIMD)
inline namespace parser_scalar {
#else
inline namespace parser_simd {
#endif
namespace parser_detail {

/// `x`, at most `limit` (a body's remaining length against the bytes at hand).
inline std::size_t clamp(std::uint64_t x, std::size_t limit) {
  return x < limit ? static_cast<std::size_t>(x) : limit;
}

using error_code = boost::beast::error_code;
using string_view = boost::beast::string_view;

/// Where an obs-fold value is joined (Beast's char_buffer<max_obs_fold>: 4096 bytes; more is
/// error::header_limit).
class FoldBuffer {
 public:
  static constexpr std::size_t capacity = 4096;
  bool try_push_back(char c) {
    if (size_ == capacity) return false;
    buf_[size_++] = c;
    return true;
  }
  bool try_append(const char* first, const char* last) {
    const std::size_t n = static_cast<std::size_t>(last - first);
    if (n > capacity - size_) return false;
    std::memmove(&buf_[size_], first, n);
    size_ += n;
    return true;
  }
  void clear() { size_ = 0; }
  const char* data() const { return buf_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::size_t size_ = 0;
  char buf_[capacity];
};

inline bool is_digit(char c) {
  return static_cast<unsigned char>(c - '0') < 10;
}

inline string_view make_string(const char* first, const char* last) {
  return {first, static_cast<std::size_t>(last - first)};
}

const char* find_eol(const char* it, const char* last, error_code& ec);
bool parse_dec(string_view s, std::uint64_t& v);
bool parse_hex(const char*& it, std::uint64_t& v);
inline bool parse_crlf(const char*& it) {
  if (it[0] != '\r' || it[1] != '\n') return false;
  it += 2;
  return true;
}
void parse_method(const char*& it, const char* last, string_view& result, error_code& ec);
void parse_target(const char*& it, const char* last, string_view& result, error_code& ec);
void parse_version(const char*& it, const char* last, int& result, error_code& ec);
void parse_status(const char*& it, const char* last, unsigned short& result, error_code& ec);
void parse_reason(const char*& it, const char* last, string_view& result, error_code& ec);
void parse_field(const char*& p, const char* last, string_view& name, string_view& value,
                 FoldBuffer& buf, error_code& ec);
void parse_chunk_extensions(const char*& it, const char* last, error_code& ec);
/// Beast's string_to_field, faster (parser_field_name.cpp).
boost::beast::http::field lookup_field(string_view s);

}  // namespace parser_detail
}  // namespace parser_simd / parser_scalar
}  // namespace llmux::http
