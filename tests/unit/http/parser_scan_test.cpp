// SPDX-License-Identifier: Apache-2.0
// The byte scans of llmux's HTTP/1.1 parser (src/http/parser_scan.hpp) against their
// one-byte-at-a-time definitions, and the field-name lookup (parser_field_name.cpp) against
// Beast's string_to_field, which the gateway's field enum comes from. Built twice, with the
// parser's tests: the SIMD scans where the build has them, and -DLLMUX_NO_SIMD.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <string>

#include <boost/beast/http/field.hpp>

#include "http/message_parser_detail.hpp"
#include "http/parser_scan.hpp"

namespace {

namespace bhttp = boost::beast::http;

/// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" /
/// "~" / DIGIT / ALPHA (RFC 9110 §5.6.2), written out here as the RFC gives it.
bool is_rfc_token_char(int c) {
  if (c >= '0' && c <= '9') return true;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// Every byte value at every position of a buffer, with a tail shorter than 16 bytes after it.
TEST(ParserScan, EveryByteAtEveryPosition) {
  namespace d = llmux::http::parser_detail;
  for (int c = 0; c < 256; ++c) {
    for (std::size_t len : {1u, 15u, 16u, 17u, 40u}) {
      for (std::size_t at = 0; at < len; ++at) {
        std::string s(len, 'a');
        s[at] = static_cast<char>(c);
        const char* b = s.data();
        const char* e = b + s.size();
        const auto uc = static_cast<unsigned char>(c);
        const bool token = d::tables.token[uc];
        EXPECT_EQ(d::find_non_token(b, e), token ? e : b + at) << c << " " << at;
        EXPECT_EQ(d::find_non_path(b, e), d::tables.not_path[uc] ? b + at : e) << c;
        EXPECT_EQ(d::find_value_stop(b, e), d::tables.value_stop[uc] ? b + at : e) << c;
        EXPECT_EQ(d::find_cr(b, e), c == '\r' ? b + at : e) << c;
        EXPECT_EQ(token, is_rfc_token_char(c)) << c;
      }
    }
  }
}

// lookup_field is Beast's string_to_field: every name, in other cases, with every byte changed,
// shortened and lengthened.
TEST(ParserScan, FieldLookupIsBeasts) {
  namespace d = llmux::http::parser_detail;
  const auto same = [](const std::string& s) {
    EXPECT_EQ(d::lookup_field(s), bhttp::string_to_field(s)) << "[" << s << "]";
  };
  const unsigned count = static_cast<unsigned>(bhttp::field::xref) + 1;
  EXPECT_EQ(bhttp::to_string(bhttp::field::xref), "Xref");
  for (unsigned i = 1; i < count; ++i) {
    const std::string name(bhttp::to_string(static_cast<bhttp::field>(i)));
    ASSERT_EQ(d::lookup_field(name), static_cast<bhttp::field>(i)) << name;
    std::string lower = name, upper = name, mixed = name;
    for (std::size_t k = 0; k < name.size(); ++k) {
      lower[k] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[k])));
      upper[k] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[k])));
      mixed[k] = k % 2 ? lower[k] : upper[k];
    }
    for (const std::string& s : {name, lower, upper, mixed}) same(s);
    for (std::size_t k = 0; k < name.size(); ++k) {
      for (const char c : {'x', '-', 'A', '0', '_', '^', '~', '.', '\r',
                           static_cast<char>(name[k] ^ 0x20), static_cast<char>(name[k] ^ 0x40)}) {
        std::string s = name;
        s[k] = c;
        same(s);
      }
      same(name.substr(0, k));
      same(name.substr(k));
    }
    same(name + "x");
    same(name + "-");
    same("x" + name);
  }
  for (const char* s : {"", "a", "ab", "abc", "X-Unknown-Field", "content-typ", "hostt"}) same(s);
}

}  // namespace
