// SPDX-License-Identifier: Apache-2.0
#include "core/tokenizer.hpp"

#include <gtest/gtest.h>

namespace llmux {
namespace {

TEST(Tokenizer, WordsAreQuartersWithTheirLeadingSpace) {
  EXPECT_EQ(Tokenizer::count("the"), 1u);
  EXPECT_EQ(Tokenizer::count(" the"), 1u);
  EXPECT_EQ(Tokenizer::count("tokenizer"), 3u);    // toke|nize|r
  EXPECT_EQ(Tokenizer::count("hello world"), 4u);  // hell|o| worl|d  (" worl" carries the space)
}

TEST(Tokenizer, PiecesAreDocumented) {
  std::vector<std::uint32_t> ids;
  Tokenizer::encode("hello world", ids);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[0], Tokenizer::piece_id("hell"));
  EXPECT_EQ(ids[1], Tokenizer::piece_id("o"));
  EXPECT_EQ(ids[2], Tokenizer::piece_id(" worl"));  // 4 word characters plus the space
  EXPECT_EQ(ids[3], Tokenizer::piece_id("d"));
}

TEST(Tokenizer, SpaceJoinsOnlyTheWordAfterIt) {
  std::vector<std::uint32_t> ids;
  Tokenizer::encode("a  b", ids);  // "a", " ", " b"
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], Tokenizer::piece_id("a"));
  EXPECT_EQ(ids[1], Tokenizer::piece_id(" "));
  EXPECT_EQ(ids[2], Tokenizer::piece_id(" b"));
}

TEST(Tokenizer, PunctuationAndNewlines) {
  std::vector<std::uint32_t> ids;
  Tokenizer::encode("Hi!\n\nok", ids);  // "Hi", "!", "\n\n", "ok"
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[1], Tokenizer::piece_id("!"));
  EXPECT_EQ(ids[2], Tokenizer::piece_id("\n\n"));
  EXPECT_EQ(ids[3], Tokenizer::piece_id("ok"));
}

TEST(Tokenizer, EachNonAsciiCodePointIsOneToken) {
  EXPECT_EQ(Tokenizer::count("两台机器"), 4u);
  EXPECT_EQ(Tokenizer::count("é"), 1u);
}

TEST(Tokenizer, EmptyAndDeterministic) {
  EXPECT_EQ(Tokenizer::count(""), 0u);
  std::vector<std::uint32_t> a, b;
  Tokenizer::encode("The quick brown fox.", a);
  Tokenizer::encode("The quick brown fox.", b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), Tokenizer::count("The quick brown fox."));
}

TEST(Tokenizer, EnglishProseIsAboutFourCharactersPerToken) {
  const std::string text =
      "Continuous batching lets a serving engine add new requests to a running batch at every "
      "step, so the machine stays busy while clients come and go.";
  const double chars_per_token = static_cast<double>(text.size()) / Tokenizer::count(text);
  EXPECT_GT(chars_per_token, 3.0);
  EXPECT_LT(chars_per_token, 5.5);
}

}  // namespace
}  // namespace llmux
