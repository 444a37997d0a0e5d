// SPDX-License-Identifier: Apache-2.0
// The simulator's endpoints driven over real HTTP: shapes, usage, finish reasons, determinism,
// streaming framing, the response store and the metrics.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/sim_suite.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kModel = "Qwen3.6-35B-A3B";

json::object post_ok(HttpClient& c, std::string_view target, const std::string& body) {
  Response r = c.post(target, body);
  EXPECT_EQ(r.status, 200) << target << " " << body << " -> " << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
  auto v = parse_json(r.body);
  EXPECT_TRUE(v.is_object()) << r.body;
  return v.is_object() ? v.get_object() : json::object{};
}

std::string completion_text(const json::object& o) {
  return std::string(o.at("choices").at(0).at("text").as_string());
}
std::string chat_text(const json::object& o) {
  return std::string(o.at("choices").at(0).at("message").at("content").as_string());
}
std::string response_text(const json::object& o) {
  return std::string(o.at("output").at(0).at("content").at(0).at("text").as_string());
}

// Checks usage of completions/chat against the text by the project's tokenizer.
void expect_usage(const json::object& o, std::size_t prompt_tokens, const std::string& text) {
  const auto& u = o.at("usage").as_object();
  EXPECT_EQ(i64(u.at("prompt_tokens")), static_cast<std::int64_t>(prompt_tokens));
  EXPECT_EQ(i64(u.at("completion_tokens")), static_cast<std::int64_t>(count_tokens(text)))
      << "text: '" << text << "'";
  EXPECT_EQ(i64(u.at("total_tokens")), i64(u.at("prompt_tokens")) + i64(u.at("completion_tokens")));
}

// ---------------------------------------------------------------------------------------------
// /health, /version, /v1/models, /metrics

class SimInfo : public SimSuite {
 protected:
  // The flag: MetricsCountersMoveAfterRequests reads the cache hit from prompt_tokens_details.
  static void SetUpTestSuite() { start({"--time-scale", "50", "--enable-prompt-tokens-details"}); }
};

TEST_F(SimInfo, HealthIsEmpty200) {
  HttpClient c(port());
  Response r = c.get("/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
}

TEST_F(SimInfo, VersionAndModels) {
  HttpClient c(port());
  Response v = c.get("/version");
  ASSERT_EQ(v.status, 200);
  auto vj = parse_json(v.body).as_object();
  ASSERT_TRUE(vj.at("version").is_string());
  EXPECT_FALSE(vj.at("version").as_string().empty());

  Response m = c.get("/v1/models");
  ASSERT_EQ(m.status, 200) << m.body;
  auto mj = parse_json(m.body).as_object();
  EXPECT_EQ(mj.at("object"), "list");
  const auto& data = mj.at("data").as_array();
  ASSERT_EQ(data.size(), 1u);
  const auto& card = data[0].as_object();
  EXPECT_EQ(card.at("id"), kModel);
  EXPECT_EQ(card.at("object"), "model");
  EXPECT_EQ(card.at("owned_by"), "vllm");
  EXPECT_TRUE(card.at("created").is_int64());
  EXPECT_TRUE(card.at("root").is_string());
  EXPECT_TRUE(card.at("parent").is_null());
  EXPECT_EQ(i64(card.at("max_model_len")), 262144);
  const auto& perm = card.at("permission").as_array();
  ASSERT_EQ(perm.size(), 1u);
  EXPECT_TRUE(perm[0].at("id").as_string().starts_with("modelperm-"));
  EXPECT_EQ(perm[0].at("object"), "model_permission");
  // Keep-alive: all of the above went over one connection.
  EXPECT_EQ(c.connections_opened(), 1);
}

TEST_F(SimInfo, MetricsHaveVllmNamesAndLabels) {
  HttpClient c(port());
  Response r = c.get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.header("content-type").starts_with("text/plain")) << r.header("content-type");
  for (const char* name :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_preemptions_total",
        "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"}) {
    EXPECT_TRUE(metric_has_vllm_labels(r.body, name, kModel)) << name << " missing:\n" << r.body;
  }
  for (const char* name : {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                           "vllm:e2e_request_latency_seconds"}) {
    const std::string n(name);
    EXPECT_TRUE(metric_has_vllm_labels(r.body, n + "_bucket", kModel)) << n;
    EXPECT_TRUE(metric_has_vllm_labels(r.body, n + "_count", kModel)) << n;
    EXPECT_TRUE(metric_has_vllm_labels(r.body, n + "_sum", kModel)) << n;
    EXPECT_NE(r.body.find("# TYPE " + n + " histogram"), std::string::npos) << n;
  }
  // vLLM's TTFT buckets: 1 ms up to 2560 s.
  auto has_bucket = [&](std::string_view name, std::string_view le) {
    std::string_view body = r.body;
    for (std::size_t pos = 0; (pos = body.find(name, pos)) != std::string_view::npos; ++pos) {
      const auto eol = body.find('\n', pos);
      if (body.substr(pos, eol - pos).find("le=\"" + std::string(le) + "\"") !=
          std::string_view::npos)
        return true;
    }
    return false;
  };
  EXPECT_TRUE(has_bucket("vllm:time_to_first_token_seconds_bucket{", "0.001"));
  EXPECT_TRUE(has_bucket("vllm:time_to_first_token_seconds_bucket{", "2560"));
  EXPECT_TRUE(has_bucket("vllm:inter_token_latency_seconds_bucket{", "0.01"));
  EXPECT_TRUE(has_bucket("vllm:e2e_request_latency_seconds_bucket{", "7680"));
}

