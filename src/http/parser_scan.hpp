// SPDX-License-Identifier: Apache-2.0
#pragma once
// The byte scans of llmux::http::MessageParser (message_parser.hpp): character classes as
// 256-entry tables (RFC 9110's, as Beast's parser has them too), and "find the first byte of a
// class" 16 bytes at a time with SSE2 where the build has it (x86-64's baseline), else, or with
// -DLLMUX_NO_SIMD, one byte at a time. Both give the same results
// (tests/unit/http/parser_scan_test.cpp checks every byte value at every position). Nothing here
// reads outside [cursor, last).
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__) && !defined(LLMUX_NO_SIMD)
#define LLMUX_PARSER_SSE2 1
#include <emmintrin.h>
#endif

#include "http/parser_namespace.hpp"

namespace llmux::http {
inline namespace LLMUX_PARSER_NAMESPACE {
namespace parser_detail {

struct Tables {
  // tchar (RFC 7230 token characters): Beast's is_token_char and parse_field's table.
  bool token[256];
  // Not a request-target character (Beast's is_pathchar false): CTLs, SP, DEL.
  bool not_path[256];
  // Where a field value or reason phrase stops (Beast's parse_token_to_eol): a CTL but HTAB,
  // or DEL.
  bool value_stop[256];
  // hex digit value, or -1 (Beast's unhex).
  signed char hex[256];

  constexpr Tables() : token(), not_path(), value_stop(), hex() {
    for (int c = 0; c < 256; ++c) {
      const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      bool is_tchar = alnum;
      for (const char* s = "!#$%&'*+-.^_`|~"; *s; ++s)
        if (c == *s) is_tchar = true;
      token[c] = is_tchar;
      not_path[c] = c <= 0x20 || c == 0x7f;
      value_stop[c] = (c < 0x20 && c != '\t') || c == 0x7f;
      hex[c] = (c >= '0' && c <= '9')   ? static_cast<signed char>(c - '0')
               : (c >= 'a' && c <= 'f') ? static_cast<signed char>(c - 'a' + 10)
               : (c >= 'A' && c <= 'F') ? static_cast<signed char>(c - 'A' + 10)
                                        : static_cast<signed char>(-1);
    }
  }
};

inline constexpr Tables tables{};

inline bool is_token(char byte) {
  return tables.token[static_cast<unsigned char>(byte)];
}

#if defined(LLMUX_PARSER_SSE2)
inline __m128i load16(const char* cursor) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(cursor));
}
// Unsigned per-byte comparisons.
inline __m128i le_u8(__m128i bytes, __m128i limit) {
  return _mm_cmpeq_epi8(_mm_min_epu8(bytes, limit), bytes);
}
inline __m128i ge_u8(__m128i bytes, __m128i limit) {
  return _mm_cmpeq_epi8(_mm_max_epu8(bytes, limit), bytes);
}
inline __m128i in_range_u8(__m128i bytes, char low, char high) {
  return le_u8(_mm_sub_epi8(bytes, _mm_set1_epi8(low)),
               _mm_set1_epi8(static_cast<char>(high - low)));
}
inline __m128i eq(__m128i bytes, char byte) {
  return _mm_cmpeq_epi8(bytes, _mm_set1_epi8(byte));
}
inline unsigned mask(__m128i lanes) {
  return static_cast<unsigned>(_mm_movemask_epi8(lanes));
}
#endif

/// The first byte in [cursor, last) that is not a tchar, or last.
inline const char* find_non_token(const char* cursor, const char* last) {
#if defined(LLMUX_PARSER_SSE2)
  // Field names are mostly letters, digits and '-': 16 bytes at a time, the first byte that is
  // none of those; if it is not the ':' after a name, the exact test below goes on from there.
  while (last - cursor >= 16) {
    const __m128i bytes = load16(cursor);
    const __m128i lower = _mm_or_si128(bytes, _mm_set1_epi8(0x20));
    __m128i ok = in_range_u8(lower, 'a', 'z');
    ok = _mm_or_si128(ok, in_range_u8(bytes, '0', '9'));
    ok = _mm_or_si128(ok, eq(bytes, '-'));
    const unsigned hits = mask(ok) ^ 0xffffu;
    if (hits == 0) {
      cursor += 16;
      continue;
    }
    cursor += __builtin_ctz(hits);
    if (*cursor == ':') return cursor;
    break;
  }
  while (last - cursor >= 16) {
    const __m128i bytes = load16(cursor);
    // Not a tchar: <= SP, >= DEL, or one of "(),/:;<=>?@[\]{}
    __m128i bad =
        _mm_or_si128(le_u8(bytes, _mm_set1_epi8(0x20)), ge_u8(bytes, _mm_set1_epi8(0x7f)));
    bad = _mm_or_si128(bad, eq(bytes, '"'));
    bad = _mm_or_si128(bad, in_range_u8(bytes, '(', ')'));
    bad = _mm_or_si128(bad, eq(bytes, ','));
    bad = _mm_or_si128(bad, eq(bytes, '/'));
    bad = _mm_or_si128(bad, in_range_u8(bytes, ':', '@'));
    bad = _mm_or_si128(bad, in_range_u8(bytes, '[', ']'));
    bad = _mm_or_si128(bad, eq(bytes, '{'));
    bad = _mm_or_si128(bad, eq(bytes, '}'));
    if (const unsigned hits = mask(bad)) return cursor + __builtin_ctz(hits);
    cursor += 16;
  }
#endif
  while (cursor < last && tables.token[static_cast<unsigned char>(*cursor)]) ++cursor;
  return cursor;
}

/// The first byte in [cursor, last) that is not a request-target character, or last.
inline const char* find_non_path(const char* cursor, const char* last) {
#if defined(LLMUX_PARSER_SSE2)
  while (last - cursor >= 16) {
    const __m128i bytes = load16(cursor);
    const __m128i bad = _mm_or_si128(le_u8(bytes, _mm_set1_epi8(0x20)), eq(bytes, 0x7f));
    if (const unsigned hits = mask(bad)) return cursor + __builtin_ctz(hits);
    cursor += 16;
  }
#endif
  while (cursor < last && !tables.not_path[static_cast<unsigned char>(*cursor)]) ++cursor;
  return cursor;
}

/// The first byte in [cursor, last) where a field value stops (a CTL but HTAB, or DEL), or last.
inline const char* find_value_stop(const char* cursor, const char* last) {
#if defined(LLMUX_PARSER_SSE2)
  while (last - cursor >= 16) {
    const __m128i bytes = load16(cursor);
    __m128i bad = _mm_andnot_si128(eq(bytes, '\t'), le_u8(bytes, _mm_set1_epi8(0x1f)));
    bad = _mm_or_si128(bad, eq(bytes, 0x7f));
    if (const unsigned hits = mask(bad)) return cursor + __builtin_ctz(hits);
    cursor += 16;
  }
#endif
  while (cursor < last && !tables.value_stop[static_cast<unsigned char>(*cursor)]) ++cursor;
  return cursor;
}

/// The first '\r' in [cursor, last), or last.
inline const char* find_cr(const char* cursor, const char* last) {
#if defined(LLMUX_PARSER_SSE2)
  while (last - cursor >= 16) {
    if (const unsigned hits = mask(eq(load16(cursor), '\r'))) return cursor + __builtin_ctz(hits);
    cursor += 16;
  }
#endif
  while (cursor < last && *cursor != '\r') ++cursor;
  return cursor;
}

}  // namespace parser_detail
}  // namespace LLMUX_PARSER_NAMESPACE
}  // namespace llmux::http
