// SPDX-License-Identifier: Apache-2.0
// parse_duration, parse_size and ConfigError::to_string.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "config/config.hpp"

namespace llmux::config {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(ParseDuration, Units) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("5s"), seconds(5));
  EXPECT_EQ(parse_duration("2m"), minutes(2));
  EXPECT_EQ(parse_duration("1h"), hours(1));
  EXPECT_EQ(parse_duration("300s"), seconds(300));
  EXPECT_EQ(parse_duration("0s"), milliseconds(0));  // parses; validate() rejects it
}

TEST(ParseDuration, BareNumberIsMilliseconds) {
  EXPECT_EQ(parse_duration("1500"), milliseconds(1500));
  EXPECT_EQ(parse_duration("0"), milliseconds(0));
}

TEST(ParseDuration, SpaceBeforeUnit) {
  EXPECT_EQ(parse_duration("5 s"), seconds(5));
}

TEST(ParseDuration, Rejects) {
  for (const char* bad : {"", "s", "ms", "-5s", "+5s", "1.5s", "5sec", "5S", "5d", "5 ", " 5s",
                          "5s5", "abc", "0x10", "5us"})
    EXPECT_EQ(parse_duration(bad), std::nullopt) << "'" << bad << "'";
}

TEST(ParseDuration, Overflow) {
  EXPECT_EQ(parse_duration("99999999999999999999"), std::nullopt);  // > 2^64
  EXPECT_EQ(parse_duration("9223372036854775807h"), std::nullopt);
  EXPECT_EQ(parse_duration("9223372036854775807"),
            milliseconds(std::numeric_limits<milliseconds::rep>::max()));
}

TEST(ParseSize, Units) {
  EXPECT_EQ(parse_size("16MiB"), 16ull << 20);
  EXPECT_EQ(parse_size("512KiB"), 512ull << 10);
  EXPECT_EQ(parse_size("1GiB"), 1ull << 30);
  EXPECT_EQ(parse_size("2TiB"), 2ull << 40);
  EXPECT_EQ(parse_size("1000"), 1000u);
  EXPECT_EQ(parse_size("10MB"), 10'000'000u);
  EXPECT_EQ(parse_size("3KB"), 3000u);
  EXPECT_EQ(parse_size("1GB"), 1'000'000'000u);
  EXPECT_EQ(parse_size("7B"), 7u);
  EXPECT_EQ(parse_size("0"), 0u);  // parses; validate() rejects a zero limit
}

TEST(ParseSize, UnitsAreCaseInsensitive) {
  EXPECT_EQ(parse_size("16mib"), 16ull << 20);
  EXPECT_EQ(parse_size("64KIB"), 64ull << 10);
  EXPECT_EQ(parse_size("16 MiB"), 16ull << 20);
}

TEST(ParseSize, Rejects) {
  for (const char* bad : {"", "MiB", "-1", "1.5MiB", "16M", "16k", "16 MiBs", "lots", "1e6", " 1"})
    EXPECT_EQ(parse_size(bad), std::nullopt) << "'" << bad << "'";
}

TEST(ParseSize, Overflow) {
  EXPECT_EQ(parse_size("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(parse_size("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_size("17179869184GiB"), std::nullopt);  // 2^34 GiB = 2^64
}

TEST(ConfigErrorToString, FieldValueReason) {
  ConfigError e{"routes[2].backends[0]", "server3",
                "no backend named 'server3' (known: server1, server2)"};
  EXPECT_EQ(e.to_string(),
            "routes[2].backends[0]: 'server3': no backend named 'server3' (known: server1, "
            "server2)");
}

TEST(ConfigErrorToString, NoValue) {
  ConfigError e{"backends", "", "at least one backend is required"};
  EXPECT_EQ(e.to_string(), "backends: at least one backend is required");
}

TEST(ConfigErrorToString, WithPosition) {
  ConfigError e{"threads", "many", "expected an integer"};
  e.line = 3;
  e.column = 10;
  EXPECT_EQ(e.to_string(), "threads: 'many': expected an integer (line 3, column 10)");
}

TEST(ConfigErrorToString, SyntaxErrorHasOnlyPosition) {
  ConfigError e{"", "", "YAML syntax error: end of map not found"};
  e.line = 4;
  e.column = 1;
  EXPECT_EQ(e.to_string(), "line 4, column 1: YAML syntax error: end of map not found");
}

}  // namespace
}  // namespace llmux::config
