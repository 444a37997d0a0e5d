// SPDX-License-Identifier: Apache-2.0
// Anthropic's Messages API through the gateway (issue 39, item 1), against `llmux sim`, which
// serves /v1/messages as vLLM does: the tokens of streamed and whole answers are counted (usage
// ledger, metrics, access log) and charged to the key's token quota; a key comes in x-api-key as
// well as Authorization and never reaches a backend, while anthropic-version and anthropic-beta
// do; a stream cut mid-way ends with Anthropic's error event; every error the gateway answers
// itself on these routes has Anthropic's shape and type; a malformed request gets the backend's
// own answer, untouched.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <string>
#include <thread>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kAdminToken = "admin-token-0123456789";

Headers with_api_key(const std::string& key) {
  return {{"x-api-key", key}, {"anthropic-version", "2023-06-01"}};
}

std::string message_body(const std::string& model, bool stream, int max_tokens = 24) {
  return R"({"model":")" + model + R"(","max_tokens":)" + std::to_string(max_tokens) +
         R"(,"stream":)" + (stream ? "true" : "false") +
         R"(,"system":"Be brief.","messages":[{"role":"user","content":"Say something about the sea."}]})";
}

/// Anthropic's error body: {"type":"error","error":{"type": TYPE,"message": non-empty}}; the
/// error's type, or "" (with `why`) when the body is not such an error.
std::string anthropic_error_type(const std::string& body, std::string* why = nullptr) {
  boost::system::error_code error;
  const json::value value = json::parse(body, error);
  auto fail = [&](const char* reason) {
    if (why) *why = std::string(reason) + ": " + body;
    return std::string();
  };
  if (error || !value.is_object()) return fail("not a JSON object");
  const json::object& object = value.as_object();
  const json::value* type = object.if_contains("type");
  if (!type || !type->is_string() || type->as_string() != "error") return fail("type is not error");
  const json::value* inner = object.if_contains("error");
  if (!inner || !inner->is_object()) return fail("no error object");
  const json::value* inner_type = inner->as_object().if_contains("type");
  const json::value* message = inner->as_object().if_contains("message");
  if (!inner_type || !inner_type->is_string() || !message || !message->is_string() ||
      message->as_string().empty())
    return fail("error has no type or message");
  return std::string(inner_type->as_string());
}

// Routes: /v1/messages to the simulator, except model `gone` (a closed port), `broken` (a
// backend that answers non-HTTP), `echo` (a backend that echoes the request) and `stalls` (a
// simulator of its own, which the stall watch may eject); the rest to the simulator. Keys: erin
// (anything), frank (model `other` only), gina (60 tokens a minute).
class GatewayMessages : public GatewaySuite {
 protected:
  static void SetUpTestSuite() {
    start([] {
      sim_ = std::make_unique<SimServer>(
          std::vector<std::string>{"--time-scale", "100", "--served-model-name", "m"});
      stalling_ = std::make_unique<SimServer>(
          std::vector<std::string>{"--time-scale", "100", "--served-model-name", "stalls"});
      garbage_ = std::make_unique<GatedBackend>(GatedBackend::Options{GatedBackend::Mode::Garbage});
      echo_ = std::make_unique<GatedBackend>(GatedBackend::Options{GatedBackend::Mode::Echo});
      gw_ = GatewayServer::with_config(
          "listen: \"127.0.0.1:0\"\nthreads: 1\nbackends:\n" + backend_line("sim", sim_->port()) +
          backend_line("garbage", garbage_->port()) + backend_line("echo", echo_->port()) +
          backend_line("dead", closed_port()) + backend_line("stalling", stalling_->port()) +
          "routes:\n"
          "  - {name: gone, match: {path_prefix: /v1/messages, models: [gone]}, backends: [dead]}\n"
          "  - {name: broken, match: {path_prefix: /v1/messages, models: [broken]}, "
          "backends: [garbage]}\n"
          "  - {name: echo, match: {path_prefix: /v1/messages, models: [echo]}, backends: [echo]}\n"
          "  - {name: stalls, match: {path_prefix: /v1/messages, models: [stalls]}, "
          "backends: [stalling]}\n"
          "  - {name: messages, match: {path_prefix: /v1/messages}, backends: [sim]}\n"
          "  - {name: rest, backends: [sim]}\n"
          "limits: {max_body_bytes: 64KiB}\n"
          "outlier_detection: {stall_timeout: 2s}\n"
          "auth:\n  keys:\n"
          "    - {name: erin, key: sk-erin-0001}\n"
          "    - {name: frank, key: sk-frank-0002, models: [other]}\n"
          "    - {name: gina, key: sk-gina-0003, limits: {tokens_per_minute: 60}}\n"
          "admin: {token: " +
          std::string(kAdminToken) + "}\n");
    });
  }
  static void TearDownTestSuite() {
    GatewaySuite::TearDownTestSuite();
    sim_.reset();
    stalling_.reset();
    garbage_.reset();
    echo_.reset();
  }

