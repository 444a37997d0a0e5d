// SPDX-License-Identifier: Apache-2.0
#include "core/tokenizer.hpp"

#include <xxhash.h>

namespace llmux {
namespace {

inline bool is_word_char(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
inline std::size_t utf8_len(unsigned char c) {
  if (c >= 0xF0) return 4;
  if (c >= 0xE0) return 3;
  if (c >= 0xC0) return 2;
  return 1;  // stray continuation byte: one token by itself
}

}  // namespace

template <typename F>
void Tokenizer::split(std::string_view text, F&& on_piece) {
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t start = i;
    if (c == ' ' && i + 1 < n && is_word_char(static_cast<unsigned char>(text[i + 1]))) {
      ++i;  // the space joins the word after it
    }
    if (is_word_char(static_cast<unsigned char>(text[i]))) {
      std::size_t word_begin = i;
      while (i < n && is_word_char(static_cast<unsigned char>(text[i]))) ++i;
      // Pieces of 4 word characters; the first one carries the leading space, if any.
      std::size_t p = word_begin;
      bool first = true;
      while (p < i) {
        std::size_t end = std::min(p + 4, i);
        on_piece(text.substr(first ? start : p, end - (first ? start : p)));
        first = false;
        p = end;
      }
    } else if (c >= 0x80) {
      std::size_t len = std::min(utf8_len(c), n - i);
      on_piece(text.substr(i, len));
      i += len;
    } else if (is_space(c)) {
      while (i < n && is_space(static_cast<unsigned char>(text[i])) &&
             !(text[i] == ' ' && i + 1 < n &&
               is_word_char(static_cast<unsigned char>(text[i + 1])) && i > start)) {
        ++i;
      }
      if (i == start) ++i;
      on_piece(text.substr(start, i - start));
    } else {
      on_piece(text.substr(i, 1));
      ++i;
    }
  }
}

std::size_t Tokenizer::count(std::string_view text) {
  std::size_t n = 0;
  split(text, [&](std::string_view) { ++n; });
  return n;
}

void Tokenizer::encode(std::string_view text, std::vector<std::uint32_t>& out) {
  split(text, [&](std::string_view piece) { out.push_back(piece_id(piece)); });
}

void Tokenizer::pieces(std::string_view text, std::vector<std::string_view>& out) {
  split(text, [&](std::string_view piece) { out.push_back(piece); });
}

std::uint32_t Tokenizer::piece_id(std::string_view piece) {
  return XXH32(piece.data(), piece.size(), 0x6c6c6d78u);
}

}  // namespace llmux
