// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal to llmux::http::MessageParser (message_parser.hpp): the small helpers its source files
// share (message_parser.cpp, message_parser_fields.cpp, message_parser_chunked.cpp), named here
// once so that the unity build, which compiles them in one translation unit, sees no clash.
#include <cstddef>
#include <string_view>

#include <boost/beast/http/field.hpp>
#include "http/parser_namespace.hpp"

namespace llmux::http {
inline namespace LLMUX_PARSER_NAMESPACE {
namespace parser_detail {

/// Beast's string_to_field, faster (parser_field_name.cpp).
boost::beast::http::field lookup_field(std::string_view name);

}  // namespace parser_detail

namespace message_detail {

/// Optional whitespace (RFC 9110 §5.6.3): SP or HTAB.
inline bool is_whitespace(char byte) {
  return byte == ' ' || byte == '\t';
}

inline bool is_digit(char byte) {
  return static_cast<unsigned char>(byte - '0') < 10;
}

/// `text` without the whitespace around it.
inline std::string_view trim_whitespace(std::string_view text) {
  while (!text.empty() && is_whitespace(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_whitespace(text.back())) text.remove_suffix(1);
  return text;
}

/// ASCII case-insensitive equality with `lower`, which is lower case.
inline bool equals_ignoring_case(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char folded = text[i];
    if (folded >= 'A' && folded <= 'Z') folded = static_cast<char>(folded + ('a' - 'A'));
    if (folded != lower[i]) return false;
  }
  return true;
}

/// Calls `element(item)` for each element of the comma-separated list `value` (RFC 9110 §5.6.1),
/// the whitespace around it removed (empty elements included); stops at the first false.
template <class Element>
bool for_each_element(std::string_view value, Element element) {
  for (;;) {
    const std::size_t comma = value.find(',');
    if (!element(trim_whitespace(value.substr(0, comma)))) return false;
    if (comma == std::string_view::npos) return true;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace message_detail
}  // namespace LLMUX_PARSER_NAMESPACE
}  // namespace llmux::http