TEST_F(SimInfo, MetricsCountersMoveAfterRequests) {
  HttpClient c(port());
  auto scrape = [&] { return c.get("/metrics").body; };
  const std::string before = scrape();
  const double prompt0 = metric_value(before, "vllm:prompt_tokens_total").value_or(-1);
  const double gen0 = metric_value(before, "vllm:generation_tokens_total").value_or(-1);
  const double q0 = metric_value(before, "vllm:prefix_cache_queries_total").value_or(-1);
  const double h0 = metric_value(before, "vllm:prefix_cache_hits_total").value_or(-1);
  const double ttft0 = metric_value(before, "vllm:time_to_first_token_seconds_count").value_or(-1);
  ASSERT_GE(prompt0, 0);
  ASSERT_GE(gen0, 0);
  ASSERT_GE(q0, 0);
  ASSERT_GE(h0, 0);

  // A prompt of 80 words (> several 16-token blocks), sent twice: the second hits the cache.
  std::string prompt;
  for (int i = 0; i < 80; ++i) prompt += " word" + std::to_string(i % 10);
  const std::size_t p = count_tokens(prompt);
  const std::string body = json::serialize(json::object{{"model", kModel},
                                                        {"prompt", prompt},
                                                        {"max_tokens", 7},
                                                        {"ignore_eos", true},
                                                        {"temperature", 0}});
  auto a = post_ok(c, "/v1/completions", body);
  auto b = post_ok(c, "/v1/completions", body);
  EXPECT_EQ(i64(a.at("usage").at("completion_tokens")), 7);
  EXPECT_GT(i64(b.at("usage").at("prompt_tokens_details").at("cached_tokens")), 0) << b;

  std::string after;
  const bool moved = poll_until(
      [&] {
        after = scrape();
        return metric_value(after, "vllm:generation_tokens_total").value_or(0) >= gen0 + 14;
      },
      5s);
  ASSERT_TRUE(moved) << after;
  EXPECT_EQ(metric_value(after, "vllm:prompt_tokens_total").value_or(0), prompt0 + 2.0 * p);
  EXPECT_EQ(metric_value(after, "vllm:generation_tokens_total").value_or(0), gen0 + 14);
  EXPECT_EQ(metric_value(after, "vllm:prefix_cache_queries_total").value_or(0), q0 + 2.0 * p);
  EXPECT_GE(metric_value(after, "vllm:prefix_cache_hits_total").value_or(0), h0 + 16);
  EXPECT_EQ(metric_value(after, "vllm:time_to_first_token_seconds_count").value_or(0), ttft0 + 2);
  EXPECT_GE(metric_value(after, "vllm:request_success_total").value_or(0), 2);
  EXPECT_EQ(metric_value(after, "vllm:num_requests_running").value_or(-1), 0);
}

// ---------------------------------------------------------------------------------------------
// Non-streaming generation

class SimGenerate : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50"}); }
};

TEST_F(SimGenerate, CompletionShapeUsageAndLength) {
  HttpClient c(port());
  const std::string prompt = "The quick brown fox jumps over the lazy dog.";
  auto o =
      post_ok(c, "/v1/completions",
              json::serialize(json::object{
                  {"model", kModel}, {"prompt", prompt}, {"max_tokens", 5}, {"temperature", 0}}));
  ASSERT_FALSE(o.empty());
  EXPECT_TRUE(o.at("id").as_string().starts_with("cmpl-")) << o.at("id");
  EXPECT_EQ(o.at("object"), "text_completion");
  EXPECT_EQ(o.at("model"), kModel);
  EXPECT_TRUE(o.at("created").is_int64());
  const auto& ch = o.at("choices").as_array();
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(i64(ch[0].at("index")), 0);
  EXPECT_TRUE(ch[0].at("logprobs").is_null());
  // The natural length is at least 16 (lognormal floor): 5 tokens stop on the length limit.
  EXPECT_EQ(ch[0].at("finish_reason"), "length");
  const std::string text = completion_text(o);
  EXPECT_EQ(count_tokens(text), 5u);
  expect_usage(o, count_tokens(prompt), text);
}

TEST_F(SimGenerate, CompletionDefaultMaxTokensIs16) {
  HttpClient c(port());
  auto o = post_ok(c, "/v1/completions",
                   R"({"prompt":"Tell me a story about a lighthouse keeper.","temperature":0})");
  ASSERT_FALSE(o.empty());
  EXPECT_EQ(i64(o.at("usage").at("completion_tokens")), 16) << o;
  EXPECT_EQ(count_tokens(completion_text(o)), 16u);
}

