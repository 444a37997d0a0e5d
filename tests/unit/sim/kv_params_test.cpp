// SPDX-License-Identifier: Apache-2.0
// The kv_transfer_params a request carries and a producer answers (sim/kv_params), and a
// producer's held handles until read or timed out (sim/kv_handles).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "sim/kv_handles.hpp"
#include "sim/kv_params.hpp"

namespace llmux::sim {
namespace {

namespace json = boost::json;

KvRequest read(const json::object& params) {
  json::object body{{"model", "m"}, {"prompt", "p"}, {"kv_transfer_params", params}};
  auto result = read_kv_request(json::serialize(body));
  EXPECT_TRUE(std::holds_alternative<std::optional<KvRequest>>(result));
  auto request = std::get<std::optional<KvRequest>>(result);
  EXPECT_TRUE(request.has_value());
  return request.value_or(KvRequest{});
}

json::object handle_params() {
  return {{"do_remote_prefill", true},
          {"do_remote_decode", false},
          {"remote_block_ids", json::array{json::array{3, 4, 5}}},
          {"remote_engine_id", "engine-p"},
          {"remote_request_id", "cmpl-1"},
          {"remote_host", "127.0.0.3"},
          {"remote_port", 8100},
          {"tp_size", 1}};
}

TEST(KvParams, TheProxysPrefillLegAsksForRemoteDecode) {
  // toy_proxy_server.py's prefill leg.
  const KvRequest request = read({{"do_remote_decode", true},
                                  {"do_remote_prefill", false},
                                  {"remote_engine_id", nullptr},
                                  {"remote_block_ids", nullptr},
                                  {"remote_host", nullptr},
                                  {"remote_port", nullptr}});
  EXPECT_TRUE(request.remote_decode);
  EXPECT_FALSE(request.remote_prefill);
  EXPECT_FALSE(request.handle);
}

TEST(KvParams, ADecodeLegCarriesAHandleOnlyWhenComplete) {
  const KvRequest request = read(handle_params());
  EXPECT_TRUE(request.remote_prefill);
  ASSERT_TRUE(request.handle);
  EXPECT_EQ(request.handle->request_id, "cmpl-1");
  EXPECT_EQ(request.handle->engine_id, "engine-p");
  EXPECT_EQ(request.handle->host, "127.0.0.3");
  EXPECT_EQ(request.handle->port, 8100);
  EXPECT_EQ(json::serialize(request.handle->block_ids), "[[3,4,5]]");
  // vLLM's update_state_after_alloc: a missing field or empty block ids is no transfer.
  for (const char* field : {"remote_engine_id", "remote_request_id", "remote_host", "remote_port",
                            "remote_block_ids"}) {
    json::object params = handle_params();
    params.erase(field);
    EXPECT_FALSE(read(params).handle) << field;
    EXPECT_TRUE(read(params).remote_prefill) << field;
  }
  json::object empty = handle_params();
  empty["remote_block_ids"] = json::array{};
  EXPECT_FALSE(read(empty).handle);
}

TEST(KvParams, AbsentOrNullIsNothingAndAnythingButAnObjectIs400) {
  auto none = read_kv_request(R"({"prompt":"p"})");
  EXPECT_FALSE(std::get<std::optional<KvRequest>>(none));
  auto null = read_kv_request(R"({"prompt":"p","kv_transfer_params":null})");
  EXPECT_FALSE(std::get<std::optional<KvRequest>>(null));
  auto bad = read_kv_request(R"({"prompt":"p","kv_transfer_params":[1]})");
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).status, 400);
  EXPECT_EQ(std::get<ApiError>(bad).param, "kv_transfer_params");
}

TEST(KvParams, ProducerAnswerHasNixlConnectorsFieldsInOrder) {
  ProducerHandle handle;
  handle.request_id = "cmpl-9";
  handle.engine_id = "e";
  handle.host = "127.0.0.1";
  handle.port = 30000;
  handle.block_ids = {7, 8};
  EXPECT_EQ(producer_params_json(handle),
            R"({"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":[[7,8]],)"
            R"("remote_engine_id":"e","remote_request_id":"cmpl-9","remote_host":"127.0.0.1",)"
            R"("remote_port":30000,"tp_size":1})");
  // What a producer answers is what a consumer reads back as a handle.
  const auto back = parse_read_request(producer_params_json(handle));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->request_id, "cmpl-9");
  EXPECT_EQ(back->port, 30000);
  const auto request = parse_read_request(read_request_json(*back));
  ASSERT_TRUE(request);
  EXPECT_EQ(json::serialize(request->block_ids), "[[7,8]]");
}

TEST(KvParams, OnlyARequestCutByLengthIsHandedOver) {
  EXPECT_TRUE(hands_over("length"));
  EXPECT_FALSE(hands_over("stop"));  // end of sequence on the one token: no params
  EXPECT_FALSE(hands_over("tool_calls"));
  EXPECT_FALSE(hands_over("abort"));
}

HeldKv held(const std::string& id, double expires_at) {
  HeldKv h;
  h.request_id = id;
  h.seq = id.size();
  h.block_ids = {1, 2, 3};
  h.tokens = 40;
  h.expires_at = expires_at;
  return h;
}

TEST(KvHandles, ReadOnceWithItsOwnBlocks) {
  KvHandles handles;
  handles.add(held("a", 10));
  EXPECT_FALSE(handles.take("a", {1, 2}));  // other blocks: not this handle
  EXPECT_FALSE(handles.take("b", {1, 2, 3}));
  const auto taken = handles.take("a", {1, 2, 3});
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->tokens, 40);
  EXPECT_FALSE(handles.take("a", {1, 2, 3}));  // freed on read: a second read finds nothing
  EXPECT_EQ(handles.size(), 0u);
  EXPECT_FALSE(handles.next_expiry());
  EXPECT_TRUE(handles.take_expired(100).empty());  // a read handle never expires later
}

TEST(KvHandles, ExpireInOrderAtTheirTimes) {
  KvHandles handles;
  handles.add(held("late", 20));
  handles.add(held("early", 10));
  handles.add(held("same", 10));
  EXPECT_EQ(handles.next_expiry(), 10.0);
  EXPECT_TRUE(handles.take_expired(9.99).empty());
  auto expired = handles.take_expired(10.0);
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(handles.next_expiry(), 20.0);
  EXPECT_FALSE(handles.take("early", {1, 2, 3}));  // expired: gone
  EXPECT_TRUE(handles.take("late", {1, 2, 3}));
  EXPECT_TRUE(handles.take_expired(1e9).empty());
}

}  // namespace
}  // namespace llmux::sim
