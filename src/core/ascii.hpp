// SPDX-License-Identifier: Apache-2.0
#pragma once
// ASCII case-insensitive comparison, for HTTP field names and tokens. Boost.Beast 1.81's
// beast::iequals reads one byte past the end of its arguments when they differ only in case at
// their last byte (its slow loop loads the next byte before it tests the count), which is out
// of bounds for a view that ends where its allocation ends (the gateway's request block).
#include <string_view>

namespace llmux {

constexpr char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

constexpr bool iequals(std::string_view left, std::string_view right) {
  if (left.size() != right.size()) return false;
  for (std::size_t i = 0; i < left.size(); ++i)
    if (left[i] != right[i] && ascii_lower(left[i]) != ascii_lower(right[i])) return false;
  return true;
}

}  // namespace llmux