TEST_F(SimGenerate, IgnoreEosRunsToMaxTokens) {
  HttpClient c(port());
  // 600 tokens exceeds most natural lengths (median 512) but ignore_eos must run to the end
  // whatever the draw; 40 is well above the floor too.
  for (int max : {40, 600}) {
    auto o = post_ok(c, "/v1/completions",
                     json::serialize(json::object{{"prompt", "ignore eos " + std::to_string(max)},
                                                  {"max_tokens", max},
                                                  {"ignore_eos", true}}));
    ASSERT_FALSE(o.empty());
    EXPECT_EQ(i64(o.at("usage").at("completion_tokens")), max);
    EXPECT_EQ(o.at("choices").at(0).at("finish_reason"), "length");
    EXPECT_EQ(count_tokens(completion_text(o)), static_cast<std::size_t>(max));
  }
}

TEST_F(SimGenerate, TemperatureZeroIsDeterministic) {
  HttpClient c(port());
  for (const char* ep : {"/v1/completions", "/v1/chat/completions", "/v1/responses"}) {
    std::string body;
    if (std::string_view(ep) == "/v1/completions")
      body = R"({"prompt":"Determinism please","max_tokens":30,"temperature":0})";
    else if (std::string_view(ep) == "/v1/chat/completions")
      body =
          R"({"messages":[{"role":"user","content":"Determinism please"}],"max_tokens":30,"temperature":0})";
    else
      body =
          R"({"input":"Determinism please","max_output_tokens":30,"temperature":0,"store":false})";
    auto a = post_ok(c, ep, body);
    auto b = post_ok(c, ep, body);
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty());
    std::string ta, tb;
    if (std::string_view(ep) == "/v1/completions") {
      ta = completion_text(a), tb = completion_text(b);
    } else if (std::string_view(ep) == "/v1/chat/completions") {
      ta = chat_text(a), tb = chat_text(b);
    } else {
      ta = response_text(a), tb = response_text(b);
    }
    EXPECT_FALSE(ta.empty()) << ep;
    EXPECT_EQ(ta, tb) << ep;
    EXPECT_NE(a.at("id"), b.at("id")) << ep;
  }
}

TEST_F(SimGenerate, ChatShapeAndUsage) {
  HttpClient c(port());
  auto o = post_ok(
      c, "/v1/chat/completions",
      R"({"model":"Qwen3.6-35B-A3B","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello there"}],"max_tokens":9})");
  ASSERT_FALSE(o.empty());
  EXPECT_TRUE(o.at("id").as_string().starts_with("chatcmpl-")) << o.at("id");
  EXPECT_EQ(o.at("object"), "chat.completion");
  EXPECT_EQ(o.at("model"), kModel);
  const auto& ch = o.at("choices").at(0).as_object();
  EXPECT_EQ(ch.at("message").at("role"), "assistant");
  EXPECT_EQ(ch.at("finish_reason"), "length");
  const std::string text = chat_text(o);
  EXPECT_EQ(count_tokens(text), 9u);
  const auto& u = o.at("usage").as_object();
  // The ChatML rendering adds template tokens to the messages' own.
  EXPECT_GT(i64(u.at("prompt_tokens")),
            static_cast<std::int64_t>(count_tokens("Be brief.") + count_tokens("Hello there")));
  EXPECT_EQ(i64(u.at("completion_tokens")), 9);
  EXPECT_EQ(i64(u.at("total_tokens")), i64(u.at("prompt_tokens")) + 9);
}

TEST_F(SimGenerate, ResponsesShapeAndUsage) {
  HttpClient c(port());
  auto o = post_ok(c, "/v1/responses",
                   R"({"model":"Qwen3.6-35B-A3B","input":"Say something","max_output_tokens":6})");
  ASSERT_FALSE(o.empty());
  EXPECT_TRUE(o.at("id").as_string().starts_with("resp_")) << o.at("id");
  EXPECT_EQ(o.at("object"), "response");
  // Cut by max_output_tokens: incomplete, as vLLM answers (serving_responses.py: finish_reason
  // "length" -> status "incomplete", incomplete_details {"reason": "max_output_tokens"}).
  EXPECT_EQ(o.at("status"), "incomplete");
  EXPECT_EQ(o.at("incomplete_details").at("reason"), "max_output_tokens");
  EXPECT_EQ(o.at("model"), kModel);
  EXPECT_EQ(i64(o.at("max_output_tokens")), 6);
  const auto& item = o.at("output").at(0).as_object();
  EXPECT_EQ(item.at("type"), "message");
  EXPECT_EQ(item.at("role"), "assistant");
  EXPECT_TRUE(item.at("id").as_string().starts_with("msg_"));
  EXPECT_EQ(item.at("content").at(0).at("type"), "output_text");
  const std::string text = response_text(o);
  const auto& u = o.at("usage").as_object();
  EXPECT_EQ(i64(u.at("output_tokens")), 6);
  EXPECT_EQ(count_tokens(text), 6u);
  EXPECT_GT(i64(u.at("input_tokens")), 0);
  EXPECT_EQ(i64(u.at("total_tokens")), i64(u.at("input_tokens")) + 6);
  EXPECT_TRUE(u.at("input_tokens_details").at("cached_tokens").is_int64());
  EXPECT_EQ(i64(u.at("output_tokens_details").at("reasoning_tokens")), 0);
}

