// append_all and its inline copy (core/append.hpp): every length a header piece may have, each
// byte where it belongs and nothing written around it.
#include "core/append.hpp"

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

TEST(AppendAll, PiecesOfEveryLengthFollowWhatTheStringHeld) {
  std::string out = "HTTP/1.1 200 OK\r\n";
  std::string expected = out;
  for (std::size_t n = 0; n <= 20; ++n) {
    const std::string value(n, static_cast<char>('A' + n));
    llmux::append_all(out, {"X-Field-", std::to_string(n), ": ", value, "\r\n"});
    expected += "X-Field-" + std::to_string(n) + ": " + value + "\r\n";
  }
  EXPECT_EQ(out, expected);
}

}  // namespace