  static inline std::unique_ptr<SimServer> sim_, stalling_;
  static inline std::unique_ptr<GatedBackend> garbage_, echo_;
};

TEST_F(GatewayMessages, TokensOfStreamsAndBodiesAreCountedAndCharged) {
  HttpClient client(port());
  // A whole answer: its usage in the body.
  Response whole =
      client.post("/v1/messages?beta=true", message_body("m", false), with_api_key("sk-erin-0001"));
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json::value whole_body = parse_json(whole.body);
  const json::object& body_usage = whole_body.at("usage").as_object();
  const std::int64_t body_prompt = i64(body_usage.at("input_tokens"));
  const std::int64_t body_output = i64(body_usage.at("output_tokens"));
  ASSERT_GT(body_prompt, 0);
  ASSERT_GT(body_output, 0);

  // A stream: its usage in message_start and message_delta.
  Headers stream_headers = with_api_key("sk-erin-0001");
  stream_headers.push_back({"X-Request-Id", "messages-stream-usage"});
  auto stream = StreamingResponse::open(port(), "POST", "/v1/messages?beta=true",
                                        message_body("m", true, 30), stream_headers);
  ASSERT_EQ(stream->status(), 200);
  const SseResult events = read_sse(*stream);
  ASSERT_EQ(events.end, ReadStatus::End) << events.raw();
  ASSERT_FALSE(events.events.empty());
  EXPECT_EQ(events.events.back().event, "message_stop") << events.raw();
  std::int64_t stream_output = -1;
  for (const SseEvent& event : events.events)
    if (event.event == "message_delta")
      stream_output = i64(parse_json(event.data).at("usage").at("output_tokens"));
  const std::int64_t stream_prompt =
      i64(parse_json(events.events.front().data).at("message").at("usage").at("input_tokens"));
  ASSERT_GT(stream_output, 0) << events.raw();

  // The access log holds the stream's counts, read from its events.
  const json::object record = gw_->wait_access_record("messages-stream-usage", 5s);
  EXPECT_EQ(i64(record.at("prompt_tokens")), stream_prompt);
  EXPECT_EQ(i64(record.at("completion_tokens")), stream_output);
  EXPECT_EQ(str(record.at("tenant")), "erin");

  // The usage ledger charged both to erin.
  Response usage = client.get("/admin/usage?key=erin",
                              {{"Authorization", std::string("Bearer ") + kAdminToken}});
  ASSERT_EQ(usage.status, 200) << usage.body;
  const json::value report = parse_json(usage.body);
  const json::array& rows = report.at("data").as_array();
  ASSERT_EQ(rows.size(), 1u) << usage.body;
  EXPECT_EQ(i64(rows[0].at("requests")), 2);
  EXPECT_EQ(i64(rows[0].at("prompt_tokens")), body_prompt + stream_prompt);
  EXPECT_EQ(i64(rows[0].at("completion_tokens")), body_output + stream_output);

  // And /metrics counted them.
  const std::string metrics = client.get("/metrics").body;
  EXPECT_GE(metric_value(metrics, "llmux_prompt_tokens_total").value_or(0),
            static_cast<double>(body_prompt + stream_prompt))
      << metrics;
  EXPECT_GE(metric_value(metrics, "llmux_generation_tokens_total").value_or(0),
            static_cast<double>(body_output + stream_output));
}

