// SPDX-License-Identifier: Apache-2.0
// Random ids (core/ids.hpp): the shape OpenAI's ids have, every digit random, no repeats.
#include "core/ids.hpp"

#include <array>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace {

bool lower_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

TEST(Ids, PrefixThenTheAskedNumberOfLowercaseHexDigits) {
  for (int digits : {1, 7, 15, 16, 17, 31, 32, 33, 48}) {
    const std::string id = llmux::random_id("chatcmpl-", digits);
    ASSERT_EQ(id.size(), 9u + static_cast<std::size_t>(digits)) << id;
    EXPECT_EQ(id.substr(0, 9), "chatcmpl-");
    for (std::size_t i = 9; i < id.size(); ++i) EXPECT_TRUE(lower_hex(id[i])) << id;
  }
  EXPECT_EQ(llmux::random_id("resp_", 0), "resp_");
}

TEST(Ids, WritingOverAStringReplacesWhatItHeld) {
  std::string out = "some earlier, much longer content of the string";
  llmux::random_id_into(out, "", 32);
  ASSERT_EQ(out.size(), 32u);
  for (char c : out) EXPECT_TRUE(lower_hex(c)) << out;
}

TEST(Ids, EveryPositionTakesEveryDigitAndNoIdRepeats) {
  // 4,096 ids of 33 digits: a position stuck at a value (a digit never written, the same bits
  // used twice) shows as a position that misses some of the 16 digits (chance of that at random:
  // 16 * (15/16)^4096, nil); a repeat among 4,096 random 132-bit ids, likewise.
  constexpr int kIds = 4096, kDigits = 33;
  std::array<std::array<int, 16>, kDigits> seen{};
  std::set<std::string> ids;
  for (int n = 0; n < kIds; ++n) {
    const std::string id = llmux::random_id("", kDigits);
    for (int i = 0; i < kDigits; ++i) {
      const char c = id[static_cast<std::size_t>(i)];
      ++seen[static_cast<std::size_t>(i)]
            [static_cast<std::size_t>(c <= '9' ? c - '0' : c - 'a' + 10)];
    }
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kIds));
  for (int i = 0; i < kDigits; ++i)
    for (int d = 0; d < 16; ++d)
      EXPECT_GT(seen[static_cast<std::size_t>(i)][static_cast<std::size_t>(d)], 0)
          << "position " << i << " never had digit " << d;
}

TEST(Ids, ThreadsDoNotRepeatEachOthersIds) {
  // Each thread seeds its own generator: two threads must not produce the same sequence.
  std::string a, b;
  std::thread t1([&] { a = llmux::random_id("", 32); });
  std::thread t2([&] { b = llmux::random_id("", 32); });
  t1.join();
  t2.join();
  EXPECT_NE(a, b);
}

}  // namespace
