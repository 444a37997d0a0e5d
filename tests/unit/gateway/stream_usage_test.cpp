// SPDX-License-Identifier: Apache-2.0
// Token counts for every stream (gateway/stream_usage.hpp): the body that asks for usage, and the
// usage-only chunk found among the events the relay cuts.
#include "gateway/stream_usage.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace llmux::gateway {
namespace {

/// The bytes sent upstream for `body` (read as the gateway reads it).
struct Sent {
  UsageRequest usage;
  std::string bytes;
};
Sent sent(std::string body, std::string_view path = "/v1/chat/completions",
          std::string_view method = "POST") {
  std::string copy = body;
  const BodyFields f = read_body_fields(copy);
  Sent s;
  s.usage = ask_for_usage(method, path, body, f);
  s.bytes = std::string(s.usage.first(body)) + std::string(s.usage.second(body));
  EXPECT_EQ(s.usage.size(body), s.bytes.size());
  return s;
}

TEST(StreamUsage, AsksWhenTheStreamDoesNotAndKeepsEverythingElse) {
  const std::string body =
      R"(  {"model":"m","stream":true,"messages":[{"role":"user","content":"{x}"}],"n":2})";
  const Sent s = sent(body);
  ASSERT_TRUE(s.usage.asked);
  EXPECT_TRUE(s.usage.owned.empty()) << "no copy of the client's body";
  const auto v = boost::json::parse(s.bytes);
  EXPECT_TRUE(v.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(v.at("messages").at(0).at("content").as_string(), "{x}");
  EXPECT_EQ(v.at("n").as_int64(), 2);
  EXPECT_EQ(v.as_object().size(), 5u);
  // Completions too.
  EXPECT_TRUE(sent(R"({"prompt":"a","stream":true})", "/v1/completions").usage.asked);
}

TEST(StreamUsage, SetsIncludeUsageInTheClientsStreamOptions) {
  for (const std::string so : {R"({"include_usage":false,"continuous_usage_stats":true})",
                               R"(null)", R"({})", R"("junk")"}) {
    const Sent s = sent(R"({"stream":true,"stream_options":)" + so + R"(,"model":"m"})");
    ASSERT_TRUE(s.usage.asked) << so;
    const auto v = boost::json::parse(s.bytes);
    EXPECT_TRUE(v.at("stream_options").at("include_usage").as_bool()) << so;
    EXPECT_EQ(v.at("model").as_string(), "m");
    if (so.starts_with("{\"include_usage\":false")) {
      EXPECT_TRUE(v.at("stream_options").at("continuous_usage_stats").as_bool());
    }
  }
}

TEST(StreamUsage, LeavesEverythingElseAlone) {
  const std::string asked = R"({"stream":true,"stream_options":{"include_usage":true}})";
  for (const auto& [body, path, method] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {R"({"stream":false})", "/v1/chat/completions", "POST"},
           {R"({"model":"m"})", "/v1/chat/completions", "POST"},
           {asked, "/v1/chat/completions", "POST"},
           {R"({"stream":true})", "/v1/responses", "POST"},  // its usage is always there
           {R"({"stream":true})", "/v1/embeddings", "POST"},
           {R"({"stream":true})", "/v1/chat/completions", "PUT"},
           {R"(not json {"stream":true})", "/v1/chat/completions", "POST"},
           {R"([{"stream":true}])", "/v1/chat/completions", "POST"}}) {
    const Sent s = sent(body, path, method);
    EXPECT_FALSE(s.usage.asked) << body << " " << path;
    EXPECT_EQ(s.bytes, body);
  }
}

TEST(StreamUsage, FindsTheUsageOnlyEventAmongOthers) {
  const std::string content =
      "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"usage\"}}]}\n\n";
  const std::string usage =
      "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}"
      "\n\n";
  const std::string done = "data: [DONE]\n\n";
  const std::string all = content + usage + done;
  const ByteRange r = find_usage_only_event(all.data(), all.size());
  EXPECT_EQ(r.begin, content.size());
  EXPECT_EQ(r.end, content.size() + usage.size());
  // The word in content, usage null on a chunk with choices (OpenAI's style): not it.
  const std::string openai_style =
      "data: {\"choices\":[{\"delta\":{\"content\":\"\\\"usage\\\"\"}}],\"usage\":null}\n\n";
  const std::string none = content + openai_style + done;
  EXPECT_TRUE(find_usage_only_event(none.data(), none.size()).empty());
  // CRLF line ends and a spaced JSON style.
  const std::string crlf =
      "data: {\"choices\": [], \"usage\": {\"completion_tokens\": 2}}\r\n\r\n" + done;
  const ByteRange c = find_usage_only_event(crlf.data(), crlf.size());
  EXPECT_EQ(c.begin, 0u);
  EXPECT_EQ(c.end, crlf.find("data: [DONE]"));
  // An event not complete yet is not looked at.
  const std::string partial = usage.substr(0, usage.size() - 1);
  EXPECT_TRUE(find_usage_only_event(partial.data(), partial.size()).empty());
}

}  // namespace
}  // namespace llmux::gateway
