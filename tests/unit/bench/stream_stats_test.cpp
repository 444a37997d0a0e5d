// SPDX-License-Identifier: Apache-2.0
// The bench's stats fed by the shared OpenAI stream reader, as the driver feeds them.
#include <gtest/gtest.h>

#include <string>

#include "../openai/vllm_streams.hpp"
#include "bench/stats.hpp"
#include "openai/sse.hpp"
#include "openai/stream.hpp"

namespace llmux::bench {
namespace {

using openai::Dialect;
using openai::EventInfo;
using openai::SseEvent;
using openai::SseParser;
using openai::StreamInterpreter;

using llmux::testing::kChatStream;

// End to end on the pure side: a timed chat stream, recorded as the driver would, gives TTFT at
// the first content chunk (not the role chunk) and output tokens from usage.
TEST(OpenAiStream, TimedChatStreamFeedsStats) {
  constexpr std::int64_t kMs = 1'000'000;
  StreamInterpreter in(Dialect::chat);
  SseParser p;
  RequestTiming t;
  t.start_ns = 0;
  const std::string_view stream = kChatStream;
  std::int64_t now = 0;
  std::size_t frame = 0;
  // Each SSE frame arrives 20 ms after the previous one, starting 50 ms in.
  std::size_t pos = 0;
  while (pos < stream.size()) {
    const std::size_t end = stream.find("\n\n", pos) + 2;
    now = (50 + 20 * static_cast<std::int64_t>(frame++)) * kMs;
    if (!t.first_byte_ns) t.first_byte_ns = now;
    p.feed(stream.substr(pos, end - pos), [&](const SseEvent& e) {
      EventInfo info = in.on_event(e);
      if (info.content) {
        if (!t.first_token_ns) t.first_token_ns = now;
        t.events.push_back({now, info.tokens});
      }
    });
    pos = end;
  }
  t.end_ns = now;
  t.output_tokens = in.usage().completion_tokens;
  RequestMetrics m = derive(t);
  ASSERT_TRUE(m.ttft_s);
  EXPECT_NEAR(*m.ttft_s, 0.070, 1e-12);  // the second frame; the role chunk came at 50 ms
  EXPECT_NEAR(*m.ttfb_s, 0.050, 1e-12);
  EXPECT_EQ(m.output_tokens, 7u);
  EXPECT_FALSE(m.output_tokens_estimated);
  // Gaps: 20 ms for 1 token, then 20 ms for 5 tokens.
  ASSERT_EQ(m.itl_s.size(), 6u);
  EXPECT_NEAR(m.itl_s[0], 0.020, 1e-12);
  EXPECT_NEAR(m.itl_s[1], 0.004, 1e-12);
  EXPECT_NEAR(m.itl_s[5], 0.004, 1e-12);
  EXPECT_NEAR(m.e2e_s, 0.170, 1e-12);
}

}  // namespace
}  // namespace llmux::bench