TEST_F(SimGenerate, ResponsesWithoutMaxOutputTokensAreClampedToContext) {
  HttpClient c(port());
  // Ask only for the object shape: max_output_tokens is echoed resolved (max_model_len - P).
  auto o = post_ok(c, "/v1/responses", R"({"input":"x","store":false})");
  ASSERT_FALSE(o.empty());
  const auto in = i64(o.at("usage").at("input_tokens"));
  EXPECT_EQ(i64(o.at("max_output_tokens")), 262144 - in);
}

TEST_F(SimGenerate, RequestIdIsEchoed) {
  HttpClient c(port());
  Response r = c.post("/v1/completions", R"({"prompt":"hi","max_tokens":1})",
                      {{"X-Request-Id", "test-req-123"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-request-id"), "test-req-123");
}

class SimFixedLen : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--zero-cost", "--output-len", "fixed:5"}); }
};

TEST_F(SimFixedLen, NaturalStopAtFixedLength) {
  HttpClient c(port());
  auto o = post_ok(c, "/v1/completions", R"({"prompt":"stop early","max_tokens":500})");
  ASSERT_FALSE(o.empty());
  EXPECT_EQ(o.at("choices").at(0).at("finish_reason"), "stop");
  EXPECT_EQ(i64(o.at("usage").at("completion_tokens")), 5);
  auto ch = post_ok(c, "/v1/chat/completions",
                    R"({"messages":[{"role":"user","content":"stop early"}],"max_tokens":500})");
  ASSERT_FALSE(ch.empty());
  EXPECT_EQ(ch.at("choices").at(0).at("finish_reason"), "stop");
  EXPECT_EQ(count_tokens(chat_text(ch)), 5u);
  // Chat without max_tokens: vLLM's default is the rest of the context, so the natural stop wins.
  auto d =
      post_ok(c, "/v1/chat/completions", R"({"messages":[{"role":"user","content":"no limit"}]})");
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.at("choices").at(0).at("finish_reason"), "stop");
  EXPECT_EQ(i64(d.at("usage").at("completion_tokens")), 5);
  // A limit below the natural length wins.
  auto e = post_ok(c, "/v1/completions", R"({"prompt":"stop early","max_tokens":3})");
  ASSERT_FALSE(e.empty());
  EXPECT_EQ(e.at("choices").at(0).at("finish_reason"), "length");
  EXPECT_EQ(i64(e.at("usage").at("completion_tokens")), 3);
  // A Responses answer that stopped by itself is completed, with no incomplete_details.
  auto g = post_ok(c, "/v1/responses", R"({"input":"stop early","max_output_tokens":500})");
  ASSERT_FALSE(g.empty());
  EXPECT_EQ(g.at("status"), "completed");
  EXPECT_TRUE(g.at("incomplete_details").is_null()) << g.at("incomplete_details");
  EXPECT_EQ(i64(g.at("usage").at("output_tokens")), 5);
  // ignore_eos runs past the natural stop.
  auto f =
      post_ok(c, "/v1/completions", R"({"prompt":"stop early","max_tokens":12,"ignore_eos":true})");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.at("choices").at(0).at("finish_reason"), "length");
  EXPECT_EQ(i64(f.at("usage").at("completion_tokens")), 12);
}

// ---------------------------------------------------------------------------------------------
// Streaming

class SimStreaming : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50"}); }

  static SseResult stream(const std::string& target, const std::string& body,
                          std::unique_ptr<StreamingResponse>* keep = nullptr) {
    auto s = StreamingResponse::open(port(), "POST", target, body);
    EXPECT_EQ(s->status(), 200);
    EXPECT_TRUE(s->header("content-type").starts_with("text/event-stream"))
        << s->header("content-type");
    EXPECT_TRUE(s->chunked()) << "SSE must use chunked transfer encoding";
    EXPECT_EQ(s->header("content-length"), "");
    SseResult r = read_sse(*s);
    EXPECT_EQ(r.end, ReadStatus::End) << to_string(r.end) << "; raw:\n" << r.raw();
    if (keep) *keep = std::move(s);
    return r;
  }
};

