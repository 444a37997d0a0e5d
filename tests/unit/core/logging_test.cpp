// SPDX-License-Identifier: Apache-2.0
// core/logging: JSON lines are valid JSON whatever the message holds (quotes, backslashes,
// newlines, control characters, bytes that are not UTF-8), carry the request id and backend
// lifted from the message, and the automatic format is text on a terminal, JSON otherwise.
#include "core/logging.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <spdlog/details/log_msg.h>
#include <boost/json.hpp>

namespace llmux::logging {
namespace {

namespace json = boost::json;

std::string format_line(std::string_view text,
                        spdlog::level::level_enum level = spdlog::level::info) {
  spdlog::details::log_msg msg(spdlog::source_loc{}, "llmux", level,
                               spdlog::string_view_t(text.data(), text.size()));
  msg.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796268189123));
  spdlog::memory_buf_t buf;
  JsonFormatter().format(msg, buf);
  return std::string(buf.data(), buf.size());
}

json::object parse_line(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n') << "one object per line";
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "exactly one line: " << line;
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  EXPECT_FALSE(ec) << "not JSON: " << line;
  if (ec || !v.is_object()) return {};
  return v.as_object();
}

TEST(LogFormat, JsonLineHasTimeLevelAndMessage) {
  const auto o = parse_line(format_line("llmux gateway: listening on 127.0.0.1:8080"));
  EXPECT_EQ(o.at("ts").as_string(), "2026-12-03T03:23:09.123Z");
  EXPECT_EQ(o.at("level").as_string(), "info");
  EXPECT_EQ(o.at("msg").as_string(), "llmux gateway: listening on 127.0.0.1:8080");
  EXPECT_FALSE(o.contains("request_id"));
  EXPECT_FALSE(o.contains("backend"));
  EXPECT_EQ(parse_line(format_line("x", spdlog::level::warn)).at("level").as_string(), "warn");
  EXPECT_EQ(parse_line(format_line("x", spdlog::level::err)).at("level").as_string(), "error");
  EXPECT_EQ(parse_line(format_line("x", spdlog::level::debug)).at("level").as_string(), "debug");
}

TEST(LogFormat, MessagesAreEscaped) {
  const std::string nasty = "quote \" backslash \\ newline\nreturn\r tab\t bell\x07 del\x7f end";
  const auto o = parse_line(format_line(nasty));
  EXPECT_EQ(o.at("msg").as_string(), nasty);
  const std::string line = format_line(nasty);
  EXPECT_NE(line.find(R"(\")"), std::string::npos);
  EXPECT_NE(line.find(R"(\u0007)"), std::string::npos);
  // Multi-line messages (a report quoted in an error) stay one line.
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST(LogFormat, Utf8KeptAndInvalidBytesReplaced) {
  EXPECT_EQ(parse_line(format_line("backend b: weight 3 → 1 ✓ 𝄞")).at("msg").as_string(),
            "backend b: weight 3 → 1 ✓ 𝄞");
  // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate, past U+10FFFF.
  const std::string bad = "a\x80 b\xE2\x82 c\xC0\xAF d\xED\xA0\x80 e\xF4\x90\x80\x80 f\xff";
  const auto o = parse_line(format_line(bad));
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD: one per byte that begins no valid sequence
  EXPECT_EQ(o.at("msg").as_string(), "a" + r + " b" + r + r + " c" + r + r + " d" + r + r + r +
                                         " e" + r + r + r + r + " f" + r);
}

TEST(LogFormat, RequestIdAndBackendLifted) {
  auto o = parse_line(format_line("request 4f2a9c: connect to a failed: Connection refused"));
  EXPECT_EQ(o.at("request_id").as_string(), "4f2a9c");
  EXPECT_EQ(o.at("msg").as_string(), "request 4f2a9c: connect to a failed: Connection refused")
      << "the message stays whole";
  EXPECT_FALSE(o.contains("backend"));

  o = parse_line(format_line("request id-1: backend b ejected for 10s: stalled"));
  EXPECT_EQ(o.at("request_id").as_string(), "id-1");
  EXPECT_EQ(o.at("backend").as_string(), "b");

  o = parse_line(format_line("backend server1 (http://127.0.0.1:1): down (first health check)"));
  EXPECT_EQ(o.at("backend").as_string(), "server1");
  EXPECT_FALSE(o.contains("request_id"));
  EXPECT_EQ(parse_line(format_line("backend a: its metrics read")).at("backend").as_string(), "a");

  // A client's X-Request-Id may hold anything a header may: it is escaped like the message.
  o = parse_line(format_line(R"(request a"b\c: failed)"));
  EXPECT_EQ(o.at("request_id").as_string(), R"(a"b\c)");

  // Not a request line: no id with a space in it, no id without ": ".
  EXPECT_FALSE(lift_fields("request a b: x").request_id.size());
  EXPECT_FALSE(lift_fields("request abc").request_id.size());
  EXPECT_FALSE(lift_fields("requests: 3").request_id.size());
  EXPECT_TRUE(lift_fields("backends: 2").backend.empty());
}

TEST(LogFormat, AutomaticIsTextOnATerminalAndJsonOtherwise) {
  EXPECT_EQ(resolve(Format::automatic, true), Format::text);
  EXPECT_EQ(resolve(Format::automatic, false), Format::json);
  EXPECT_EQ(resolve(Format::json, true), Format::json);
  EXPECT_EQ(resolve(Format::text, false), Format::text);
  EXPECT_EQ(parse_format("json"), Format::json);
  EXPECT_EQ(parse_format("text"), Format::text);
  EXPECT_EQ(parse_format("auto"), Format::automatic);
  EXPECT_EQ(parse_format("JSON"), std::nullopt);
  EXPECT_EQ(parse_format(""), std::nullopt);
}

}  // namespace
}  // namespace llmux::logging
