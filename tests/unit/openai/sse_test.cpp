// SPDX-License-Identifier: Apache-2.0
#include "openai/sse.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace llmux::openai {
namespace {

struct Ev {
  std::string event, data, id;
  bool operator==(const Ev&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << "{event=" << e.event << " data=" << e.data << " id=" << e.id << "}";
}

std::vector<Ev> parse_chunks(SseParser& p, const std::vector<std::string>& chunks) {
  std::vector<Ev> out;
  for (const auto& c : chunks) {
    p.feed(c, [&](const SseEvent& e) {
      out.push_back({std::string(e.event), std::string(e.data), std::string(e.id)});
    });
  }
  return out;
}

std::vector<Ev> parse_whole(std::string_view s) {
  SseParser p;
  return parse_chunks(p, {std::string(s)});
}

std::vector<Ev> parse_bytewise(std::string_view s) {
  SseParser p;
  std::vector<std::string> chunks;
  for (char c : s) chunks.emplace_back(1, c);
  return parse_chunks(p, chunks);
}

TEST(SseParser, SingleEvent) {
  auto ev = parse_whole("data: hello\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], (Ev{"", "hello", ""}));
}

TEST(SseParser, FieldsCommentsAndJoinedData) {
  const std::string s =
      ": keep-alive\n"
      "event: response.output_text.delta\n"
      "id: 7\n"
      "data: first\n"
      "data:second\n"
      "data:  two spaces\n"
      "retry: 1000\n"
      "\n"
      "data: next\n"
      "\n";
  SseParser p;
  std::vector<Ev> ev = parse_chunks(p, {s});
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0], (Ev{"response.output_text.delta", "first\nsecond\n two spaces", "7"}));
  // The event name does not carry over; the id does.
  EXPECT_EQ(ev[1], (Ev{"", "next", "7"}));
  EXPECT_EQ(p.comments(), 1u);
  EXPECT_EQ(p.events(), 2u);
  EXPECT_FALSE(p.mid_event());
}

TEST(SseParser, BlockWithoutDataIsNotDispatched) {
  auto ev = parse_whole("event: ping\n\n: comment\n\ndata: x\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], (Ev{"", "x", ""}));
}

TEST(SseParser, EmptyDataLineDispatchesEmptyData) {
  auto ev = parse_whole("data\n\ndata:\n\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].data, "");
  EXPECT_EQ(ev[1].data, "");
}

TEST(SseParser, LineEndingsLfCrlfAndCr) {
  auto ev = parse_whole("data: a\r\n\r\ndata: b\r\rdata: c\n\ndata: d\r\ndata: e\n\r\n");
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].data, "a");
  EXPECT_EQ(ev[1].data, "b");
  EXPECT_EQ(ev[2].data, "c");
  EXPECT_EQ(ev[3].data, "d\ne");
}

TEST(SseParser, CountsLinesNotEndedByLf) {
  SseParser p;
  parse_chunks(p, {"data: a\n\n"});
  EXPECT_EQ(p.cr_line_ends(), 0u);
  parse_chunks(p, {"data: b\r\n\r\ndata: c\r\r"});
  EXPECT_EQ(p.cr_line_ends(), 4u);
}

TEST(SseParser, EventHeldInPlaceSurvivesTheChunkThatCarriedIt) {
  // The name and data of an unfinished event may be views into the chunk; the chunk's buffer is
  // then reused by the socket, so they must be copied before feed() returns.
  SseParser p;
  std::string chunk = "event: response.output_text.delta\ndata: {\"delta\":\"first\"}\n";
  EXPECT_EQ(p.feed(chunk, [](const SseEvent&) {}), 0u);
  EXPECT_TRUE(p.mid_event());
  std::fill(chunk.begin(), chunk.end(), 'X');  // what a reused read buffer would do
  std::vector<Ev> ev = parse_chunks(p, {"\n"});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], (Ev{"response.output_text.delta", "{\"delta\":\"first\"}", ""}));
  // A second data line after an in-place first one is joined, in the same chunk or the next.
  ev = parse_chunks(p, {"data: x\ndata: y\n", "data: z\n\n"});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "x\ny\nz");
}