TEST_F(SimStreaming, ChatStreamWithUsage) {
  const int n = 12;
  SseResult r = stream(
      "/v1/chat/completions",
      json::serialize(json::object{
          {"model", kModel},
          {"messages", json::array{json::object{{"role", "user"}, {"content", "stream to me"}}}},
          {"max_tokens", n},
          {"stream", true},
          {"stream_options", json::object{{"include_usage", true}}}}));
  // role frame + n token frames + usage frame + [DONE]
  ASSERT_EQ(r.events.size(), static_cast<std::size_t>(n + 3)) << r.raw();
  for (const auto& ev : r.events) EXPECT_EQ(ev.event, "");
  EXPECT_EQ(r.events.back().data, "[DONE]");

  auto first = parse_json(r.events[0].data).as_object();
  const std::string id(first.at("id").as_string());
  EXPECT_TRUE(id.starts_with("chatcmpl-"));
  EXPECT_EQ(first.at("object"), "chat.completion.chunk");
  const auto& delta0 = first.at("choices").at(0).at("delta").as_object();
  EXPECT_EQ(delta0.at("role"), "assistant");
  EXPECT_EQ(delta0.at("content"), "");
  EXPECT_EQ(delta0.size(), 2u);
  EXPECT_TRUE(first.at("choices").at(0).at("finish_reason").is_null());
  EXPECT_FALSE(first.contains("usage"));

  std::string text;
  for (int i = 1; i <= n; ++i) {
    auto o = parse_json(r.events[i].data).as_object();
    EXPECT_EQ(str(o.at("id")), id);
    const auto& c0 = o.at("choices").at(0).as_object();
    const std::string piece(c0.at("delta").at("content").as_string());
    EXPECT_EQ(count_tokens(piece), 1u) << "frame " << i << " carries '" << piece << "'";
    EXPECT_FALSE(c0.at("delta").as_object().contains("role"));
    text += piece;
    if (i < n) {
      EXPECT_TRUE(c0.at("finish_reason").is_null()) << i;
    } else {
      EXPECT_EQ(c0.at("finish_reason"), "length");
    }
  }
  auto usage = parse_json(r.events[n + 1].data).as_object();
  EXPECT_EQ(str(usage.at("id")), id);
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(i64(usage.at("usage").at("completion_tokens")), n);
  EXPECT_EQ(count_tokens(text), static_cast<std::size_t>(n));
  EXPECT_EQ(i64(usage.at("usage").at("total_tokens")),
            i64(usage.at("usage").at("prompt_tokens")) + n);
}

TEST_F(SimStreaming, ChatStreamWithoutUsage) {
  SseResult r =
      stream("/v1/chat/completions",
             R"({"messages":[{"role":"user","content":"no usage"}],"max_tokens":4,"stream":true})");
  ASSERT_EQ(r.events.size(), 6u) << r.raw();  // role + 4 + [DONE]
  EXPECT_EQ(r.events.back().data, "[DONE]");
  for (std::size_t i = 0; i + 1 < r.events.size(); ++i) {
    auto o = parse_json(r.events[i].data).as_object();
    EXPECT_FALSE(o.at("choices").as_array().empty()) << "no usage chunk was asked for";
  }
}

TEST_F(SimStreaming, CompletionStreamMatchesNonStreamingText) {
  const int n = 10;
  const std::string body =
      json::serialize(json::object{{"prompt", "same text both ways"},
                                   {"max_tokens", n},
                                   {"temperature", 0},
                                   {"stream", true},
                                   {"stream_options", json::object{{"include_usage", true}}}});
  SseResult r = stream("/v1/completions", body);
  ASSERT_EQ(r.events.size(), static_cast<std::size_t>(n + 2)) << r.raw();  // n + usage + DONE
  EXPECT_EQ(r.events.back().data, "[DONE]");
  std::string text;
  for (int i = 0; i < n; ++i) {
    auto o = parse_json(r.events[i].data).as_object();
    EXPECT_TRUE(o.at("id").as_string().starts_with("cmpl-"));
    EXPECT_EQ(o.at("object"), "text_completion");
    EXPECT_TRUE(o.at("usage").is_null());
    const auto& c0 = o.at("choices").at(0).as_object();
    const std::string piece(c0.at("text").as_string());
    EXPECT_EQ(count_tokens(piece), 1u) << piece;
    text += piece;
    if (i + 1 < n)
      EXPECT_TRUE(c0.at("finish_reason").is_null());
    else
      EXPECT_EQ(c0.at("finish_reason"), "length");
  }
  auto usage = parse_json(r.events[n].data).as_object();
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(i64(usage.at("usage").at("completion_tokens")), n);
  EXPECT_EQ(i64(usage.at("usage").at("prompt_tokens")),
            static_cast<std::int64_t>(count_tokens("same text both ways")));

  HttpClient c(port());
  auto plain =
      post_ok(c, "/v1/completions",
              json::serialize(json::object{
                  {"prompt", "same text both ways"}, {"max_tokens", n}, {"temperature", 0}}));
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(completion_text(plain), text);
}

