// SPDX-License-Identifier: Apache-2.0
// Taps read usage, response ids, sequence numbers and SSE event boundaries from relayed bytes.
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

struct Tapped {
  openai::JsonScratch scratch;
  ResponseTap tap;
  Tapped(std::string_view path, std::string_view content_type)
      : tap(dialect_of(path), content_type, scratch) {}
};

TEST(ResponseTap, ChatStreamUsage) {
  Tapped t("/v1/chat/completions", "text/event-stream; charset=utf-8");
  t.tap.feed("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n", false);
  EXPECT_FALSE(t.tap.prompt_tokens());
  t.tap.feed(
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":34,"
      "\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\ndata: [DONE]\n\n",
      true);
  EXPECT_EQ(t.tap.prompt_tokens(), 12);
  EXPECT_EQ(t.tap.completion_tokens(), 34);
  EXPECT_EQ(t.tap.cached_tokens(), 8);
  EXPECT_TRUE(t.tap.reader().done());
}

TEST(ResponseTap, ResponsesBodyUsageAndId) {
  Tapped t("/v1/responses", "application/json");
  t.tap.feed(
      R"({"id":"resp_abc","status":"completed","usage": {"input_tokens": 7, "output_tokens": 9}})",
      true);
  EXPECT_EQ(t.tap.prompt_tokens(), 7);
  EXPECT_EQ(t.tap.completion_tokens(), 9);
  EXPECT_EQ(t.tap.reader().id(), "resp_abc");
}

TEST(ResponseTap, BodyInPiecesIsReadWhole) {
  // A usage object split between two reads (the byte scan this tap replaced missed it).
  Tapped t("/v1/completions", "application/json");
  t.tap.feed(R"({"id":"cmpl-1","choices":[{"text":"a b"}],"usage":{"prompt_tok)", false);
  EXPECT_FALSE(t.tap.prompt_tokens());
  t.tap.feed(R"(ens":3,"completion_tokens":2}})", true);
  EXPECT_EQ(t.tap.prompt_tokens(), 3);
  EXPECT_EQ(t.tap.completion_tokens(), 2);
}

TEST(ResponseTap, UsageOutsideUsageObjectIsNotUsage) {
  Tapped t("/v1/completions", "application/json");
  t.tap.feed(R"({"prompt_tokens":1})", true);
  EXPECT_FALSE(t.tap.prompt_tokens());
}

TEST(ResponseTap, HugeNumbersAreIgnoredNotOverflowed) {
  Tapped t("/v1/completions", "application/json");
  t.tap.feed(R"({"usage":{"prompt_tokens":99999999999999999999999,"completion_tokens":5}})", true);
  EXPECT_FALSE(t.tap.prompt_tokens());
  EXPECT_EQ(t.tap.completion_tokens(), 5);
}

TEST(ResponseTap, OtherContentIsNotRead) {
  Tapped t("/v1/completions", "text/plain");
  EXPECT_EQ(t.tap.kind(), ResponseTap::Kind::none);
  t.tap.feed(R"({"usage":{"prompt_tokens":1,"completion_tokens":5}})", true);
  EXPECT_FALSE(t.tap.completion_tokens());
  EXPECT_EQ(Tapped("/x", "application/problem+json").tap.kind(), ResponseTap::Kind::json);
}

TEST(ResponseTap, TooLargeABodyGoesUnread) {
  Tapped t("/v1/completions", "application/json");
  t.tap.feed(R"({"choices":[{"text":")", false);
  t.tap.feed(std::string(ResponseTap::kMaxBody, 'a'), false);
  t.tap.feed(R"("}],"usage":{"prompt_tokens":1,"completion_tokens":5}})", true);
  EXPECT_FALSE(t.tap.completion_tokens());
}

TEST(ResponseTap, SequenceNumbersContinue) {
  Tapped t("/v1/responses", "text/event-stream");
  EXPECT_EQ(t.tap.next_sequence_number(), 0);
  t.tap.feed(
      "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n"
      "event: response.output_text.delta\ndata: "
      "{\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"x\"}\n\n",
      false);
  EXPECT_EQ(t.tap.next_sequence_number(), 2);
  t.tap.feed("data: {\"delta\":\"no number\"}\n\n", false);
  EXPECT_EQ(t.tap.next_sequence_number(), 2);
  t.tap.feed("data: {\"sequence_number\": 41}\n\n", false);
  EXPECT_EQ(t.tap.next_sequence_number(), 42);
}

TEST(ResponseTap, EventSplitAcrossPiecesIsReadOnce) {
  // A giant event is relayed in pieces; the SSE reader joins them.
  Tapped t("/v1/chat/completions", "text/event-stream");
  t.tap.feed("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,", false);
  t.tap.feed("\"completion_tokens\":6}}\n\n", false);
  EXPECT_EQ(t.tap.completion_tokens(), 6);
  EXPECT_EQ(t.tap.prompt_tokens(), 4);
}

TEST(DialectOf, ByPath) {
  EXPECT_EQ(dialect_of("/v1/responses/resp_1"), openai::Dialect::responses);
  EXPECT_EQ(dialect_of("/v1/chat/completions"), openai::Dialect::chat);
  EXPECT_EQ(dialect_of("/v1/embeddings"), openai::Dialect::completions);
}

}  // namespace
}  // namespace llmux::gateway