TEST_F(GatewayMessages, TokenQuotaIsChargedAndItsRefusalIsARateLimitError) {
  // Not so near the minute's end that the window turns over midway.
  while (std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
                 .count() %
             60 >=
         55)
    std::this_thread::sleep_for(200ms);  // polling interval: the wall clock's next minute
  HttpClient client(port());
  std::int64_t charged = 0, before_last = 0;
  Response refused;
  for (int i = 0; i < 20; ++i) {
    Response r =
        client.post("/v1/messages", message_body("m", false), with_api_key("sk-gina-0003"));
    if (r.status == 429) {
      refused = r;
      break;
    }
    ASSERT_EQ(r.status, 200) << r.body;
    before_last = charged;
    const json::value answer = parse_json(r.body);
    const json::value& usage = answer.at("usage");
    charged += i64(usage.at("input_tokens")) + i64(usage.at("output_tokens"));
  }
  ASSERT_EQ(refused.status, 429) << "tokens_per_minute never refused a Messages request";
  EXPECT_GE(charged, 60) << "refused before the budget was spent";
  EXPECT_LT(before_last, 60) << "admitted after the budget was spent";
  std::string why;
  EXPECT_EQ(anthropic_error_type(refused.body, &why), "rate_limit_error") << why;
  EXPECT_GE(std::stoi(refused.header("retry-after")), 1);
}

TEST_F(GatewayMessages, TheGatewaysOwnErrorsAreAnthropicShaped) {
  HttpClient client(port());
  struct Case {
    const char* what;
    Response response;
    int status;
    const char* type;
  };
  const std::string ok_body = message_body("m", false);
  const Case cases[] = {
      {"no key", client.post("/v1/messages", ok_body, {}), 401, "authentication_error"},
      {"unknown key", client.post("/v1/messages", ok_body, with_api_key("sk-mallory")), 401,
       "authentication_error"},
      {"model not allowed", client.post("/v1/messages", ok_body, with_api_key("sk-frank-0002")),
       403, "permission_error"},
      {"count_tokens without a key", client.post("/v1/messages/count_tokens", ok_body, {}), 401,
       "authentication_error"},
      {"no backend reachable",
       client.post("/v1/messages", message_body("gone", false), with_api_key("sk-erin-0001")), 529,
       "overloaded_error"},
      {"an unknown priority class",
       [&] {
         Headers headers = with_api_key("sk-erin-0001");
         headers.push_back({"X-Llmux-Priority", "urgent-please"});
         return client.post("/v1/messages", ok_body, headers);
       }(),
       400, "invalid_request_error"},
      {"a backend's broken answer",
       client.post("/v1/messages", message_body("broken", false), with_api_key("sk-erin-0001")),
       502, "api_error"},
  };
  for (const Case& one : cases) {
    EXPECT_EQ(one.response.status, one.status) << one.what << ": " << one.response.body;
    std::string why;
    EXPECT_EQ(anthropic_error_type(one.response.body, &why), one.type) << one.what << ": " << why;
  }

  // A request the gateway does not read whole: its body is over limits.max_body_bytes.
  {
    RawConnection raw(port());
    const std::string big =
        std::string(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":")") +
        std::string(80 * 1024, 'x') + R"("}]})";
    raw.send(
        "POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(big.size()) + "\r\n\r\n");
    raw.send(big);
    const Response too_large = parse_raw_response(raw.read_until_close(5s));
    EXPECT_EQ(too_large.status, 413) << too_large.body;
    std::string why;
    EXPECT_EQ(anthropic_error_type(too_large.body, &why), "request_too_large") << why;
  }
  // Other routes keep OpenAI's shape.
  Response openai = client.post("/v1/chat/completions", R"({"model":"m","messages":[]})", {});
  EXPECT_EQ(openai.status, 401);
  const json::value openai_body = parse_json(openai.body);
  EXPECT_FALSE(openai_body.as_object().contains("type")) << openai.body;
  EXPECT_EQ(str(openai_body.at("error").at("code")), "invalid_api_key") << openai.body;
}

TEST_F(GatewayMessages, KeyStaysHereAnthropicHeadersAndQueryGoOn) {
  HttpClient client(port());
  Headers headers = with_api_key("sk-erin-0001");
  headers.push_back({"anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14"});
  headers.push_back({"X-Claude-Code-Session-Id", "5d1e"});
  Response r = client.post("/v1/messages?beta=true", message_body("echo", false), headers);
  ASSERT_EQ(r.status, 200) << r.body;
  const json::object echo = parse_json(r.body).as_object();
  EXPECT_EQ(str(echo.at("target")), "/v1/messages?beta=true");
  EXPECT_EQ(echoed_header(echo, "x-api-key"), "") << "the key the gateway checked went on";
  EXPECT_EQ(echoed_header(echo, "authorization"), "");
  EXPECT_EQ(echoed_header(echo, "anthropic-version"), "2023-06-01");
  EXPECT_EQ(echoed_header(echo, "anthropic-beta"),
            "claude-code-20250219,interleaved-thinking-2025-05-14");
  EXPECT_EQ(echoed_header(echo, "x-claude-code-session-id"), "5d1e");
}

