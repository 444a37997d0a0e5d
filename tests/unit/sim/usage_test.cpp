// SPDX-License-Identifier: Apache-2.0
// The usage objects the simulator writes, with and without --enable-prompt-tokens-details, as
// vLLM 0.11 writes them: prompt_tokens_details only with the flag and a cache hit (else null in
// a body, left out of a stream's usage chunk, never in continuous usage); the Responses API's
// input_tokens_details always.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>

#include "sim/api.hpp"

namespace llmux::sim {
namespace {
namespace json = boost::json;

Usage usage(std::int64_t cached, bool details) {
  Usage u;
  u.prompt_tokens = 40;
  u.completion_tokens = 8;
  u.cached_tokens = cached;
  u.prompt_tokens_details = details;
  return u;
}

json::object parse(const std::string& s) {
  return json::parse(s).as_object();
}

// The JSON of a `data: {...}\n\n` frame.
json::object frame_json(const std::string& frame) {
  EXPECT_TRUE(frame.starts_with("data: ")) << frame;
  return parse(frame.substr(6));
}

TEST(SimUsage, DetailsOnlyWithTheFlagAndAHit) {
  const auto off = parse(usage_json(usage(32, false)));
  EXPECT_TRUE(off.at("prompt_tokens_details").is_null());
  EXPECT_EQ(off.at("prompt_tokens").as_int64(), 40);
  EXPECT_EQ(off.at("total_tokens").as_int64(), 48);

  const auto on = parse(usage_json(usage(32, true)));
  EXPECT_EQ(on.at("prompt_tokens_details").at("cached_tokens").as_int64(), 32);

  // vLLM 0.11 tests num_cached_tokens for truth: no hit, no details.
  EXPECT_TRUE(parse(usage_json(usage(0, true))).at("prompt_tokens_details").is_null());

  // Streamed usage is written with exclude_none: the key is left out.
  EXPECT_FALSE(parse(usage_json(usage(32, false), false)).contains("prompt_tokens_details"));
  EXPECT_EQ(parse(usage_json(usage(32, true), false))
                .at("prompt_tokens_details")
                .at("cached_tokens")
                .as_int64(),
            32);
}

TEST(SimUsage, BodiesAndFramesFollowTheFlag) {
  ResponseMeta m;
  m.id = "cmpl-1";
  m.model = "m";
  m.finish_reason = "length";
  EXPECT_TRUE(parse(completion_body(m, " a", usage(32, false)))
                  .at("usage")
                  .at("prompt_tokens_details")
                  .is_null());
  EXPECT_EQ(parse(completion_body(m, " a", usage(32, true)))
                .at("usage")
                .at("prompt_tokens_details")
                .at("cached_tokens")
                .as_int64(),
            32);
  m.endpoint = Endpoint::Chat;
  EXPECT_EQ(parse(chat_body(m, " a", usage(32, true)))
                .at("usage")
                .at("prompt_tokens_details")
                .at("cached_tokens")
                .as_int64(),
            32);
  const auto off = frame_json(usage_frame(m, usage(32, false)));
  EXPECT_FALSE(off.at("usage").as_object().contains("prompt_tokens_details")) << off;
  const auto on = frame_json(usage_frame(m, usage(32, true)));
  EXPECT_EQ(on.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64(), 32);
}

TEST(SimUsage, ResponsesAlwaysReportInputTokensDetails) {
  ResponseMeta m;
  m.endpoint = Endpoint::Responses;
  m.id = "resp_1";
  m.item_id = "msg_1";
  m.model = "m";
  GenRequest req;
  req.endpoint = Endpoint::Responses;
  const json::object r = response_object(m, req, "completed", " a", usage(32, false));
  EXPECT_EQ(r.at("usage").at("input_tokens_details").at("cached_tokens").as_int64(), 32);
}

}  // namespace
}  // namespace llmux::sim
