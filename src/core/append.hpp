#pragma once
// Appending several pieces to a string at once: one size check and one growth for all of them,
// then plain copies (a chain of std::string::append calls checks and may grow once per piece).
// For the hot path's header building (gateway/upstream_response.cpp, http_rules.cpp).
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

namespace llmux {

/// memcpy for the short pieces of a header (a name, ": ", a value), inline: two overlapping
/// fixed-size moves up to 16 bytes instead of a call into libc per piece.
inline void copy_bytes(char* d, const char* s, std::size_t n) {
  if (n >= 16) {
    std::memcpy(d, s, n);
  } else if (n >= 8) {
    std::uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    std::uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else if (n > 0) {
    d[0] = s[0];
    d[n / 2] = s[n / 2];
    d[n - 1] = s[n - 1];
  }
}

inline void append_all(std::string& out, std::initializer_list<std::string_view> pieces) {
  std::size_t n = 0;
  for (const auto p : pieces) n += p.size();
  const std::size_t at = out.size();
  out.resize(at + n);
  char* d = out.data() + at;
  for (const auto p : pieces) {
    copy_bytes(d, p.data(), p.size());
    d += p.size();
  }
}

}  // namespace llmux