TEST_F(SimStreaming, ResponsesTypedEventsInOrder) {
  const int n = 7;
  SseResult r = stream("/v1/responses", json::serialize(json::object{{"model", kModel},
                                                                     {"input", "stream a response"},
                                                                     {"max_output_tokens", n},
                                                                     {"stream", true}}));
  const std::vector<std::string> head = {"response.created", "response.in_progress",
                                         "response.output_item.added",
                                         "response.content_part.added"};
  const std::vector<std::string> tail = {"response.output_text.done", "response.content_part.done",
                                         "response.output_item.done", "response.completed"};
  ASSERT_EQ(r.events.size(), head.size() + n + tail.size()) << r.raw();
  std::string deltas;
  std::string id;
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    const auto& ev = r.events[i];
    EXPECT_NE(ev.data, "[DONE]");
    auto o = parse_json(ev.data).as_object();
    EXPECT_EQ(str(o.at("type")), ev.event) << "event line and data type differ at " << i;
    EXPECT_EQ(i64(o.at("sequence_number")), static_cast<std::int64_t>(i));
    std::string want;
    if (i < head.size())
      want = head[i];
    else if (i < head.size() + n)
      want = "response.output_text.delta";
    else
      want = tail[i - head.size() - n];
    EXPECT_EQ(ev.event, want) << "at " << i;
    if (ev.event == "response.output_text.delta") {
      const std::string d(o.at("delta").as_string());
      EXPECT_EQ(count_tokens(d), 1u);
      deltas += d;
    }
    if (ev.event == "response.created") {
      EXPECT_EQ(o.at("response").at("status"), "in_progress");
      id = std::string(o.at("response").at("id").as_string());
    }
    if (ev.event == "response.output_text.done") {
      EXPECT_EQ(str(o.at("text")), deltas);
    }
    if (ev.event == "response.completed") {
      const auto& resp = o.at("response").as_object();
      EXPECT_EQ(resp.at("status"), "incomplete");  // cut by max_output_tokens
      EXPECT_EQ(resp.at("incomplete_details").at("reason"), "max_output_tokens");
      EXPECT_EQ(str(resp.at("id")), id);
      EXPECT_EQ(i64(resp.at("usage").at("output_tokens")), n);
      EXPECT_EQ(response_text(resp), deltas);
    }
  }
  EXPECT_TRUE(id.starts_with("resp_")) << id;
}

TEST_F(SimStreaming, KeepAliveAfterStream) {
  // A finished stream leaves the connection usable for the next request.
  std::unique_ptr<StreamingResponse> keep;
  stream("/v1/completions", R"({"prompt":"a","max_tokens":2,"stream":true})", &keep);
  HttpClient c(port());
  EXPECT_EQ(c.get("/health").status, 200);
}

// ---------------------------------------------------------------------------------------------
// Response store

class SimStore : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50"}); }
};

TEST_F(SimStore, ChainGrowsAndHitsCache) {
  HttpClient c(port());
  std::string prev;
  std::int64_t last_input = 0;
  std::string first_id;
  for (int turn = 1; turn <= 3; ++turn) {
    json::object req{{"model", kModel},
                     {"input", "Turn " + std::to_string(turn) +
                                   ": tell me more about the history of lighthouses on rocky "
                                   "coasts and the keepers who lived in them for decades."},
                     {"max_output_tokens", 20},
                     {"temperature", 0}};
    if (!prev.empty()) req["previous_response_id"] = prev;
    auto o = post_ok(c, "/v1/responses", json::serialize(req));
    ASSERT_FALSE(o.empty());
    const auto& u = o.at("usage").as_object();
    const auto input = i64(u.at("input_tokens"));
    const auto cached = i64(u.at("input_tokens_details").at("cached_tokens"));
    EXPECT_GT(input, last_input + 20) << "turn " << turn << " must include the history";
    if (turn >= 2) {
      EXPECT_GT(cached, 0) << "turn " << turn;
      EXPECT_EQ(str(o.at("previous_response_id")), prev);
    }
    last_input = input;
    prev = std::string(o.at("id").as_string());
    if (turn == 1) first_id = prev;
  }
  // Retrieval of a stored response.
  Response g = c.get("/v1/responses/" + first_id);
  ASSERT_EQ(g.status, 200) << g.body;
  auto go = parse_json(g.body).as_object();
  EXPECT_EQ(str(go.at("id")), first_id);
  // Stored as it ended: finished, completed or (cut by max_output_tokens) incomplete.
  EXPECT_TRUE(go.at("status") == "completed" || go.at("status") == "incomplete") << go.at("status");
  EXPECT_FALSE(response_text(go).empty());
}

TEST_F(SimStore, UnknownPreviousResponseIs404) {
  HttpClient c(port());
  Response r = c.post("/v1/responses", R"({"input":"hi","previous_response_id":"resp_missing"})");
  EXPECT_EQ(r.status, 404);
  std::string why;
  EXPECT_TRUE(is_openai_error(r.body, 404, &why)) << why;
  EXPECT_EQ(error_message(r.body), "Response with id 'resp_missing' not found.");
  EXPECT_EQ(error_type(r.body), "invalid_request_error");
  EXPECT_TRUE(parse_json(r.body).at("error").at("param").is_null());
  Response g = c.get("/v1/responses/resp_missing");
  EXPECT_EQ(g.status, 404);
  EXPECT_EQ(error_message(g.body), "Response with id 'resp_missing' not found.");
  Response x = c.post("/v1/responses/resp_missing/cancel", "");
  EXPECT_EQ(x.status, 404);
  EXPECT_EQ(error_message(x.body), "Response with id 'resp_missing' not found.");
}

