// SPDX-License-Identifier: Apache-2.0
// What affinity and the cache-aware policies read from a request: the response id it names, whether
// its answer's id is worth learning, and its prompt as one text whose prefixes match exactly when
// the prompts' do.
#include <gtest/gtest.h>

#include <string>

#include "gateway/affinity.hpp"
#include "gateway/request_view.hpp"

namespace llmux::gateway {
namespace {

BodyFields fields(std::string body) {
  return read_body_fields(body);
}

TEST(Affinity, TheResponseIdARequestNames) {
  const auto with_prev = fields(R"({"model":"m","previous_response_id":"resp_1","input":"hi"})");
  EXPECT_EQ(named_response_id("/v1/responses", with_prev), "resp_1");
  EXPECT_EQ(named_response_id("/v1/responses/resp_2", {}), "resp_2");
  EXPECT_EQ(named_response_id("/v1/responses/resp_3/cancel", {}), "resp_3");
  EXPECT_EQ(named_response_id("/v1/responses/resp_4/input_items", with_prev), "resp_4");
  EXPECT_EQ(named_response_id("/v1/responses", fields(R"({"input":"hi"})")), "");
  EXPECT_EQ(named_response_id("/v1/responses/", {}), "");
  EXPECT_EQ(named_response_id("/v1/responsesx/resp_5", {}), "");
  EXPECT_EQ(named_response_id("/v1/chat/completions", with_prev), "") << "not the Responses API";
}

TEST(Affinity, WhichAnswersTeachAnId) {
  EXPECT_TRUE(learns_response_id("POST", "/v1/responses", fields(R"({"input":"hi"})")));
  EXPECT_TRUE(learns_response_id("POST", "/v1/responses", fields(R"({"store":true})")));
  EXPECT_FALSE(learns_response_id("POST", "/v1/responses", fields(R"({"store":false})")))
      << "store: false — the backend keeps nothing to come back to";
  EXPECT_TRUE(learns_response_id("GET", "/v1/responses/resp_1", {}));
  EXPECT_FALSE(learns_response_id("GET", "/v1/responses/resp_1/input_items", {}));
  EXPECT_FALSE(learns_response_id("POST", "/v1/responses/resp_1/cancel", {}));
  EXPECT_FALSE(learns_response_id("POST", "/v1/chat/completions", {}));
}

TEST(RequestView, BodyFieldsForRouting) {
  const auto f =
      fields(R"({"model":"m","prompt_cache_key":"conv-1","store":false,"user":"u","stream":true})");
  EXPECT_EQ(f.prompt_cache_key, "conv-1");
  EXPECT_TRUE(f.store_false);
  EXPECT_FALSE(fields(R"({"store":true})").store_false);
  EXPECT_FALSE(fields(R"({"model":"m"})").store_false);
}

std::string prompt(std::string body) {
  std::string out;
  read_body_fields(body);  // pads it, as the gateway does
  read_prompt_text(body, out);
  return out;
}

TEST(RequestView, PromptTextOfEachDialect) {
  EXPECT_EQ(prompt(R"({"model":"m","messages":[{"role":"system","content":"Be brief."},)"
                   R"({"role":"user","content":[{"type":"text","text":"Hi"},)"
                   R"({"type":"image_url","image_url":{"url":"x"}}]}]})"),
            "system: Be brief.\nuser: Hi\n");
  EXPECT_EQ(prompt(R"({"prompt":"Once upon","model":"m"})"), "Once upon\n");
  // Responses: instructions first whatever the order, then the input items.
  EXPECT_EQ(
      prompt(R"({"input":[{"type":"message","role":"user","content":[{"type":"input_text",)"
             R"("text":"ls"}]},{"type":"function_call","name":"shell","arguments":"{\"c\":1}"},)"
             R"({"type":"function_call_output","output":"a.txt"}],"instructions":"You code."})"),
      "instructions: You code.\nmessage: user: ls\nfunction_call: shell: {\"c\":1}\n"
      "function_call_output: a.txt\n");
  EXPECT_EQ(prompt(R"({"input":"hello"})"), "hello\n");
  EXPECT_EQ(prompt("not json"), "");
  EXPECT_EQ(prompt(R"([1,2])"), "");
}

TEST(RequestView, APromptsTextIsAPrefixOfItsLongerConversation) {
  const std::string turn1 =
      prompt(R"({"model":"m","prompt_cache_key":"k","input":[{"role":"user","content":"first"}]})");
  const std::string turn2 = prompt(
      R"({"input":[{"role":"user","content":"first"},{"role":"assistant","content":"reply"},)"
      R"({"role":"user","content":"second"}],"model":"m","prompt_cache_key":"k"})");
  EXPECT_TRUE(turn2.starts_with(turn1)) << turn1 << " | " << turn2;
  // An unpadded body (not read by read_body_fields) is read from a copy.
  const std::string raw = R"({"prompt":"abc"})";
  std::string out;
  read_prompt_text(std::string(raw), out);
  EXPECT_EQ(out, "abc\n");
}

}  // namespace
}  // namespace llmux::gateway
