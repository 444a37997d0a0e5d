// SPDX-License-Identifier: Apache-2.0
// Prefill/decode disaggregation through the gateway (issue 40, item 1): each leg's body as vLLM's
// reference proxy writes it (vllm/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py),
// seen by backends that record what they receive; the producer's kv_transfer_params passed to
// the decode leg as they came; the whole exchange between a `llmux sim --kv-role producer` and a
// consumer, streamed and not; and each fallback: no prefill answer (served unified), a prefill
// without parameters, a decode leg that fails before its answer (the next one unified), a handle
// that expired while its decode leg waited (the consumer's kv_load_failure_policy), and `auto`,
// which leaves short prompts alone.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <string>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kChat =
    R"({"model":"m","messages":[{"role":"user","content":"Tell me about the sea."}],)"
    R"("max_tokens":24,"min_tokens":4,"stream":true,"stream_options":{"include_usage":true}})";

/// A gateway with `prefill` (role prefill) and `decode` backends (role decode) on one route that
/// disaggregates `mode`.
std::unique_ptr<GatewayServer> gateway(const std::string& prefill_backends,
                                       const std::string& decode_backends, const std::string& names,
                                       const std::string& mode = "always",
                                       const std::string& extra = "") {
  return GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 1\nbackends:\n" + prefill_backends + decode_backends +
      "routes:\n  - {name: split, backends: [" + names +
      "], policy: first, disaggregation: {mode: " + mode + extra + "}}\n");
}

json::object body_of(const ReceivedRequest& request) {
  return parse_json(request.body).as_object();
}