TEST_F(SimStore, StoreFalseIsNotRetrievable) {
  HttpClient c(port());
  auto o = post_ok(c, "/v1/responses", R"({"input":"hi","max_output_tokens":2,"store":false})");
  ASSERT_FALSE(o.empty());
  const std::string id(o.at("id").as_string());
  EXPECT_EQ(c.get("/v1/responses/" + id).status, 404);
  Response r =
      c.post("/v1/responses",
             json::serialize(json::object{{"input", "next"}, {"previous_response_id", id}}));
  EXPECT_EQ(r.status, 404) << r.body;
}

TEST_F(SimStore, CancelSynchronousIs400) {
  HttpClient c(port());
  auto o = post_ok(c, "/v1/responses", R"({"input":"hi","max_output_tokens":2})");
  ASSERT_FALSE(o.empty());
  Response r = c.post("/v1/responses/" + std::string(o.at("id").as_string()) + "/cancel", "");
  EXPECT_EQ(r.status, 400);
  std::string why;
  EXPECT_TRUE(is_openai_error(r.body, 400, &why)) << why;
  EXPECT_EQ(error_message(r.body), "Cannot cancel a synchronous response.");
  EXPECT_EQ(error_type(r.body), "invalid_request_error");
}

TEST_F(SimStore, BackgroundCompletes) {
  HttpClient c(port());
  auto o =
      post_ok(c, "/v1/responses",
              R"({"input":"work in the background","max_output_tokens":30,"background":true})");
  ASSERT_FALSE(o.empty());
  const std::string id(o.at("id").as_string());
  EXPECT_TRUE(o.at("status") == "queued" || o.at("status") == "in_progress") << o.at("status");
  EXPECT_EQ(o.at("background"), true);
  EXPECT_TRUE(o.at("usage").is_null());
  EXPECT_TRUE(o.at("output").as_array().empty());
  json::object last;
  const bool done = poll_until(
      [&] {
        Response g = c.get("/v1/responses/" + id);
        if (g.status != 200) return false;
        last = parse_json(g.body).as_object();
        const auto& st = last.at("status");
        // 30 tokens of max_output_tokens: it ends incomplete (vLLM's status for a cut answer).
        EXPECT_TRUE(st == "queued" || st == "in_progress" || st == "incomplete") << st;
        return st == "incomplete";
      },
      10s);
  ASSERT_TRUE(done) << json::serialize(last);
  EXPECT_EQ(i64(last.at("usage").at("output_tokens")), 30);
  EXPECT_EQ(count_tokens(response_text(last)), 30u);
  EXPECT_EQ(last.at("incomplete_details").at("reason"), "max_output_tokens");
  // A finished background response cannot be cancelled any more.
  Response x = c.post("/v1/responses/" + id + "/cancel", "");
  EXPECT_EQ(x.status, 400) << x.body;
}

TEST_F(SimStore, BackgroundCancel) {
  HttpClient c(port());
  auto o = post_ok(
      c, "/v1/responses",
      R"({"input":"a long job","max_output_tokens":100000,"ignore_eos":true,"background":true})");
  ASSERT_FALSE(o.empty());
  const std::string id(o.at("id").as_string());
  Response x = c.post("/v1/responses/" + id + "/cancel", "");
  ASSERT_EQ(x.status, 200) << x.body;
  auto xo = parse_json(x.body).as_object();
  EXPECT_EQ(str(xo.at("id")), id);
  EXPECT_EQ(xo.at("status"), "cancelled");
  Response g = c.get("/v1/responses/" + id);
  ASSERT_EQ(g.status, 200) << g.body;
  EXPECT_EQ(parse_json(g.body).at("status"), "cancelled");
  // The sequence left the engine.
  std::string m;
  EXPECT_TRUE(poll_until(
      [&] {
        m = c.get("/metrics").body;
        return metric_value(m, "vllm:num_requests_running").value_or(-1) == 0 &&
               metric_value(m, "vllm:num_requests_waiting").value_or(-1) == 0;
      },
      5s))
      << m;
  // Cancelling twice: no longer in progress.
  Response x2 = c.post("/v1/responses/" + id + "/cancel", "");
  EXPECT_EQ(x2.status, 400) << x2.body;
}

}  // namespace
}  // namespace llmux::test