TEST_F(GatewayMessages, AStreamCutMidWayEndsWithAnthropicsErrorEvent) {
  Headers headers = with_api_key("sk-erin-0001");
  headers.push_back({"X-Llmux-Fault", "close-after=4"});
  headers.push_back({"X-Request-Id", "messages-cut"});
  auto stream =
      StreamingResponse::open(port(), "POST", "/v1/messages", message_body("m", true, 40), headers);
  ASSERT_EQ(stream->status(), 200);
  const SseResult events = read_sse(*stream);
  EXPECT_EQ(events.end, ReadStatus::End)
      << "the gateway ends the response cleanly: " << events.raw();
  ASSERT_FALSE(events.events.empty());
  const SseEvent& last = events.events.back();
  EXPECT_EQ(last.event, "error") << events.raw();
  const json::value error = parse_json(last.data);
  EXPECT_EQ(str(error.at("type")), "error");
  EXPECT_EQ(str(error.at("error").at("type")), "api_error");
  EXPECT_NE(str(error.at("error").at("message")).find("mid-stream"), std::string::npos);
  EXPECT_EQ(events.raw().find("[DONE]"), std::string::npos) << "a chat ending on a Messages stream";
  int deltas = 0;
  for (const SseEvent& event : events.events) deltas += event.event == "content_block_delta";
  EXPECT_GE(deltas, 1) << "cut before any output: " << events.raw();
  EXPECT_EQ(str(gw_->wait_access_record("messages-cut", 5s).at("status")), "200");
}

TEST_F(GatewayMessages, AStalledStreamIsCutByTheStallWatchWithAnthropicsErrorEvent) {
  // The backend stops after 5 tokens and keeps the connection: the stall watch (2 s), which
  // follows content_block_delta events, ends the stream long before timeouts.idle (120 s).
  Headers headers = with_api_key("sk-erin-0001");
  headers.push_back({"X-Llmux-Fault", "stall-after=5"});
  const auto start = std::chrono::steady_clock::now();
  auto stream = StreamingResponse::open(port(), "POST", "/v1/messages",
                                        message_body("stalls", true, 40), headers);
  ASSERT_EQ(stream->status(), 200);
  const SseResult events = read_sse(*stream, SIZE_MAX, 10s, 20s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  EXPECT_EQ(events.end, ReadStatus::End) << events.raw();
  ASSERT_FALSE(events.events.empty());
  EXPECT_EQ(events.events.back().event, "error") << events.raw();
  EXPECT_NE(events.events.back().data.find("stalled"), std::string::npos) << events.raw();
  EXPECT_NE(events.raw().find("content_block_delta"), std::string::npos);
}

TEST_F(GatewayMessages, CountTokensIsRoutedToTheBackend) {
  const std::string body =
      R"({"model":"m","system":"Be brief.","messages":[{"role":"user","content":"How many?"}]})";
  const Response direct = HttpClient(sim_->port()).post("/v1/messages/count_tokens", body, {});
  ASSERT_EQ(direct.status, 200) << direct.body;
  HttpClient client(port());
  const Response through =
      client.post("/v1/messages/count_tokens?beta=true", body, with_api_key("sk-erin-0001"));
  ASSERT_EQ(through.status, 200) << through.body;
  EXPECT_EQ(through.header("x-llmux-backend"), "sim");
  EXPECT_GT(i64(parse_json(through.body).at("input_tokens")), 0);
  EXPECT_EQ(through.body, direct.body);
}

TEST_F(GatewayMessages, MalformedRequestsGetTheBackendsAnswerUntouched) {
  HttpClient through(port());
  HttpClient direct(sim_->port());
  const std::string bodies[] = {
      R"({"model":"m","messages":[{"role":"user","content":"hi"}]})",  // no max_tokens
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"hologram"}]}]})",
      R"({"model":"m","max_tokens":5,"messages":)",  // not JSON
  };
  for (const std::string& body : bodies) {
    const Response expected = direct.post("/v1/messages", body, {});
    const Response got = through.post("/v1/messages", body, with_api_key("sk-erin-0001"));
    EXPECT_GE(expected.status, 400) << body;
    EXPECT_EQ(got.status, expected.status) << body;
    EXPECT_EQ(got.body, expected.body) << body;
    EXPECT_EQ(got.header("content-type"), expected.header("content-type")) << body;
  }
}

}  // namespace
}  // namespace llmux::test
