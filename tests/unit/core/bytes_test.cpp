// SPDX-License-Identifier: Apache-2.0
// core/bytes.hpp: the header builder's inline copy for every length a header piece may have, and
// appends of every kind of piece across the storage's growth, each byte where it belongs.
#include "core/bytes.hpp"

#include <string>

#include <gtest/gtest.h>

namespace {

TEST(CopyBytes, EveryLengthUpTo40CopiesExactlyThoseBytes) {
  std::string src;
  for (int i = 0; i < 40; ++i) src.push_back(static_cast<char>('a' + i % 26 + (i / 26)));
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string dst(48, '#');
    llmux::copy_bytes(dst.data() + 4, src.data(), n);
    EXPECT_EQ(dst.substr(0, 4), "####") << n;
    EXPECT_EQ(dst.substr(4, n), src.substr(0, n)) << n;
    EXPECT_EQ(dst.substr(4 + n), std::string(44 - n, '#')) << n;
  }
}

TEST(ByteBuilder, PiecesOfEveryKindAndLengthFollowWhatItHeldAcrossGrowth) {
  llmux::ByteBuilder out;
  out.append("HTTP/1.1 200 OK\r\n");
  std::string expected = "HTTP/1.1 200 OK\r\n";
  std::size_t grew = 0, cap = out.capacity();
  for (std::size_t n = 0; n <= 300; ++n) {
    const std::string value(n % 41, static_cast<char>('A' + n % 26));
    const std::string name = "X-Field-" + std::to_string(n);
    out.append(std::string_view(name), ": ", value, std::string_view("\r\n"));
    expected += name + ": " + value + "\r\n";
    if (out.capacity() != cap) ++grew, cap = out.capacity();
    ASSERT_EQ(out.size(), expected.size()) << n;
  }
  EXPECT_GE(grew, 3u);  // the storage grew several times while the content stayed whole
  EXPECT_EQ(out.str(), expected);
}

TEST(ByteBuilder, ClearKeepsTheStorageAndAMoveTakesIt) {
  llmux::ByteBuilder b;
  b.append(std::string(1000, 'x'));
  const char* storage = b.data();
  const std::size_t cap = b.capacity();
  b.clear();
  EXPECT_TRUE(b.empty());
  b.append("abc", "def");
  EXPECT_EQ(b.data(), storage);  // no new allocation for what fits
  EXPECT_EQ(b.capacity(), cap);
  EXPECT_EQ(b.view(), "abcdef");
  char* d = b.extend(2);
  d[0] = '!';
  d[1] = '?';
  EXPECT_EQ(b.view(), "abcdef!?");
  llmux::ByteBuilder moved = std::move(b);
  EXPECT_EQ(moved.view(), "abcdef!?");
  EXPECT_EQ(moved.data(), storage) << "a move takes the storage";
  EXPECT_EQ(b.capacity(), 0u);
  EXPECT_TRUE(b.empty());
}

}  // namespace