TEST(GatewayDisaggregation, EachLegCarriesTheReferenceProxysFields) {
  GatedBackend prefill({GatedBackend::Mode::Echo});
  GatedBackend decode({GatedBackend::Mode::Echo});
  auto gw = gateway(backend_line("p", prefill.port(), ", role: prefill"),
                    backend_line("d", decode.port(), ", role: decode"), "p, d");
  HttpClient client(gw->port());
  Response answer = client.post("/v1/chat/completions", kChat, {{"X-Request-Id", "split-fields"}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.header("x-llmux-backend"), "d") << "the client's answer is the decode leg's";
  ASSERT_EQ(prefill.requests().size(), 1u);
  ASSERT_EQ(decode.requests().size(), 1u);
  const ReceivedRequest first = prefill.requests()[0];
  const ReceivedRequest second = decode.requests()[0];
  // The prefill leg: remote decode asked, one token, not streamed, no usage options or floors.
  const json::object prefill_body = body_of(first);
  const json::object& params = prefill_body.at("kv_transfer_params").as_object();
  EXPECT_EQ(params.at("do_remote_decode"), true);
  EXPECT_EQ(params.at("do_remote_prefill"), false);
  EXPECT_TRUE(params.at("remote_block_ids").is_null());
  EXPECT_EQ(prefill_body.at("stream"), false);
  EXPECT_EQ(prefill_body.at("max_tokens"), 1);
  EXPECT_FALSE(prefill_body.contains("stream_options"));
  EXPECT_FALSE(prefill_body.contains("min_tokens"));
  // The decode leg: the client's request (this prefill answered no parameters: it prefills
  // itself), its floor and options kept.
  const json::object decode_body = body_of(second);
  EXPECT_FALSE(decode_body.contains("kv_transfer_params"));
  EXPECT_EQ(decode_body.at("max_tokens"), 24);
  EXPECT_EQ(decode_body.at("min_tokens"), 4);
  EXPECT_EQ(decode_body.at("stream"), true);
  // Both legs carry the request's id.
  EXPECT_EQ(first.header("x-request-id"), "split-fields");
  EXPECT_EQ(second.header("x-request-id"), "split-fields");
  const json::object record = gw->wait_access_record("split-fields", 5s);
  EXPECT_EQ(str(record.at("prefill_backend")), "p");
  EXPECT_EQ(str(record.at("backend")), "d");
  const std::string metrics = client.get("/metrics").body;
  EXPECT_NE(metrics.find(R"(llmux_prefill_legs_total{route="split",prefill="p"} 1)"),
            std::string::npos)
      << metrics;
  gw->expect_clean_exit();
}

TEST(GatewayDisaggregation, TheProducersParametersReachTheDecodeLegAsTheyCame) {
  SimServer producer({"--time-scale", "20", "--served-model-name", "m", "--kv-role", "producer"});
  GatedBackend decode({GatedBackend::Mode::Echo});
  auto gw = gateway(backend_line("p", producer.port(), ", role: prefill"),
                    backend_line("d", decode.port(), ", role: decode"), "p, d");
  HttpClient client(gw->port());
  const std::string body =
      R"({"model":"m","prompt":"Once upon a time there was a long prompt","max_tokens":32,)"
      R"("ignore_eos":true})";
  Response answer = client.post("/v1/completions", body);
  ASSERT_EQ(answer.status, 200) << answer.body;
  ASSERT_EQ(decode.requests().size(), 1u);
  const json::object decode_body = body_of(decode.requests()[0]);
  ASSERT_TRUE(decode_body.contains("kv_transfer_params")) << decode.requests()[0].body;
  const json::object& params = decode_body.at("kv_transfer_params").as_object();
  EXPECT_EQ(params.at("do_remote_prefill"), true);
  EXPECT_EQ(params.at("do_remote_decode"), false);
  EXPECT_TRUE(params.at("remote_block_ids").is_array());
  EXPECT_FALSE(params.at("remote_block_ids").as_array().empty());
  EXPECT_EQ(str(params.at("remote_host")), "127.0.0.1");
  EXPECT_EQ(i64(params.at("remote_port")), producer.port());
  EXPECT_EQ(decode_body.at("max_tokens"), 32);
  gw->expect_clean_exit();
}

TEST(GatewayDisaggregation, AProducerAndAConsumerServeStreamsAndWholeAnswers) {
  SimServer producer({"--time-scale", "20", "--served-model-name", "m", "--kv-role", "producer"});
  SimServer consumer({"--time-scale", "20", "--served-model-name", "m", "--kv-role", "consumer"});
  auto gw = gateway(backend_line("p", producer.port(), ", role: prefill"),
                    backend_line("d", consumer.port(), ", role: decode"), "p, d");
  // A stream: the consumer's events, with the usage the client asked for.
  auto stream = StreamingResponse::open(gw->port(), "POST", "/v1/chat/completions", kChat,
                                        {{"X-Request-Id", "split-stream"}});
  ASSERT_EQ(stream->status(), 200);
  EXPECT_EQ(stream->header("x-llmux-backend"), "d");
  const SseResult events = read_sse(*stream);
  ASSERT_EQ(events.end, ReadStatus::End) << events.raw();
  EXPECT_NE(events.raw().find("[DONE]"), std::string::npos);
  EXPECT_NE(events.raw().find("\"usage\""), std::string::npos) << "the client asked for usage";
  const json::object record = gw->wait_access_record("split-stream", 5s);
  EXPECT_EQ(str(record.at("prefill_backend")), "p");
  EXPECT_GT(i64(record.at("completion_tokens")), 0);
  // A whole answer; the same prompt served unified by the consumer counts the same prompt.
  HttpClient client(gw->port());
  const std::string body = R"({"model":"m","prompt":"The sea is","max_tokens":8})";
  Response answer = client.post("/v1/completions", body, {{"X-Request-Id", "split-whole"}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  Response unified = HttpClient(consumer.port()).post("/v1/completions", body);
  ASSERT_EQ(unified.status, 200) << unified.body;
  EXPECT_EQ(parse_json(answer.body).at("usage").at("prompt_tokens"),
            parse_json(unified.body).at("usage").at("prompt_tokens"));
  EXPECT_EQ(str(gw->wait_access_record("split-whole", 5s).at("prefill_backend")), "p");
  gw->expect_clean_exit();
}

TEST(GatewayDisaggregation, AnExpiredHandleIsRecomputedOrRefusedAsTheConsumerSays) {
  // The producer frees what nobody fetched after 1 ms of model time; the decode leg waits for
  // the only decode slot, held by a stream, far longer than that.
  SimServer producer({"--time-scale", "20", "--served-model-name", "m", "--kv-role", "producer",
                      "--kv-abort-timeout", "0.001"});
  for (const char* policy : {"recompute", "fail"}) {
    SimServer consumer({"--time-scale", "20", "--served-model-name", "m", "--kv-role", "consumer",
                        "--kv-load-failure-policy", policy});
    auto gw =
        gateway(backend_line("p", producer.port(), ", role: prefill"),
                backend_line("d", consumer.port(), ", role: decode, max_inflight: 1"), "p, d");
    // A stream holds the decode backend's one slot for a while.
    const std::string holding =
        R"({"model":"m","prompt":"hold","max_tokens":200,"ignore_eos":true,"stream":true})";
    auto held = StreamingResponse::open(gw->port(), "POST", "/v1/completions", holding);
    ASSERT_EQ(held->status(), 200);
    HttpClient client(gw->port());
    Response answer =
        client.post("/v1/completions", R"({"model":"m","prompt":"Late to fetch","max_tokens":8})",
                    {{"X-Request-Id", std::string("expired-") + policy}});
    EXPECT_EQ(read_sse(*held).end, ReadStatus::End);
    if (std::string_view(policy) == "recompute") {
      EXPECT_EQ(answer.status, 200) << answer.body;
    } else {
      // vLLM's answer to a handle it cannot load, passed on as it came.
      EXPECT_EQ(answer.status, 500) << answer.body;
      EXPECT_EQ(answer.header("x-llmux-backend"), "d");
    }
    EXPECT_EQ(
        str(gw->wait_access_record(std::string("expired-") + policy, 5s).at("prefill_backend")),
        "p");
    gw->expect_clean_exit();
  }
}

TEST(GatewayDisaggregation, NoPrefillAnswerMeansUnifiedServing) {
  // The prefill backends: one that answers bytes that are not HTTP, one port nobody listens on.
  GatedBackend garbage({GatedBackend::Mode::Garbage});
  GatedBackend decode({GatedBackend::Mode::Echo});
  auto gw = gateway(backend_line("bad", garbage.port(), ", role: prefill") +
                        backend_line("gone", closed_port(), ", role: prefill"),
                    backend_line("d", decode.port(), ", role: decode"), "bad, gone, d");
  HttpClient client(gw->port());
  Response answer = client.post("/v1/chat/completions", kChat, {{"X-Request-Id", "split-none"}});
  ASSERT_EQ(answer.status, 200) << answer.body;
  ASSERT_EQ(decode.requests().size(), 1u);
  const json::object decode_body = body_of(decode.requests()[0]);
  EXPECT_FALSE(decode_body.contains("kv_transfer_params"));
  EXPECT_EQ(decode_body.at("max_tokens"), 24) << "the client's own request";
  EXPECT_EQ(str(gw->wait_access_record("split-none", 5s).at("prefill_backend")), "unified");
  EXPECT_NE(client.get("/metrics")
                .body.find(R"(llmux_prefill_legs_total{route="split",prefill="unified"} 1)"),
            std::string::npos);
  gw->expect_clean_exit();
}

TEST(GatewayDisaggregation, ADecodeLegThatFailsIsFollowedByAUnifiedOne) {
  SimServer producer({"--time-scale", "20", "--served-model-name", "m", "--kv-role", "producer"});
  GatedBackend mute({GatedBackend::Mode::CloseWithoutResponse});
  GatedBackend decode({GatedBackend::Mode::Echo});
  // `first` tries the mute decode backend before the echo.
  auto gw = gateway(backend_line("p", producer.port(), ", role: prefill"),
                    backend_line("mute", mute.port(), ", role: decode") +
                        backend_line("d", decode.port(), ", role: decode"),
                    "p, mute, d");
  HttpClient client(gw->port());
  const std::string body = R"({"model":"m","prompt":"A prompt","max_tokens":16,"ignore_eos":true})";
  Response answer = client.post("/v1/completions", body);
  ASSERT_EQ(answer.status, 200) << answer.body;
  ASSERT_EQ(mute.requests().size(), 1u);
  EXPECT_TRUE(body_of(mute.requests()[0]).contains("kv_transfer_params"));
  ASSERT_EQ(decode.requests().size(), 1u);
  EXPECT_FALSE(body_of(decode.requests()[0]).contains("kv_transfer_params"))
      << "the KV cache the first decode backend was to fetch may be gone";
  gw->expect_clean_exit();
}

TEST(GatewayDisaggregation, AutoLeavesShortPromptsAloneAndOtherApisUnified) {
  GatedBackend prefill({GatedBackend::Mode::Echo});
  GatedBackend decode({GatedBackend::Mode::Echo});
  auto gw = gateway(backend_line("p", prefill.port(), ", role: prefill"),
                    backend_line("d", decode.port(), ", role: decode"), "p, d", "auto",
                    ", threshold_tokens: 40");
  HttpClient client(gw->port());
  ASSERT_EQ(
      client.post("/v1/completions", R"({"model":"m","prompt":"short","max_tokens":4})").status,
      200);
  EXPECT_EQ(prefill.requests().size(), 0u) << "a short prompt went to prefill";
  std::string long_prompt;
  for (int i = 0; i < 60; ++i) long_prompt += "word" + std::to_string(i) + " ";
  ASSERT_EQ(client
                .post("/v1/completions",
                      R"({"model":"m","prompt":")" + long_prompt + R"(","max_tokens":4})")
                .status,
            200);
  EXPECT_EQ(prefill.requests().size(), 1u) << "a long prompt was not disaggregated";
  // The Responses API is served unified on such a route.
  ASSERT_EQ(
      client
          .post("/v1/responses", R"({"model":"m","input":")" + long_prompt + R"(","store":false})")
          .status,
      200);
  EXPECT_EQ(prefill.requests().size(), 1u);
  EXPECT_EQ(decode.requests().size(), 3u);
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
