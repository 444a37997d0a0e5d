// Taps read usage, response sequence numbers and SSE event boundaries from relayed bytes.
#include <gtest/gtest.h>

#include <string>

#include "gateway/taps.hpp"

namespace llmux::gateway {
namespace {

std::size_t boundary(const std::string& s) {
  return last_event_boundary(s.data(), s.size());
}

TEST(EventBoundary, EndOfTheLastCompleteEvent) {
  EXPECT_EQ(boundary(""), 0u);
  EXPECT_EQ(boundary("data: 1\n"), 0u);
  EXPECT_EQ(boundary("data: 1\n\n"), 9u);
  EXPECT_EQ(boundary("data: 1\n\ndata: 2\n"), 9u);
  EXPECT_EQ(boundary("data: 1\n\ndata: 2\n\n"), 18u);
  EXPECT_EQ(boundary("data: 1\r\n\r\n"), 11u);
  EXPECT_EQ(boundary("\n\n"), 2u);
}

TEST(UsageTap, ChatAndResponsesShapes) {
  UsageTap t;
  t.feed(R"(data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34}})");
  EXPECT_EQ(t.prompt, 12);
  EXPECT_EQ(t.completion, 34);
  UsageTap r;
  r.feed(R"({"usage": {"input_tokens": 7, "output_tokens": 9}})");
  EXPECT_EQ(r.prompt, 7);
  EXPECT_EQ(r.completion, 9);
  UsageTap none;
  none.feed(R"({"prompt_tokens":1})");  // not inside "usage"
  EXPECT_FALSE(none.prompt);
}

TEST(UsageTap, HugeNumbersAreIgnoredNotOverflowed) {
  UsageTap t;
  t.feed(R"({"usage":{"prompt_tokens":99999999999999999999999,"completion_tokens":5}})");
  EXPECT_FALSE(t.prompt);
  EXPECT_EQ(t.completion, 5);
}

TEST(SequenceTap, ContinuesTheNumbering) {
  SequenceTap s;
  EXPECT_EQ(s.next(), 0);
  s.feed(
      "event: response.created\ndata: {\"sequence_number\":0}\n\n"
      "event: response.output_text.delta\ndata: {\"sequence_number\":1,\"delta\":\"x\"}\n\n");
  EXPECT_EQ(s.next(), 2);
  s.feed("data: {\"delta\":\"no number\"}\n\n");
  EXPECT_EQ(s.next(), 2);
  s.feed("data: {\"sequence_number\": 41}\n\n");
  EXPECT_EQ(s.next(), 42);
}

}  // namespace
}  // namespace llmux::gateway
