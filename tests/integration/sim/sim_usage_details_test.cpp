// SPDX-License-Identifier: Apache-2.0
// `--enable-prompt-tokens-details`: as vLLM 0.11, completions and chat report prefix-cache hits in
// usage.prompt_tokens_details only with the flag (and a hit); without it the field is null in a
// body and left out of a stream's usage chunk. The Responses API always reports
// input_tokens_details.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;

constexpr const char* kModel = "Qwen3.6-35B-A3B";

// A prompt of several 16-token blocks; `tag` makes it distinct from the other tests' prompts.
std::string long_prompt(const std::string& tag) {
  std::string p = tag;
  for (int i = 0; i < 80; ++i) p += " word" + std::to_string(i % 10);
  return p;
}

json::object post_ok(HttpClient& c, std::string_view target, const json::object& body) {
  Response r = c.post(target, json::serialize(body));
  EXPECT_EQ(r.status, 200) << target << " -> " << r.body;
  auto v = parse_json(r.body);
  return v.is_object() ? v.get_object() : json::object{};
}

// The usage chunk of a streamed chat request (the one with `"choices": []`).
json::object streamed_usage(int port, const json::object& body) {
  auto s = StreamingResponse::open(port, "POST", "/v1/chat/completions", json::serialize(body));
  EXPECT_EQ(s->status(), 200);
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::End) << r.raw();
  for (const auto& e : r.events) {
    if (e.data == "[DONE]") continue;
    auto o = parse_json(e.data).as_object();
    if (o.at("choices").as_array().empty()) return o.at("usage").as_object();
  }
  ADD_FAILURE() << "no usage chunk in " << r.raw();
  return {};
}

struct Observed {
  json::value completion_details;  // usage.prompt_tokens_details of a repeated completion
  json::object chat_stream_usage;  // usage chunk of a repeated streamed chat request
  std::int64_t responses_cached = -1;
};

// Sends each request twice (the second hits the prefix cache) and keeps what the second said.
Observed observe(SimServer& sim, const std::string& tag) {
  Observed out;
  HttpClient c(sim.port());
  const json::object completion{
      {"model", kModel}, {"prompt", long_prompt(tag + "c")}, {"max_tokens", 4}, {"temperature", 0}};
  post_ok(c, "/v1/completions", completion);
  const json::object second = post_ok(c, "/v1/completions", completion);
  out.completion_details = second.at("usage").at("prompt_tokens_details");

  const json::object chat{{"model", kModel},
                          {"messages", json::array{json::object{
                                           {"role", "user"}, {"content", long_prompt(tag + "h")}}}},
                          {"max_tokens", 4},
                          {"stream", true},
                          {"stream_options", json::object{{"include_usage", true}}}};
  streamed_usage(sim.port(), chat);
  out.chat_stream_usage = streamed_usage(sim.port(), chat);

  const json::object resp{{"model", kModel},
                          {"input", long_prompt(tag + "r")},
                          {"max_output_tokens", 4},
                          {"store", false}};
  post_ok(c, "/v1/responses", resp);
  const json::object r2 = post_ok(c, "/v1/responses", resp);
  out.responses_cached = i64(r2.at("usage").at("input_tokens_details").at("cached_tokens"));
  return out;
}

TEST(SimUsageDetails, WithoutTheFlagCompletionsAndChatReportNoCachedTokens) {
  SimServer sim({"--time-scale", "50"});
  const Observed o = observe(sim, "off");
  EXPECT_TRUE(o.completion_details.is_null()) << o.completion_details;
  EXPECT_FALSE(o.chat_stream_usage.contains("prompt_tokens_details")) << o.chat_stream_usage;
  EXPECT_GT(i64(o.chat_stream_usage.at("prompt_tokens")), 0);
  // The Responses API reports them whatever the flag.
  EXPECT_GT(o.responses_cached, 0);
}

TEST(SimUsageDetails, WithTheFlagCacheHitsAreReported) {
  SimServer sim({"--time-scale", "50", "--enable-prompt-tokens-details"});
  const Observed o = observe(sim, "on");
  ASSERT_TRUE(o.completion_details.is_object()) << o.completion_details;
  EXPECT_GT(i64(o.completion_details.at("cached_tokens")), 0);
  ASSERT_TRUE(o.chat_stream_usage.contains("prompt_tokens_details")) << o.chat_stream_usage;
  EXPECT_GT(i64(o.chat_stream_usage.at("prompt_tokens_details").at("cached_tokens")), 0);
  EXPECT_GT(o.responses_cached, 0);

  // A request that hits nothing: vLLM 0.11 writes null (it checks `num_cached_tokens` for truth).
  HttpClient c(sim.port());
  const json::object fresh = post_ok(
      c, "/v1/completions",
      json::object{{"model", kModel}, {"prompt", "unseen short prompt"}, {"max_tokens", 2}});
  EXPECT_TRUE(fresh.at("usage").at("prompt_tokens_details").is_null()) << fresh;
}

}  // namespace
}  // namespace llmux::test
