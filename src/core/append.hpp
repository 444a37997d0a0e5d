#pragma once
// Appending several pieces to a string at once: one size check and one growth for all of them,
// then plain copies (a chain of std::string::append calls checks and may grow once per piece).
// For the hot path's header building (gateway/upstream_response.cpp, http_rules.cpp).
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

namespace llmux {

inline void append_all(std::string& out, std::initializer_list<std::string_view> pieces) {
  std::size_t n = 0;
  for (const auto p : pieces) n += p.size();
  const std::size_t at = out.size();
  out.resize(at + n);
  char* d = out.data() + at;
  for (const auto p : pieces) {
    if (!p.empty()) std::memcpy(d, p.data(), p.size());
    d += p.size();
  }
}

}  // namespace llmux
