// SPDX-License-Identifier: Apache-2.0
#include "core/tokenizer.hpp"

#include <xxhash.h>

namespace llmux {
namespace {

inline bool is_word_char(unsigned char byte) {
  return (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') ||
         (byte >= 'A' && byte <= 'Z');
}
inline bool is_space(unsigned char byte) {
  return byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r' || byte == '\v' ||
         byte == '\f';
}
inline std::size_t utf8_len(unsigned char byte) {
  if (byte >= 0xF0) return 4;
  if (byte >= 0xE0) return 3;
  if (byte >= 0xC0) return 2;
  return 1;  // stray continuation byte: one token by itself
}

}  // namespace

template <typename F>
void Tokenizer::split(std::string_view text, F&& on_piece) {
  const std::size_t size = text.size();
  std::size_t pos = 0;
  while (pos < size) {
    const auto byte = static_cast<unsigned char>(text[pos]);
    std::size_t start = pos;
    if (byte == ' ' && pos + 1 < size && is_word_char(static_cast<unsigned char>(text[pos + 1]))) {
      ++pos;  // the space joins the word after it
    }
    if (is_word_char(static_cast<unsigned char>(text[pos]))) {
      std::size_t word_begin = pos;
      while (pos < size && is_word_char(static_cast<unsigned char>(text[pos]))) ++pos;
      // Pieces of 4 word characters; the first one carries the leading space, if any.
      std::size_t piece_begin = word_begin;
      bool first = true;
      while (piece_begin < pos) {
        std::size_t end = std::min(piece_begin + 4, pos);
        on_piece(text.substr(first ? start : piece_begin, end - (first ? start : piece_begin)));
        first = false;
        piece_begin = end;
      }
    } else if (byte >= 0x80) {
      std::size_t len = std::min(utf8_len(byte), size - pos);
      on_piece(text.substr(pos, len));
      pos += len;
    } else if (is_space(byte)) {
      while (pos < size && is_space(static_cast<unsigned char>(text[pos])) &&
             !(text[pos] == ' ' && pos + 1 < size &&
               is_word_char(static_cast<unsigned char>(text[pos + 1])) && pos > start)) {
        ++pos;
      }
      if (pos == start) ++pos;
      on_piece(text.substr(start, pos - start));
    } else {
      on_piece(text.substr(pos, 1));
      ++pos;
    }
  }
}

std::size_t Tokenizer::count(std::string_view text) {
  std::size_t tokens = 0;
  split(text, [&](std::string_view) { ++tokens; });
  return tokens;
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
