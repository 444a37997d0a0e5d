// SPDX-License-Identifier: Apache-2.0
// Prefill/decode disaggregation between two `llmux sim` processes on loopback, driven over HTTP
// as vLLM's reference proxy drives two NixlConnector instances
// (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py at 030ea52e): the prefill leg to
// the producer with kv_transfer_params {do_remote_decode: true, ...}, stream false, max_tokens 1
// (and max_completion_tokens 1 when present), no stream_options; then the decode leg to the
// consumer with the client's body plus the kv_transfer_params the prefill answered; both legs
// with the same X-Request-Id. See docs/sim.md, "Prefill/decode disaggregation".
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;

constexpr const char* kModel = "Qwen3.6-35B-A3B";
constexpr const char* kAtlas = "dgx-spark-qwen3.6-35b-a3b-fp8-atlas";

// A prompt of about `words` tokens, distinct per `tag`.
std::string prompt_of(const std::string& tag, int words) {
  std::string text = tag;
  for (int i = 0; i < words; ++i) text += " w" + std::to_string(i % 97);
  return text;
}

std::vector<std::string> sim_args(std::vector<std::string> extra) {
  std::vector<std::string> args{"--preset", kAtlas, "--time-scale", "10",
                                "--enable-prompt-tokens-details"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The proxy's prefill leg: the client's body with the connector's request for remote decode.
json::object prefill_leg(json::object body) {
  body["kv_transfer_params"] = json::object{
      {"do_remote_decode", true},    {"do_remote_prefill", false}, {"remote_engine_id", nullptr},
      {"remote_block_ids", nullptr}, {"remote_host", nullptr},     {"remote_port", nullptr}};
  body["stream"] = false;
  body["max_tokens"] = 1;
  if (body.contains("max_completion_tokens")) body["max_completion_tokens"] = 1;
  body.erase("stream_options");
  body.erase("min_tokens");
  return body;
}

json::object completion(const std::string& prompt, int max_tokens) {
  return {{"model", kModel}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

json::object post_json(int port, std::string_view target, const json::object& body,
                       const std::string& request_id, int want_status = 200) {
  HttpClient client(port, std::chrono::seconds(30));
  Response r = client.post(target, json::serialize(body), {{"X-Request-Id", request_id}});
  EXPECT_EQ(r.status, want_status) << target << " -> " << r.body;
  json::value v = parse_json(r.body);
  return v.is_object() ? v.get_object() : json::object{};
}

json::object debug_record(int port, const std::string& id) {
  HttpClient client(port);
  Response r = client.get("/debug/requests/" + id);
  EXPECT_EQ(r.status, 200) << r.body;
  return parse_json(r.body).as_object();
}

double ttft_seconds(const json::object& record) {
  return static_cast<double>(i64(record.at("first_token_ns")) - i64(record.at("arrival_ns"))) *
         1e-9;
}

double metric(int port, std::string_view name) {
  HttpClient client(port);
  return metric_value(client.get("/metrics").body, name).value_or(-1);
}

class Disaggregation : public ::testing::Test {
 protected:
  SimServer producer{sim_args({"--kv-role", "producer", "--kv-engine-id", "prefill-engine"})};
  SimServer consumer{sim_args({"--kv-role", "consumer"})};
};

TEST_F(Disaggregation, ProducerAnswersAHandleTheConsumerLoadsInsteadOfPrefilling) {
  const std::string prompt = prompt_of("fields", 3000);
  const json::object prefill =
      post_json(producer.port(), "/v1/completions", prefill_leg(completion(prompt, 20)), "rid-1");
  // The producer's answer: one token, cut by length, and NixlConnector's handle.
  EXPECT_EQ(prefill.at("choices").at(0).at("finish_reason"), "length");
  EXPECT_EQ(i64(prefill.at("usage").at("completion_tokens")), 1);
  const std::int64_t prompt_tokens = i64(prefill.at("usage").at("prompt_tokens"));
  const json::object& params = prefill.at("kv_transfer_params").as_object();
  std::vector<std::string> keys;
  for (const auto& field : params) keys.emplace_back(field.key());
  EXPECT_EQ(keys,
            (std::vector<std::string>{"do_remote_prefill", "do_remote_decode", "remote_block_ids",
                                      "remote_engine_id", "remote_request_id", "remote_host",
                                      "remote_port", "tp_size"}));
  EXPECT_EQ(params.at("do_remote_prefill"), true);
  EXPECT_EQ(params.at("do_remote_decode"), false);
  EXPECT_EQ(params.at("remote_engine_id"), "prefill-engine");
  EXPECT_EQ(params.at("remote_request_id"), prefill.at("id"));
  EXPECT_EQ(params.at("remote_host"), "127.0.0.1");
  EXPECT_EQ(i64(params.at("remote_port")), producer.port());
  EXPECT_EQ(i64(params.at("tp_size")), 1);
  const json::array& groups = params.at("remote_block_ids").as_array();
  ASSERT_EQ(groups.size(), 1u);  // one list per KV cache group
  EXPECT_EQ(static_cast<std::int64_t>(groups.at(0).as_array().size()), (prompt_tokens + 15) / 16);
  EXPECT_EQ(debug_record(producer.port(), "rid-1").at("kv_transfer"), "held");

  // The decode leg: the client's body plus the handle.
  json::object decode = completion(prompt, 20);
  decode["kv_transfer_params"] = params;
  const json::object answer = post_json(consumer.port(), "/v1/completions", decode, "rid-1");
  EXPECT_EQ(i64(answer.at("usage").at("completion_tokens")), 20);
  EXPECT_EQ(i64(answer.at("usage").at("prompt_tokens")), prompt_tokens);
  // vLLM counts the loaded tokens as cached (num_cached_tokens = num_computed_tokens): all but
  // the last, which the consumer computes itself.
  EXPECT_EQ(i64(answer.at("usage").at("prompt_tokens_details").at("cached_tokens")),
            prompt_tokens - 1);
  EXPECT_TRUE(answer.at("kv_transfer_params").is_null()) << answer;

  const json::object loaded = debug_record(consumer.port(), "rid-1");
  EXPECT_EQ(loaded.at("kv_transfer"), "loaded");
  EXPECT_EQ(i64(loaded.at("kv_transfer_tokens")), prompt_tokens - 1);
  // The read freed the producer's blocks: its handle is gone.
  EXPECT_EQ(debug_record(producer.port(), "rid-1").at("kv_transfer"), "read");
  EXPECT_EQ(metric(consumer.port(), "vllm:external_prefix_cache_hits_total"), prompt_tokens - 1);
  EXPECT_EQ(metric(consumer.port(), "vllm:prefix_cache_hits_total"), 0);
  EXPECT_EQ(metric(consumer.port(), "vllm:nixl_xfer_time_seconds_count"), 1);

  // A handle is read once: the same decode leg again is an unknown handle now (vLLM's default
  // policy, fail: 500 Internal server error).
  const json::object again = post_json(consumer.port(), "/v1/completions", decode, "rid-2", 500);
  EXPECT_EQ(again.at("error").at("message"), "Internal server error");
  EXPECT_EQ(again.at("error").at("type"), "InternalServerError");
  EXPECT_EQ(metric(consumer.port(), "vllm:nixl_num_failed_transfers_total"), 1);
}

TEST_F(Disaggregation, ChatDecodeLegStreamsAfterANonStreamingPrefillLeg) {
  const json::object client{
      {"model", kModel},
      {"messages",
       json::array{json::object{{"role", "user"}, {"content", prompt_of("chat", 2000)}}}},
      {"max_completion_tokens", 12},
      {"temperature", 0},
      {"stream", true},
      {"stream_options", json::object{{"include_usage", true}}}};
  const json::object leg = prefill_leg(client);
  EXPECT_EQ(i64(leg.at("max_completion_tokens")), 1);
  const json::object prefill = post_json(producer.port(), "/v1/chat/completions", leg, "chat-1");
  ASSERT_TRUE(prefill.at("kv_transfer_params").is_object()) << prefill;

  json::object decode = client;
  decode["kv_transfer_params"] = prefill.at("kv_transfer_params");
  auto stream = StreamingResponse::open(consumer.port(), "POST", "/v1/chat/completions",
                                        json::serialize(decode), {{"X-Request-Id", "chat-1"}});
  ASSERT_EQ(stream->status(), 200);
  SseResult result = read_sse(*stream);
  ASSERT_EQ(result.end, ReadStatus::End) << result.raw();
  std::string text;
  json::object usage;
  for (const auto& event : result.events) {
    if (event.data == "[DONE]") continue;
    const json::object chunk = parse_json(event.data).as_object();
    if (chunk.contains("usage") && chunk.at("usage").is_object())
      usage = chunk.at("usage").as_object();
    for (const auto& choice : chunk.at("choices").as_array())
      if (const auto* content = choice.at("delta").as_object().if_contains("content"))
        text += std::string(content->as_string());
  }
  EXPECT_EQ(result.events.back().data, "[DONE]");
  EXPECT_EQ(i64(usage.at("completion_tokens")), 12);
  EXPECT_EQ(i64(usage.at("prompt_tokens_details").at("cached_tokens")),
            i64(usage.at("prompt_tokens")) - 1);
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(debug_record(consumer.port(), "chat-1").at("kv_transfer"), "loaded");
}

TEST_F(Disaggregation, PrefillThatStoppedOnEndOfSequenceReturnsNoParams) {
  // Every prompt's natural length is one token: the prefill leg stops on it (finish "stop").
  SimServer eos_producer{sim_args({"--kv-role", "producer", "--output-len", "fixed:1"})};
  const std::string prompt = prompt_of("eos", 2000);
  const json::object prefill = post_json(eos_producer.port(), "/v1/completions",
                                         prefill_leg(completion(prompt, 20)), "eos-1");
  EXPECT_EQ(prefill.at("choices").at(0).at("finish_reason"), "stop");
  EXPECT_TRUE(prefill.at("kv_transfer_params").is_null()) << prefill;
  EXPECT_EQ(debug_record(eos_producer.port(), "eos-1").at("kv_transfer"), "");
  // The proxy then sends the client's body alone: the consumer prefills it itself.
  post_json(consumer.port(), "/v1/completions", completion(prompt, 5), "eos-1");
  const json::object record = debug_record(consumer.port(), "eos-1");
  EXPECT_EQ(record.at("kv_transfer"), "");
  EXPECT_EQ(i64(record.at("kv_transfer_tokens")), 0);
  EXPECT_EQ(i64(record.at("cached_tokens")), 0);
}

// The decode leg with a handle nobody holds, under each policy, streaming or not.
TEST(DisaggregationFailures, UnknownHandleFailsOrIsRecomputedByPolicy) {
  SimServer producer{sim_args({"--kv-role", "producer", "--kv-engine-id", "p"})};
  SimServer failing{sim_args({"--kv-role", "consumer"})};
  SimServer recomputing{sim_args({"--kv-role", "both", "--kv-load-failure-policy", "recompute"})};
  json::object body = completion(prompt_of("unknown", 500), 4);
  body["kv_transfer_params"] = json::object{{"do_remote_prefill", true},
                                            {"do_remote_decode", false},
                                            {"remote_block_ids", json::array{json::array{1, 2}}},
                                            {"remote_engine_id", "p"},
                                            {"remote_request_id", "cmpl-nobody"},
                                            {"remote_host", "127.0.0.1"},
                                            {"remote_port", producer.port()},
                                            {"tp_size", 1}};
  const json::object failed = post_json(failing.port(), "/v1/completions", body, "u-1", 500);
  EXPECT_EQ(failed.at("error").at("message"), "Internal server error");
  EXPECT_EQ(debug_record(failing.port(), "u-1").at("kv_transfer"), "load_failed");
  EXPECT_EQ(debug_record(failing.port(), "u-1").at("finish_reason"), "error");

  // Streaming: the stream has begun when vLLM learns of it: an error frame, then [DONE].
  json::object streamed = body;
  streamed["stream"] = true;
  auto stream =
      StreamingResponse::open(failing.port(), "POST", "/v1/completions", json::serialize(streamed));
  ASSERT_EQ(stream->status(), 200);
  SseResult result = read_sse(*stream);
  ASSERT_EQ(result.events.size(), 2u) << result.raw();
  const json::object frame = parse_json(result.events[0].data).as_object();
  EXPECT_EQ(frame.at("error").at("code"), 500);
  EXPECT_EQ(frame.at("error").at("message"), "Internal server error");
  EXPECT_EQ(result.events[1].data, "[DONE]");

  // recompute: prefilled here, answered normally.
  const json::object recomputed =
      post_json(recomputing.port(), "/v1/completions", body, "u-2", 200);
  EXPECT_EQ(i64(recomputed.at("usage").at("completion_tokens")), 4);
  const json::object record = debug_record(recomputing.port(), "u-2");
  EXPECT_EQ(record.at("kv_transfer"), "load_failed");
  EXPECT_EQ(i64(record.at("kv_transfer_tokens")), 0);
  EXPECT_EQ(metric(recomputing.port(), "vllm:nixl_num_failed_transfers_total"), 1);

  // A producer that is gone is a failed load too.
  body["kv_transfer_params"].as_object()["remote_port"] = 1;
  post_json(recomputing.port(), "/v1/completions", body, "u-3", 200);
  EXPECT_EQ(debug_record(recomputing.port(), "u-3").at("kv_transfer"), "load_failed");
}

TEST(DisaggregationFailures, HandleExpiresAfterTheAbortTimeout) {
  // 2 model seconds at time scale 10: 0.2 s of wall time.
  SimServer producer{sim_args({"--kv-role", "producer", "--kv-abort-timeout", "2"})};
  SimServer failing{sim_args({"--kv-role", "consumer"})};
  SimServer recomputing{
      sim_args({"--kv-role", "consumer", "--kv-load-failure-policy", "recompute"})};
  const std::string prompt = prompt_of("expire", 1000);
  std::vector<json::object> handles;
  for (const char* id : {"e-1", "e-2"}) {
    const json::object prefill =
        post_json(producer.port(), "/v1/completions", prefill_leg(completion(prompt, 8)), id);
    handles.push_back(prefill.at("kv_transfer_params").as_object());
  }
  HttpClient probe(producer.port());
  ASSERT_TRUE(poll_until(
      [&] {
        return metric_value(probe.get("/metrics").body, "vllm:nixl_num_kv_expired_reqs_total")
                   .value_or(0) == 2;
      },
      std::chrono::seconds(5)));
  EXPECT_EQ(debug_record(producer.port(), "e-1").at("kv_transfer"), "expired");
  // The expired blocks were freed: nothing is in use on the producer.
  EXPECT_EQ(metric(producer.port(), "vllm:kv_cache_usage_perc"), 0);

  json::object decode = completion(prompt, 8);
  decode["kv_transfer_params"] = handles[0];
  post_json(failing.port(), "/v1/completions", decode, "e-1", 500);
  decode["kv_transfer_params"] = handles[1];
  const json::object recomputed = post_json(recomputing.port(), "/v1/completions", decode, "e-2");
  EXPECT_EQ(i64(recomputed.at("usage").at("completion_tokens")), 8);
  EXPECT_EQ(debug_record(recomputing.port(), "e-2").at("kv_transfer"), "load_failed");
}

// The consumer's time to first token is the transfer's, not the prefill's, by the sim's own
// model: (bytes per token × (prompt − 1) + state) × 8 / (Gb/s × 10^9 × efficiency).
TEST(DisaggregationTiming, ConsumerFirstTokenReflectsTheTransferNotThePrefill) {
  const double gbps = 2.0, efficiency = 0.5, per_token = 10240, state = 64389120;
  const double api = 0.1, rate = 5000;  // --api-server-time, --prefill-rate
  SimServer producer{sim_args({"--kv-role", "producer"})};
  SimServer consumer{
      sim_args({"--kv-role", "consumer", "--kv-link-gbps", "2", "--kv-link-efficiency", "0.5",
                "--api-server-time", "0.1", "--prefill-rate", "5000"})};
  const std::string prompt = prompt_of("timing", 6000);
  const json::object handed =
      post_json(producer.port(), "/v1/completions", prefill_leg(completion(prompt, 4)), "t-1");
  const std::int64_t prompt_tokens = i64(handed.at("usage").at("prompt_tokens"));
  json::object decode = completion(prompt, 4);
  decode["kv_transfer_params"] = handed.at("kv_transfer_params");
  post_json(consumer.port(), "/v1/completions", decode, "t-1");
  // The same prompt prefilled by the consumer itself (another tag: no prefix hit).
  post_json(consumer.port(), "/v1/completions", completion(prompt_of("timinh", 6000), 4), "t-2");

  const double scale = 10;  // --time-scale
  const double transfer =
      (per_token * static_cast<double>(prompt_tokens - 1) + state) * 8 / (gbps * 1e9 * efficiency);
  const json::object loaded = debug_record(consumer.port(), "t-1");
  EXPECT_NEAR(loaded.at("kv_transfer_seconds").to_number<double>(), transfer, 1e-6);
  const double ttft_loaded = ttft_seconds(loaded) * scale;
  const double ttft_prefilled = ttft_seconds(debug_record(consumer.port(), "t-2")) * scale;
  const double prefill = static_cast<double>(prompt_tokens) / rate;
  // The API server's time, the transfer (~0.4 s), then one step (~20 ms) and the HTTP call to
  // the producer; a prefill would have been ~1.2 s.
  EXPECT_GE(ttft_loaded, api + transfer);
  EXPECT_LT(ttft_loaded, api + transfer + 0.25) << "loaded " << ttft_loaded;
  EXPECT_GE(ttft_prefilled, api + prefill);
  EXPECT_LT(ttft_loaded / ttft_prefilled, (api + transfer + 0.25) / (api + prefill));
}

TEST(DisaggregationRoles, WithoutAKvRoleTheParamsAreIgnored) {
  SimServer plain{sim_args({})};
  const json::object answer = post_json(plain.port(), "/v1/completions",
                                        prefill_leg(completion(prompt_of("plain", 300), 8)), "n-1");
  EXPECT_TRUE(answer.at("kv_transfer_params").is_null());
  json::object body = completion(prompt_of("plain", 300), 3);
  body["kv_transfer_params"] =
      json::object{{"do_remote_prefill", true},  {"remote_block_ids", json::array{json::array{1}}},
                   {"remote_engine_id", "x"},    {"remote_request_id", "y"},
                   {"remote_host", "127.0.0.1"}, {"remote_port", 1}};
  post_json(plain.port(), "/v1/completions", body, "n-2");
  EXPECT_EQ(debug_record(plain.port(), "n-2").at("kv_transfer"), "");
  // A consumer given incomplete params prefills locally (vLLM: "will not utilize KVTransfer").
  SimServer consumer{sim_args({"--kv-role", "consumer"})};
  body["kv_transfer_params"].as_object().erase("remote_host");
  post_json(consumer.port(), "/v1/completions", body, "n-3");
  EXPECT_EQ(debug_record(consumer.port(), "n-3").at("kv_transfer"), "");
}

TEST(DisaggregationRoles, ResponsesPrefillHoldsTheKvButAnswersNoParams) {
  SimServer producer{sim_args({"--kv-role", "producer", "--kv-abort-timeout", "1"})};
  json::object body{{"model", kModel},
                    {"input", prompt_of("responses", 300)},
                    {"max_output_tokens", 1},
                    {"store", false},
                    {"kv_transfer_params", json::object{{"do_remote_decode", true}}}};
  const json::object answer = post_json(producer.port(), "/v1/responses", body, "r-1");
  EXPECT_FALSE(answer.contains("kv_transfer_params")) << answer;
  EXPECT_EQ(answer.at("status"), "incomplete");
  EXPECT_EQ(debug_record(producer.port(), "r-1").at("kv_transfer"), "held");
  HttpClient probe(producer.port());
  EXPECT_TRUE(poll_until(
      [&] {
        return metric_value(probe.get("/metrics").body, "vllm:nixl_num_kv_expired_reqs_total")
                   .value_or(0) == 1;
      },
      std::chrono::seconds(5)));
}

}  // namespace
}  // namespace llmux::test