TEST(SseParser, CrlfSplitAcrossChunksIsOneLineEnd) {
  SseParser p;
  // "\r" ends one chunk, "\n" starts the next: one line end, not an empty line.
  auto ev = parse_chunks(p, {"data: x\r", "\ndata: y\r", "\n\r", "\n"});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "x\ny");
  // Two CRs split across chunks are two line ends: the event is dispatched.
  SseParser q;
  ev = parse_chunks(q, {"data: z\r", "\r"});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "z");
}

TEST(SseParser, ByteByByteEqualsWhole) {
  const std::string s =
      "\xEF\xBB\xBF"
      ": ping\r\n"
      "event: response.created\r\n"
      "data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\r\n"
      "\r\n"
      "data: {\"choices\":[{\"text\":\" caf\xC3\xA9\"}]}\n"
      "\n"
      "id: 42\r"
      "data: line1\r"
      "data: line2\r"
      "\r"
      "data: [DONE]\n\n";
  const auto whole = parse_whole(s);
  ASSERT_EQ(whole.size(), 4u);
  EXPECT_EQ(whole[0].event, "response.created");  // the BOM was skipped
  EXPECT_EQ(whole[1].data, "{\"choices\":[{\"text\":\" caf\xC3\xA9\"}]}");
  EXPECT_EQ(whole[2], (Ev{"", "line1\nline2", "42"}));
  EXPECT_EQ(whole[3].data, "[DONE]");
  EXPECT_EQ(parse_bytewise(s), whole);

  // And any random split of the same bytes.
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::string> chunks;
    std::size_t i = 0;
    while (i < s.size()) {
      std::size_t len = std::uniform_int_distribution<std::size_t>(1, 9)(rng);
      chunks.push_back(s.substr(i, len));
      i += len;
    }
    SseParser p;
    ASSERT_EQ(parse_chunks(p, chunks), whole) << "trial " << trial;
  }
}

TEST(SseParser, MidEventTellsABrokenStream) {
  SseParser p;
  std::size_t n = p.feed("data: {\"choices\":", [](const SseEvent&) {});
  EXPECT_EQ(n, 0u);
  EXPECT_TRUE(p.mid_event());
  n = p.feed("[]}\n", [](const SseEvent&) {});
  EXPECT_EQ(n, 0u);
  EXPECT_TRUE(p.mid_event());  // data buffered, blank line still missing
  n = p.feed("\n", [](const SseEvent&) {});
  EXPECT_EQ(n, 1u);
  EXPECT_FALSE(p.mid_event());
}

TEST(SseParser, LimitsFailTheStream) {
  SseParser p(SseParser::Limits{.max_line = 16, .max_event = 64});
  int events = 0;
  p.feed("data: short\n\n", [&](const SseEvent&) { ++events; });
  EXPECT_EQ(events, 1);
  EXPECT_FALSE(p.failed());
  p.feed("data: 0123456789", [&](const SseEvent&) { ++events; });
  p.feed("abcdef\n\n", [&](const SseEvent&) { ++events; });
  EXPECT_TRUE(p.failed());
  p.feed("data: ok\n\n", [&](const SseEvent&) { ++events; });
  EXPECT_EQ(events, 1);  // ignored once failed

  SseParser q(SseParser::Limits{.max_line = 16, .max_event = 20});
  q.feed("data: 0123456789\ndata: 0123456789\n\n", [&](const SseEvent&) { ++events; });
  EXPECT_TRUE(q.failed());
  EXPECT_EQ(events, 1);

  p.reset();
  EXPECT_FALSE(p.failed());
  p.feed("data: ok\n\n", [&](const SseEvent&) { ++events; });
  EXPECT_EQ(events, 2);
}

}  // namespace
}  // namespace llmux::openai