namespace llmux::test {
namespace {

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 details a client library may use: pipelining, chunked request bodies,
// Expect: 100-continue, HTTP/1.0.

class SimHttp : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50"}); }
};

std::string post_bytes(std::string_view target, std::string_view body,
                       std::string_view extra_headers = "") {
  return "POST " + std::string(target) +
         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + std::string(extra_headers) + "\r\n" +
         std::string(body);
}

// Splits `bytes` into consecutive Content-Length responses.
std::vector<Response> split_responses(std::string_view bytes) {
  std::vector<Response> out;
  for (int guard = 0; guard < 100 && !bytes.empty(); ++guard) {
    Response r = parse_raw_response(bytes);
    const auto hdr_end = bytes.find("\r\n\r\n");
    if (r.status == 0 || hdr_end == std::string_view::npos) break;
    const std::string cl = r.header("content-length");
    const std::size_t len = cl.empty() ? bytes.size() - hdr_end - 4 : std::stoull(cl);
    out.push_back(std::move(r));
    bytes.remove_prefix(std::min(bytes.size(), hdr_end + 4 + len));
  }
  return out;
}

TEST_F(SimHttp, PipelinedRequestsAreAnsweredInOrder) {
  RawConnection raw(port());
  const std::string a = post_bytes("/v1/completions", R"({"prompt":"first","max_tokens":3})");
  const std::string b = post_bytes("/v1/completions", R"({"prompt":"second","max_tokens":4})");
  const std::string h = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_TRUE(raw.send(a + b + h));
  bool closed = false;
  const std::string got = raw.read_until_close(10s, &closed);
  EXPECT_TRUE(closed);
  auto rs = split_responses(got);
  ASSERT_EQ(rs.size(), 3u) << got;
  EXPECT_EQ(rs[0].status, 200);
  EXPECT_EQ(rs[1].status, 200);
  EXPECT_EQ(rs[2].status, 200);
  EXPECT_EQ(i64(parse_json(rs[0].body).at("usage").at("completion_tokens")), 3);
  EXPECT_EQ(i64(parse_json(rs[1].body).at("usage").at("completion_tokens")), 4);
}

TEST_F(SimHttp, PipelinedRequestAfterAStream) {
  RawConnection raw(port());
  const std::string a =
      post_bytes("/v1/completions", R"({"prompt":"first","max_tokens":5,"stream":true})");
  const std::string h = "GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_TRUE(raw.send(a + h));
  bool closed = false;
  const std::string got = raw.read_until_close(10s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_NE(got.find("data: [DONE]"), std::string::npos) << got;
  const auto second = got.find("HTTP/1.1 200", 1);
  ASSERT_NE(second, std::string::npos) << "no answer to the pipelined request:\n" << got;
  EXPECT_NE(got.find("\"version\"", second), std::string::npos) << got;
}

TEST_F(SimHttp, ChunkedRequestBody) {
  RawConnection raw(port());
  const std::string body = R"({"prompt":"chunked body","max_tokens":2})";
  const std::string half1 = body.substr(0, 10), half2 = body.substr(10);
  char hex1[16], hex2[16];
  std::snprintf(hex1, sizeof hex1, "%zx", half1.size());
  std::snprintf(hex2, sizeof hex2, "%zx", half2.size());
  ASSERT_TRUE(raw.send(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      std::string(hex1) + "\r\n" + half1 + "\r\n" + hex2 + "\r\n" + half2 + "\r\n0\r\n\r\n"));
  Response r = parse_raw_response(raw.read_response(10s));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(i64(parse_json(r.body).at("usage").at("completion_tokens")), 2);
}

TEST_F(SimHttp, ExpectContinue) {
  RawConnection raw(port());
  const std::string body = R"({"prompt":"expect","max_tokens":2})";
  ASSERT_TRUE(
      raw.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
               "application/json\r\nExpect: 100-continue\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n"));
  const std::string cont = raw.read_response(5s);
  EXPECT_TRUE(cont.starts_with("HTTP/1.1 100")) << cont;
  ASSERT_TRUE(raw.send(body));
  std::string got = raw.read_response(10s);
  if (got.empty() || got.starts_with("HTTP/1.1 100")) got = raw.read_response(10s);
  Response r = parse_raw_response(got);
  EXPECT_EQ(r.status, 200) << got;
}

TEST_F(SimHttp, Http10StreamEndsWithClose) {
  RawConnection raw(port());
  const std::string body = R"({"prompt":"old client","max_tokens":3,"stream":true})";
  ASSERT_TRUE(
      raw.send("POST /v1/completions HTTP/1.0\r\nHost: x\r\nContent-Type: "
               "application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body));
  bool closed = false;
  const std::string got = raw.read_until_close(10s, &closed);
  EXPECT_TRUE(closed);
  Response r = parse_raw_response(got);
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.has_header("transfer-encoding")) << "HTTP/1.0 has no chunked encoding";
  SseParser p;
  auto events = p.feed(r.body, 0);
  ASSERT_EQ(events.size(), 4u) << r.body;  // 3 tokens + [DONE]
  EXPECT_EQ(events.back().data, "[DONE]");
}

TEST_F(SimHttp, IncludeUsageFalseHasNoUsageChunk) {
  auto s = StreamingResponse::open(
      port(), "POST", "/v1/completions",
      R"({"prompt":"x","max_tokens":3,"stream":true,"stream_options":{"include_usage":false}})");
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::End);
  ASSERT_EQ(r.events.size(), 4u) << r.raw();
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_FALSE(parse_json(r.events[i].data).at("choices").as_array().empty());
}

}  // namespace
}  // namespace llmux::test
