// SPDX-License-Identifier: Apache-2.0
#pragma once
// The approximate tokenizer shared by `llmux sim` and `llmux bench`.
//
// It is deterministic, fast and documented, not a real BPE vocabulary. A text is cut into pieces;
// each piece is one token:
//   1. A word is a maximal run of ASCII letters and digits. A single space directly before a
//      word belongs to it. A word of L characters is ceil(L / 4) tokens (pieces of 4 characters;
//      the leading space rides on the first piece), so English prose comes out near the usual
//      "one token per four characters".
//   2. Each non-ASCII code point (UTF-8 sequence) is one token, as CJK characters roughly are.
//   3. Any other run of whitespace (newlines, several spaces, tabs) is one token.
//   4. Every other ASCII character (punctuation, symbols) is one token.
// A token's id is a 32-bit hash (xxHash32) of its bytes, so equal texts give equal ids, which is
// what prefix caching keys on. The simulator emits tokens of the form " word" with 1-4 letters,
// so re-tokenizing its output gives back exactly its `completion_tokens`.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace llmux {

class Tokenizer {
 public:
  /// Number of tokens in `text`.
  static std::size_t count(std::string_view text);
  /// Appends the ids of `text`'s tokens to `out`.
  static void encode(std::string_view text, std::vector<std::uint32_t>& out);
  /// Appends `text`'s pieces (views into `text`, one per token) to `out`.
  static void pieces(std::string_view text, std::vector<std::string_view>& out);
  /// Id of a single piece (the hash every piece gets).
  static std::uint32_t piece_id(std::string_view piece);

 private:
  template <typename F>
  static void split(std::string_view text, F&& on_piece);
};

}  // namespace llmux
