// SPDX-License-Identifier: Apache-2.0
// The bodies of a disaggregated request's two legs (gateway/disaggregation.hpp), as vLLM's
// reference proxy writes them (vllm/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py,
// send_request_to_service and _handle_completions).
#include "gateway/disaggregation.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace llmux::gateway {
namespace {

namespace json = boost::json;

json::object parsed(const std::optional<std::string>& body) {
  EXPECT_TRUE(body);
  return body ? json::parse(*body).as_object() : json::object{};
}

TEST(DisaggregationLegs, PrefillLegAsksForRemoteDecodeOfOneTokenNotStreamed) {
  const json::object prefill = parsed(prefill_body(
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,)"
      R"("stream_options":{"include_usage":true},"max_tokens":300,"max_completion_tokens":300,)"
      R"("min_tokens":20,"min_completion_tokens":20,"temperature":0.5})"));
  const json::object& params = prefill.at("kv_transfer_params").as_object();
  EXPECT_EQ(params.at("do_remote_decode"), true);
  EXPECT_EQ(params.at("do_remote_prefill"), false);
  for (const char* key : {"remote_engine_id", "remote_block_ids", "remote_host", "remote_port"})
    EXPECT_TRUE(params.at(key).is_null()) << key;
  EXPECT_EQ(prefill.at("stream"), false);
  EXPECT_EQ(prefill.at("max_tokens"), 1);
  EXPECT_EQ(prefill.at("max_completion_tokens"), 1);
  for (const char* key : {"stream_options", "min_tokens", "min_completion_tokens"})
    EXPECT_FALSE(prefill.contains(key)) << key;
  // The rest of the request is the client's.
  EXPECT_EQ(prefill.at("temperature"), 0.5);
  EXPECT_EQ(prefill.at("messages").as_array().size(), 1u);
}

TEST(DisaggregationLegs, PrefillLegAddsNoMaxCompletionTokensTheClientDidNotSend) {
  const json::object prefill = parsed(prefill_body(R"({"prompt":"Once","max_tokens":64})"));
  EXPECT_FALSE(prefill.contains("max_completion_tokens"));
  EXPECT_EQ(prefill.at("max_tokens"), 1);
  EXPECT_FALSE(prefill_body("[1,2]"));
  EXPECT_FALSE(prefill_body("not json"));
}

TEST(DisaggregationLegs, DecodeLegIsTheClientsWithThePrefillsParametersAsTheyCame) {
  const std::string answer =
      R"({"id":"cmpl-1","choices":[{"text":"x"}],"kv_transfer_params":{"do_remote_prefill":true,)"
      R"("do_remote_decode":false,"remote_block_ids":[3,4,5],"remote_engine_id":"e-7",)"
      R"("remote_host":"127.0.0.2","remote_port":5600,"tp_size":1,"something_new":{"a":[1]}}})";
  const std::string params = kv_transfer_params_of(answer);
  ASSERT_FALSE(params.empty());
  const json::object decode = parsed(decode_body(
      R"({"model":"m","prompt":"Once","max_tokens":64,"min_tokens":8,"stream":true})", params,
      /*ask_usage=*/true));
  // Passed on whole, fields the gateway does not know included.
  EXPECT_EQ(decode.at("kv_transfer_params"), json::parse(answer).at("kv_transfer_params"));
  EXPECT_EQ(decode.at("max_tokens"), 64);
  EXPECT_EQ(decode.at("min_tokens"), 8);
  EXPECT_EQ(decode.at("stream"), true);
  EXPECT_EQ(decode.at("stream_options").at("include_usage"), true);
}

TEST(DisaggregationLegs, APrefillWithoutParametersLeavesTheDecodeLegToPrefillItself) {
  // vLLM returns none when the prefill's one token ended the sequence.
  EXPECT_EQ(kv_transfer_params_of(R"({"id":"c","kv_transfer_params":null})"), "");
  EXPECT_EQ(kv_transfer_params_of(R"({"id":"c"})"), "");
  EXPECT_EQ(kv_transfer_params_of("garbage"), "");
  // A client's own kv_transfer_params do not reach the decode leg then.
  const json::object decode = parsed(
      decode_body(R"({"prompt":"x","kv_transfer_params":{"do_remote_prefill":true}})", "", false));
  EXPECT_FALSE(decode.contains("kv_transfer_params"));
  EXPECT_FALSE(decode.contains("stream_options"));
}

}  // namespace
}  // namespace llmux::gateway
