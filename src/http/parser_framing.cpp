// SPDX-License-Identifier: Apache-2.0 AND BSL-1.0
// llmux::http::Parser (parser.hpp): chunked framing and the fields that frame a message
// (Connection, Content-Length, Transfer-Encoding, Upgrade), ported from Beast 1.81's
// impl/basic_parser.ipp (Copyright (c) 2016-2019 Vinnie Falco, Boost Software License 1.0,
// http://www.boost.org/LICENSE_1_0.txt) with the same results; a value that is a single token
// skips Beast's list parsing (what the list would make of it). The rest is in parser.cpp.
#include <algorithm>
#include <cstdint>  // before Beast's rfc7230.hpp, which uses std::int8_t without it (1.83)
#include <iterator>

#include <boost/assert.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include "http/parser.hpp"
#include "http/parser_impl.hpp"
#include "http/parser_scan.hpp"

namespace llmux::http {
#if defined(LLMUX_NO_SIMD)
inline namespace parser_scalar {
#else
inline namespace parser_simd {
#endif

namespace {
using boost::beast::http::error;
using boost::beast::http::field;
using namespace parser_detail;

// A value that is one token (no list separators, no spaces): what Beast's token lists make of
// it is that token alone, and validate_list accepts it.
bool single_token(string_view v) {
  if (v.empty()) return false;
  for (const char c : v)
    if (!is_token(c)) return false;
  return true;
}

bool iequals(string_view a, const char* lower) {
  std::size_t i = 0;
  for (; lower[i]; ++i) {
    if (i == a.size()) return false;
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return i == a.size();
}
}  // namespace

template <bool isRequest>
void Parser<isRequest>::parse_chunk_header(const char*& p0, std::size_t n, error_code& ec) {
  // chunked-body = *chunk last-chunk trailer-part CRLF
  // chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF; last-chunk = 1*("0") [ chunk-ext ] CRLF
  const char* p = p0;
  const char* const pend = p + n;
  const char* eol;
  if (!(f_ & flagFinalChunk)) {
    if (n < skip_ + 2) {
      ec = error::need_more;
      return;
    }
    if (f_ & flagExpectCRLF) {
      // The last CRLF of a chunk is parsed as a part of the next chunk header.
      if (!parse_crlf(p)) {
        ec = error::bad_chunk;
        return;
      }
    }
    eol = find_eol(p0 + skip_, pend, ec);
    if (ec) return;
    if (!eol) {
      ec = error::need_more;
      skip_ = n - 1;
      return;
    }
    skip_ = static_cast<std::size_t>(eol - 2 - p0);
    std::uint64_t size;
    if (!parse_hex(p, size)) {
      ec = error::bad_chunk;
      return;
    }
    if (size != 0) {
      if (body_limit_.has_value()) {
        if (size > *body_limit_) {
          ec = error::body_limit;
          return;
        }
        *body_limit_ -= size;
      }
      const char* const start = p;
      parse_chunk_extensions(p, pend, ec);
      if (ec) return;
      if (p != eol - 2) {
        ec = error::bad_chunk_extension;
        return;
      }
      this->on_chunk_header_impl(size, make_string(start, p), ec);
      if (ec) return;
      len_ = size;
      skip_ = 2;
      p0 = eol;
      f_ |= flagExpectCRLF;
      state_ = state::chunk_body;
      return;
    }
    f_ |= flagFinalChunk;
  } else {
    BOOST_ASSERT(n >= 5);
    if (f_ & flagExpectCRLF) {
      [[maybe_unused]] const bool crlf = parse_crlf(p);
      BOOST_ASSERT(crlf);
    }
    std::uint64_t size;
    [[maybe_unused]] const bool hex = parse_hex(p, size);
    BOOST_ASSERT(hex);
    eol = find_eol(p, pend, ec);
    BOOST_ASSERT(!ec);
  }
  const char* const eom = find_eom(p0 + skip_, pend);
  if (!eom) {
    BOOST_ASSERT(n >= 3);
    skip_ = n - 3;
    ec = error::need_more;
    return;
  }
  const char* const start = p;
  parse_chunk_extensions(p, pend, ec);
  if (ec) return;
  if (p != eol - 2) {
    ec = error::bad_chunk_extension;
    return;
  }
  this->on_chunk_header_impl(0, make_string(start, p), ec);
  if (ec) return;
  p = eol;
  parse_fields(p, eom, ec);
  if (ec) return;
  BOOST_ASSERT(p == eom);
  p0 = eom;
  this->on_finish_impl(ec);
  if (ec) return;
  state_ = state::complete;
}

template <bool isRequest>
void Parser<isRequest>::parse_chunk_body(const char*& p, std::size_t n, error_code& ec) {
  ec = {};
  n = this->on_chunk_body_impl(len_, string_view{p, clamp(len_, n)}, ec);
  p += n;
  len_ -= n;
  if (len_ == 0) state_ = state::chunk_header;
}

template <bool isRequest>
void Parser<isRequest>::do_field(field f, string_view value, error_code& ec) {
  namespace bh = boost::beast::http;
  // Connection
  if (f == field::connection || f == field::proxy_connection) {
    auto on_token = [&](string_view s) {
      if (iequals(s, "close"))
        f_ |= flagConnectionClose;
      else if (iequals(s, "keep-alive"))
        f_ |= flagConnectionKeepAlive;
      else if (iequals(s, "upgrade"))
        f_ |= flagConnectionUpgrade;
    };
    if (single_token(value)) {
      on_token(value);
    } else {
      const auto list = bh::opt_token_list{value};
      if (!bh::validate_list(list)) {
        ec = error::bad_value;
        return;
      }
      for (const auto& s : list) on_token(s);
    }
    ec = {};
    return;
  }

  // Content-Length
  if (f == field::content_length) {
    if (f_ & flagChunked) {  // conflicting field
      ec = error::bad_content_length;
      return;
    }
    auto existing = content_length_unchecked();
    std::uint64_t v;
    if (!value.empty() && is_digit(value.front()) && parse_dec(value, v)) {
      // One number: what the list below makes of it.
      if (existing.has_value() && v != *existing) {
        ec = error::multiple_content_length;
        return;
      }
      existing = v;
    } else {
      // A comma-separated list of equal numbers.
      auto tokens_unprocessed = 1 + std::count(value.begin(), value.end(), ',');
      const auto tokens = bh::opt_token_list(value);
      if (tokens.begin() == tokens.end() || !bh::validate_list(tokens)) {
        ec = error::bad_content_length;
        return;
      }
      for (const auto tok : tokens) {
        if (!parse_dec(tok, v)) {
          ec = error::bad_content_length;
          return;
        }
        --tokens_unprocessed;
        if (existing.has_value()) {
          if (v != *existing) {
            ec = error::multiple_content_length;
            return;
          }
        } else {
          existing = v;
        }
      }
      if (tokens_unprocessed) {
        ec = error::bad_content_length;
        return;
      }
    }
    BOOST_ASSERT(existing.has_value());
    ec = {};
    len_ = *existing;
    len0_ = *existing;
    f_ |= flagContentLength;
    return;
  }

  // Transfer-Encoding
  if (f == field::transfer_encoding) {
    if (f_ & (flagChunked | flagContentLength)) {  // duplicate, or conflicting field
      ec = error::bad_transfer_encoding;
      return;
    }
    ec = {};
    bool last_is_chunked;
    if (single_token(value)) {
      last_is_chunked = iequals(value, "chunked");
    } else {
      // chunked must be the last, and only there once.
      const auto v = bh::token_list{value};
      const auto it =
          std::find_if(v.begin(), v.end(), [](string_view s) { return iequals(s, "chunked"); });
      last_is_chunked = it != v.end() && std::next(it) == v.end();
    }
    if (!last_is_chunked) return;
    len_ = 0;
    f_ |= flagChunked;
    return;
  }

  // Upgrade
  if (f == field::upgrade) {
    ec = {};
    f_ |= flagUpgrade;
    return;
  }
  ec = {};
}

#define LLMUX_PARSER_FRAMING(R)                                                        \
  template void Parser<R>::parse_chunk_header(const char*&, std::size_t, error_code&); \
  template void Parser<R>::parse_chunk_body(const char*&, std::size_t, error_code&);   \
  template void Parser<R>::do_field(field, string_view, error_code&);
LLMUX_PARSER_FRAMING(true)
LLMUX_PARSER_FRAMING(false)
#undef LLMUX_PARSER_FRAMING

}  // namespace parser_simd / parser_scalar
}  // namespace llmux::http
