// SPDX-License-Identifier: Apache-2.0 AND BSL-1.0
// The syntax pieces of llmux::http::Parser that do not depend on isRequest (parser_impl.hpp).
// Ported from Beast 1.81's detail/basic_parser.ipp (Copyright (c) 2016-2019 Vinnie Falco,
// Boost Software License 1.0, http://www.boost.org/LICENSE_1_0.txt): the same results in the
// same cases, each scan done with parser_scan.hpp instead of a byte loop.
#include <cstring>
#include <limits>

#include <boost/beast/http/error.hpp>

#include "http/parser_impl.hpp"
#include "http/parser_scan.hpp"

namespace llmux::http {
#if defined(LLMUX_NO_SIMD)
inline namespace parser_scalar {
#else
inline namespace parser_simd {
#endif

bool parser_uses_simd() noexcept {
#if defined(LLMUX_PARSER_SSE2)
  return true;
#else
  return false;
#endif
}

namespace parser_detail {
namespace {

using boost::beast::http::error;

const char* trim_back(const char* it, const char* first) {
  while (it != first) {
    const char c = it[-1];
    if (c != ' ' && c != '\t') break;
    --it;
  }
  return it;
}

// Beast's parse_token_to_eol: up to the CRLF that ends a value or reason phrase; null when a
// byte that may not be in one comes first (a CTL but HTAB, or DEL); need_more when the end of
// the line is not in [p, last).
const char* parse_token_to_eol(const char* p, const char* last, const char*& token_last,
                               error_code& ec) {
  p = find_value_stop(p, last);
  if (p >= last) {
    ec = error::need_more;
    return p;
  }
  if (*p != '\r') return nullptr;  // invalid character
  if (++p >= last) {
    ec = error::need_more;
    return last;
  }
  if (*p++ != '\n') {
    ec = error::bad_line_ending;
    return last;
  }
  token_last = p - 2;
  return p;
}

// Leading SP and HTAB of a value; false (need_more) when they reach `last`.
bool skip_ows(const char*& p, const char* last) {
  for (;; ++p) {
    if (p + 1 > last) return false;
    if (!(*p == ' ' || *p == '\t')) return true;
  }
}

}  // namespace

const char* find_eol(const char* it, const char* last, error_code& ec) {
  it = find_cr(it, last);
  if (it == last) {
    ec = {};
    return nullptr;
  }
  if (++it == last) {
    ec = {};
    return nullptr;
  }
  if (*it != '\n') {
    ec = error::bad_line_ending;
    return nullptr;
  }
  ec = {};
  return ++it;
}

bool parse_dec(string_view s, std::uint64_t& v) {
  const char* it = s.data();
  const char* last = it + s.size();
  if (it == last) return false;
  std::uint64_t tmp = 0;
  do {
    if ((!is_digit(*it)) || tmp > (std::numeric_limits<std::uint64_t>::max)() / 10) return false;
    tmp *= 10;
    const std::uint64_t d = static_cast<std::uint64_t>(*it - '0');
    if ((std::numeric_limits<std::uint64_t>::max)() - tmp < d) return false;
    tmp += d;
  } while (++it != last);
  v = tmp;
  return true;
}

bool parse_hex(const char*& it, std::uint64_t& v) {
  signed char d = tables.hex[static_cast<unsigned char>(*it)];
  if (d < 0) return false;
  std::uint64_t tmp = 0;
  do {
    if (tmp > (std::numeric_limits<std::uint64_t>::max)() / 16) return false;
    tmp *= 16;
    // (Beast's check that tmp + d does not overflow can never fire: tmp is a multiple of 16.)
    tmp += static_cast<std::uint64_t>(d);
    d = tables.hex[static_cast<unsigned char>(*++it)];
  } while (d >= 0);
  v = tmp;
  return true;
}

void parse_method(const char*& it, const char* last, string_view& result, error_code& ec) {
  // token SP
  const char* const first = it;
  it = find_non_token(it, last);
  if (it >= last) {
    ec = error::need_more;
    return;
  }
  if (*it != ' ' || it == first) {  // not SP, or empty
    ec = error::bad_method;
    return;
  }
  result = make_string(first, it++);
}

void parse_target(const char*& it, const char* last, string_view& result, error_code& ec) {
  // target SP
  const char* const first = it;
  it = find_non_path(it, last);
  if (it >= last) {
    ec = error::need_more;
    return;
  }
  if (*it != ' ' || it == first) {  // not SP, or empty
    ec = error::bad_target;
    return;
  }
  result = make_string(first, it++);
}

void parse_version(const char*& it, const char* last, int& result, error_code& ec) {
  if (it + 8 > last) {
    ec = error::need_more;
    return;
  }
  // "HTTP/" DIGIT "." DIGIT (Beast checks one byte at a time: a mismatch anywhere is
  // bad_version all the same, and `it` is not used after an error).
  if (std::memcmp(it, "HTTP/", 5) != 0) {
    ec = error::bad_version;
    return;
  }
  it += 5;
  if (!is_digit(*it)) {
    ec = error::bad_version;
    return;
  }
  result = 10 * (*it++ - '0');
  if (*it++ != '.') {
    ec = error::bad_version;
    return;
  }
  if (!is_digit(*it)) {
    ec = error::bad_version;
    return;
  }
  result += *it++ - '0';
}

void parse_status(const char*& it, const char* last, unsigned short& result, error_code& ec) {
  // 3DIGIT SP
  if (it + 4 > last) {
    ec = error::need_more;
    return;
  }
  if (!is_digit(*it)) {
    ec = error::bad_status;
    return;
  }
  result = static_cast<unsigned short>(100 * (*it++ - '0'));
  if (!is_digit(*it)) {
    ec = error::bad_status;
    return;
  }
  result = static_cast<unsigned short>(result + 10 * (*it++ - '0'));
  if (!is_digit(*it)) {
    ec = error::bad_status;
    return;
  }
  result = static_cast<unsigned short>(result + (*it++ - '0'));
  if (*it++ != ' ') {
    ec = error::bad_status;
    return;
  }
}

void parse_reason(const char*& it, const char* last, string_view& result, error_code& ec) {
  const char* const first = it;
  const char* token_last = nullptr;
  const char* p = parse_token_to_eol(it, last, token_last, ec);
  if (ec) return;
  if (!p) {
    ec = error::bad_reason;
    return;
  }
  result = make_string(first, token_last);
  it = p;
}

void parse_field(const char*& p, const char* last, string_view& name, string_view& value,
                 FoldBuffer& buf, error_code& ec) {
  // header-field = field-name ":" OWS field-value OWS; field-name = token;
  // field-value = *( field-content / obs-fold ); obs-fold = CRLF 1*( SP / HTAB )
  const char* first = p;
  if (p >= last) {
    ec = error::need_more;
    return;
  }
  p = find_non_token(p, last);
  if (p >= last) {
    ec = error::need_more;
    return;
  }
  if (*p != ':' || p == first) {  // a byte that is not a tchar, or an empty name
    ec = error::bad_field;
    return;
  }
  name = make_string(first, p);
  ++p;  // eat ':'
  {
    // The common case first: OWS, a value, CRLF and a byte after it that is not SP or HTAB (no
    // obs-fold). Exactly the conditions under which the loop below ends with this value; in
    // any other case (folds, errors, need_more) the loop runs from the same place.
    const char* v = p;
    while (v < last && (*v == ' ' || *v == '\t')) ++v;
    const char* const stop = find_value_stop(v, last);
    if (last - stop > 2 && stop[0] == '\r' && stop[1] == '\n' && stop[2] != ' ' &&
        stop[2] != '\t') {
      value = make_string(v, trim_back(stop, v));
      p = stop + 2;
      return;
    }
  }
  const char* token_last = nullptr;
  for (;;) {
    if (!skip_ows(p, last)) {
      ec = error::need_more;
      return;
    }
    // parse to CRLF
    first = p;
    p = parse_token_to_eol(p, last, token_last, ec);
    if (ec) return;
    if (!p) {
      ec = error::bad_value;
      return;
    }
    // Look 1 char past the CRLF to handle obs-fold.
    if (p + 1 > last) {
      ec = error::need_more;
      return;
    }
    token_last = trim_back(token_last, first);
    if (*p != ' ' && *p != '\t') {
      value = make_string(first, token_last);
      return;
    }
    ++p;
    if (token_last != first) break;
  }
  // obs-fold: the value's lines joined by single spaces, in buf.
  buf.clear();
  if (!buf.try_append(first, token_last)) {
    ec = error::header_limit;
    return;
  }
  for (;;) {
    if (!skip_ows(p, last)) {
      ec = error::need_more;
      return;
    }
    first = p;
    p = parse_token_to_eol(p, last, token_last, ec);
    if (ec) return;
    if (!p) {
      ec = error::bad_value;
      return;
    }
    if (p + 1 > last) {
      ec = error::need_more;
      return;
    }
    token_last = trim_back(token_last, first);
    if (first != token_last) {
      if (!buf.try_push_back(' ') || !buf.try_append(first, token_last)) {
        ec = error::header_limit;
        return;
      }
    }
    if (*p != ' ' && *p != '\t') {
      value = {buf.data(), buf.size()};
      return;
    }
    ++p;
  }
}

void parse_chunk_extensions(const char*& it, const char* last, error_code& ec) {
  // chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
  // chunk-ext-val = token / quoted-string (Beast's reading of RFC 7230 erratum 4667)
loop:
  if (it == last) {
    ec = error::need_more;
    return;
  }
  if (*it != ' ' && *it != '\t' && *it != ';') return;
  // BWS
  if (*it == ' ' || *it == '\t') {
    for (;;) {
      ++it;
      if (it == last) {
        ec = error::need_more;
        return;
      }
      if (*it != ' ' && *it != '\t') break;
    }
  }
  // ';'
  if (*it != ';') {
    ec = error::bad_chunk_extension;
    return;
  }
semi:
  ++it;  // skip ';'
  // BWS
  for (;;) {
    if (it == last) {
      ec = error::need_more;
      return;
    }
    if (*it != ' ' && *it != '\t') break;
    ++it;
  }
  // chunk-ext-name
  if (!is_token(*it)) {
    ec = error::bad_chunk_extension;
    return;
  }
  for (;;) {
    ++it;
    if (it == last) {
      ec = error::need_more;
      return;
    }
    if (!is_token(*it)) break;
  }
  // BWS [ ";" / "=" ]
  {
    bool bws;
    if (*it == ' ' || *it == '\t') {
      for (;;) {
        ++it;
        if (it == last) {
          ec = error::need_more;
          return;
        }
        if (*it != ' ' && *it != '\t') break;
      }
      bws = true;
    } else {
      bws = false;
    }
    if (*it == ';') goto semi;
    if (*it != '=') {
      if (bws) ec = error::bad_chunk_extension;
      return;
    }
    ++it;  // skip '='
  }
  // BWS
  for (;;) {
    if (it == last) {
      ec = error::need_more;
      return;
    }
    if (*it != ' ' && *it != '\t') break;
    ++it;
  }
  // chunk-ext-val
  if (*it != '"') {
    // token
    if (!is_token(*it)) {
      ec = error::bad_chunk_extension;
      return;
    }
    for (;;) {
      ++it;
      if (it == last) {
        ec = error::need_more;
        return;
      }
      if (!is_token(*it)) break;
    }
  } else {
    // quoted-string
    for (;;) {
      ++it;
      if (it == last) {
        ec = error::need_more;
        return;
      }
      if (*it == '"') break;
      if (*it == '\\') {
        ++it;
        if (it == last) {
          ec = error::need_more;
          return;
        }
      }
    }
    ++it;
  }
  goto loop;
}

}  // namespace parser_detail
}  // namespace parser_simd / parser_scalar
}  // namespace llmux::http
