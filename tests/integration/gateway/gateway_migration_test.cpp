// SPDX-License-Identifier: Apache-2.0
// Streams that survive their backend (issue 37): a chat or completions stream whose backend is
// SIGKILLed mid-way goes on from the other backend and reads, byte for byte in its text, as the
// uninterrupted stream (the simulator continues greedy outputs exactly: sim/continuation.hpp):
// one id, one role delta, one usage counting both legs, one [DONE], no error event. What cannot
// be continued ends with the error event as before: a cut tool call, structured output, the
// client's opt-out, a fleet where every backend dies. A non-streaming request whose backend dies
// before answering is sent again.
#include <gtest/gtest.h>

#include <signal.h>

#include <boost/json.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// A reasoning turn and a tool call long enough to be cut in the middle of either part.
constexpr const char* kScript = R"(- match: "think first"
  reasoning: "First I consider the question from every side, one word at a time, slowly and with care, then I weigh each answer against the others before I decide which is best."
  text: "The answer comes after the thinking, told in plain words, one after another, until the whole of it is said and nothing is left to add."
- match: "run the tool"
  tool_calls:
    - name: shell
      arguments: {command: ["ls", "-la", "/usr/share/doc", "/usr/share/man", "/usr/share/info", "/usr/share/locale", "/usr/share/zoneinfo"]}
)";

/// The simulator flags both backends share: same outputs for the same prompt, ~10 ms a token.
std::vector<std::string> sim_flags(const std::string& script_path) {
  return {"--time-scale", "2", "--output-len", "uniform:150:250", "--script", script_path};
}

/// What a client saw of a chat or completions stream.
struct SeenStream {
  std::string content;    // chat delta.content, completions text
  std::string reasoning;  // chat delta.reasoning
  int role_deltas = 0;
  int done_events = 0;
  int error_events = 0;
  std::string errors;  // the error events' data
  int tool_call_deltas = 0;
  int reasoning_events = 0;
  std::set<std::string> ids;
  std::set<std::int64_t> created;
  json::object usage;
  ReadStatus end = ReadStatus::Error;
};

SeenStream read_seen(const std::vector<SseEvent>& events, ReadStatus end) {
  SeenStream seen;
  seen.end = end;
  for (const auto& event : events) {
    if (event.data == "[DONE]") {
      ++seen.done_events;
      continue;
    }
    const json::object chunk = parse_json(event.data).as_object();
    if (chunk.contains("error")) {
      ++seen.error_events;
      seen.errors += event.data + "\n";
      continue;
    }
    seen.ids.insert(str(chunk.at("id")));
    seen.created.insert(i64(chunk.at("created")));
    if (const auto* usage = chunk.if_contains("usage"); usage && usage->is_object())
      seen.usage = usage->as_object();
    for (const auto& choice : chunk.at("choices").as_array()) {
      const auto& fields = choice.as_object();
      if (const auto* text = fields.if_contains("text"); text && text->is_string())
        seen.content += text->as_string();
      const auto* delta = fields.if_contains("delta");
      if (!delta) continue;
      const auto& delta_fields = delta->as_object();
      if (delta_fields.contains("role")) ++seen.role_deltas;
      if (const auto* content = delta_fields.if_contains("content");
          content && content->is_string())
        seen.content += content->as_string();
      if (const auto* reasoning = delta_fields.if_contains("reasoning");
          reasoning && reasoning->is_string()) {
        seen.reasoning += reasoning->as_string();
        ++seen.reasoning_events;
      }
      if (delta_fields.contains("tool_calls")) ++seen.tool_call_deltas;
    }
  }
  return seen;
}

/// Streams `body` to `path` through the gateway; once `cut_after` events came (and `until`, when
/// given, holds for what was seen), SIGKILLs `victim` and reads the rest.
SeenStream stream_and_kill(int port, const std::string& path, const std::string& body,
                           SimServer& victim, std::size_t cut_after, const Headers& headers = {}) {
  auto stream = StreamingResponse::open(port, "POST", path, body, headers);
  EXPECT_EQ(stream->status(), 200);
  const SseResult before = read_sse(*stream, cut_after);
  EXPECT_EQ(before.end, ReadStatus::Data) << "the stream ended before the cut";
  ::kill(victim.pid(), SIGKILL);
  const SseResult after = read_sse(*stream, SIZE_MAX, 10s, 60s);
  std::vector<SseEvent> all = before.events;
  all.insert(all.end(), after.events.begin(), after.events.end());
  return read_seen(all, after.end);
}

/// The same request answered whole by `port` (a simulator) without a stream.
json::object whole_answer(int port, const std::string& path, json::object body) {
  body.erase("stream");
  body.erase("stream_options");
  HttpClient client(port);
  const Response response = client.post(path, json::serialize(body));
  EXPECT_EQ(response.status, 200) << response.body;
  return parse_json(response.body).as_object();
}

class GatewayMigration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>();
    const std::string script = dir_->write("turns.yaml", kScript);
    first_ = std::make_unique<SimServer>(sim_flags(script));
    second_ = std::make_unique<SimServer>(sim_flags(script));
  }
  /// A fresh pair of backends and a gateway in front of them.
  void restart(const std::string& extra = "") {
    gw_->expect_clean_exit();
    gw_.reset();
    const std::string script = dir_->path() + "/turns.yaml";
    first_ = std::make_unique<SimServer>(sim_flags(script));
    second_ = std::make_unique<SimServer>(sim_flags(script));
    start_gateway(extra);
  }
  void start_gateway(const std::string& extra = "") {
    gw_ = GatewayServer::with_config(one_route_config(
        2, backend_line("first", first_->port()) + backend_line("second", second_->port()),
        "first, second", extra));
  }
  void TearDown() override {
    if (gw_) {
      dump_on_failure(*gw_);
      gw_->expect_clean_exit();
    }
  }
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<SimServer> first_, second_;
  std::unique_ptr<GatewayServer> gw_;
};

json::object chat_body(const std::string& question, bool usage) {
  json::object body{
      {"model", "Qwen3.6-35B-A3B"},
      {"messages", json::array{json::object{{"role", "user"}, {"content", question}}}},
      {"temperature", 0},
      {"max_tokens", 300},
      {"stream", true}};
  if (usage) body["stream_options"] = json::object{{"include_usage", true}};
  return body;
}

TEST_F(GatewayMigration, ChatStreamCutBySigkillContinuesByteIdentical) {
  start_gateway();
  const json::object body = chat_body("tell me about the sea", true);
  const json::object whole = whole_answer(second_->port(), "/v1/chat/completions", body);
  const SeenStream seen =
      stream_and_kill(gw_->port(), "/v1/chat/completions", json::serialize(body), *first_, 30,
                      {{"X-Request-Id", "cut-chat"}});
  EXPECT_EQ(seen.end, ReadStatus::End);
  EXPECT_EQ(seen.error_events, 0) << seen.errors;
  EXPECT_EQ(seen.content, str(whole.at("choices").at(0).at("message").at("content")));
  EXPECT_EQ(seen.role_deltas, 1);
  EXPECT_EQ(seen.done_events, 1);
  EXPECT_EQ(seen.ids.size(), 1u) << "one stream id across both legs";
  EXPECT_EQ(seen.created.size(), 1u);
  // One usage: the first leg's prompt, both legs' completion tokens — the whole answer's.
  ASSERT_FALSE(seen.usage.empty());
  EXPECT_EQ(i64(seen.usage.at("prompt_tokens")), i64(whole.at("usage").at("prompt_tokens")));
  EXPECT_EQ(i64(seen.usage.at("completion_tokens")),
            i64(whole.at("usage").at("completion_tokens")));
  const json::object record = gw_->wait_access_record("cut-chat", 5s);
  EXPECT_EQ(record.at("migrations"), 1) << json::serialize(record);
  EXPECT_EQ(record.at("migrated_from"), "first");
  EXPECT_EQ(record.at("backend"), "second");
  EXPECT_EQ(record.at("status"), 200);
  // The ledger counts what was computed: both legs' prompts (the second holds the first's
  // tokens), so more than the client's view.
  EXPECT_GT(i64(record.at("prompt_tokens")), i64(whole.at("usage").at("prompt_tokens")));
  HttpClient metrics(gw_->port());
  const std::string text = metrics.get("/metrics").body;
  EXPECT_NE(
      text.find(
          R"(llmux_migrations_total{route="all",from="first",to="second",reason="broken"} 1)"),
      std::string::npos)
      << text;
}

TEST_F(GatewayMigration, CompletionsStreamCutContinuesByteIdentical) {
  start_gateway();
  const json::object body{{"model", "Qwen3.6-35B-A3B"},
                          {"prompt", "Once upon a time"},
                          {"temperature", 0},
                          {"max_tokens", 300},
                          {"stream", true}};
  const json::object whole = whole_answer(second_->port(), "/v1/completions", body);
  const SeenStream seen = stream_and_kill(gw_->port(), "/v1/completions", json::serialize(body),
                                          *first_, 25, {{"X-Request-Id", "cut-completions"}});
  EXPECT_EQ(seen.error_events, 0) << seen.errors;
  EXPECT_EQ(seen.content, str(whole.at("choices").at(0).at("text")));
  EXPECT_EQ(seen.done_events, 1);
  EXPECT_EQ(seen.ids.size(), 1u);
  EXPECT_TRUE(seen.usage.empty()) << "the client did not ask for usage";
  EXPECT_EQ(gw_->wait_access_record("cut-completions", 5s).at("migrations"), 1);
}

TEST_F(GatewayMigration, ReasoningCutInItsContentOrInItsThinkingContinuesIdentical) {
  start_gateway();
  const json::object body = chat_body("please think first", false);
  auto direct = StreamingResponse::open(second_->port(), "POST", "/v1/chat/completions",
                                        json::serialize(body));
  const SeenStream whole = read_seen(read_sse(*direct).events, ReadStatus::End);
  ASSERT_FALSE(whole.reasoning.empty());
  ASSERT_FALSE(whole.content.empty());
  // Inside the reasoning (a few events in): the request is replayed, the repeat cut off.
  const SeenStream in_thinking =
      stream_and_kill(gw_->port(), "/v1/chat/completions", json::serialize(body), *first_, 8);
  EXPECT_EQ(in_thinking.error_events, 0) << in_thinking.errors;
  EXPECT_EQ(in_thinking.reasoning, whole.reasoning);
  EXPECT_EQ(in_thinking.content, whole.content);
  EXPECT_EQ(in_thinking.role_deltas, 1);
  // Inside the content (the role delta, the reasoning, five tokens of content): continued. A
  // fresh pair of backends.
  restart();
  const auto in_content_cut = static_cast<std::size_t>(1 + whole.reasoning_events + 5);
  const SeenStream in_content =
      stream_and_kill(gw_->port(), "/v1/chat/completions", json::serialize(body), *first_,
                      in_content_cut, {{"X-Request-Id", "cut-in-content"}});
  EXPECT_EQ(in_content.error_events, 0) << in_content.errors;
  EXPECT_EQ(in_content.reasoning, whole.reasoning);
  EXPECT_EQ(in_content.content, whole.content);
  // Continued, not replayed: the second leg's prompt held the first's output, so the ledger
  // counts more prompt tokens than twice the client's own prompt.
  const json::object record = gw_->wait_access_record("cut-in-content", 5s);
  EXPECT_EQ(record.at("migrations"), 1);
  const std::int64_t own_prompt = i64(
      whole_answer(second_->port(), "/v1/chat/completions", body).at("usage").at("prompt_tokens"));
  EXPECT_GE(i64(record.at("prompt_tokens")), 2 * own_prompt + whole.reasoning_events);
}

TEST_F(GatewayMigration, CutToolCallEndsWithTheErrorEvent) {
  start_gateway();
  json::object body = chat_body("please run the tool", false);
  body["tools"] = json::parse(
      R"([{"type":"function","function":{"name":"shell","parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}}}}}])");
  const SeenStream seen =
      stream_and_kill(gw_->port(), "/v1/chat/completions", json::serialize(body), *first_, 6,
                      {{"X-Request-Id", "cut-tool"}});
  EXPECT_GT(seen.tool_call_deltas, 0);
  EXPECT_EQ(seen.error_events, 1);
  EXPECT_EQ(seen.done_events, 1);
  EXPECT_FALSE(gw_->wait_access_record("cut-tool", 5s).contains("migrations"));
}

TEST_F(GatewayMigration, StructuredOutputAndTheOptOutEndWithTheErrorEvent) {
  start_gateway();
  json::object structured = chat_body("tell me about the sea", false);
  structured["response_format"] = json::object{{"type", "json_object"}};
  const SeenStream cut_structured = stream_and_kill(gw_->port(), "/v1/chat/completions",
                                                    json::serialize(structured), *first_, 20);
  EXPECT_EQ(cut_structured.error_events, 1);
  restart();
  const SeenStream opted_out =
      stream_and_kill(gw_->port(), "/v1/chat/completions",
                      json::serialize(chat_body("tell me about the sea", false)), *first_, 20,
                      {{"X-Llmux-Migrate", "off"}});
  EXPECT_EQ(opted_out.error_events, 1);
  EXPECT_EQ(opted_out.done_events, 1);
}

TEST_F(GatewayMigration, EveryBackendDyingEndsTheStreamWithinMaxMigrations) {
  start_gateway("migration: {max_migrations: 1}\n");
  auto stream = StreamingResponse::open(gw_->port(), "POST", "/v1/chat/completions",
                                        json::serialize(chat_body("tell me about the sea", false)),
                                        {{"X-Request-Id", "all-die"}});
  ASSERT_EQ(stream->status(), 200);
  std::vector<SseEvent> events = read_sse(*stream, 20).events;
  ::kill(first_->pid(), SIGKILL);
  // Wait for the continuation to flow from the second backend, then kill it too.
  SseResult more = read_sse(*stream, 20);
  events.insert(events.end(), more.events.begin(), more.events.end());
  ::kill(second_->pid(), SIGKILL);
  more = read_sse(*stream, SIZE_MAX, 10s, 30s);
  events.insert(events.end(), more.events.begin(), more.events.end());
  const SeenStream seen = read_seen(events, more.end);
  EXPECT_EQ(more.end, ReadStatus::End);
  EXPECT_EQ(seen.error_events, 1);
  EXPECT_EQ(seen.done_events, 1);
  EXPECT_EQ(gw_->wait_access_record("all-die", 5s).at("migrations"), 1);
}

/// What a client saw of a Responses stream.
struct SeenResponses {
  std::vector<std::string> types;
  std::vector<std::int64_t> sequence_numbers;
  std::set<std::string> response_ids;
  std::string text;  // output_text deltas
};

SeenResponses read_responses(const std::vector<SseEvent>& events) {
  SeenResponses seen;
  for (const auto& event : events) {
    const json::object data = parse_json(event.data).as_object();
    const std::string type = str(data.at("type"));
    seen.types.push_back(type);
    EXPECT_EQ(event.event, type) << "the event line names the event's type";
    if (const auto* number = data.if_contains("sequence_number"))
      seen.sequence_numbers.push_back(i64(*number));
    if (const auto* response = data.if_contains("response"))
      seen.response_ids.insert(str(response->at("id")));
    if (type == "response.output_text.delta") seen.text += str(data.at("delta"));
  }
  return seen;
}

TEST_F(GatewayMigration, ResponsesStreamCutBeforeItsOutputIsRescued) {
  start_gateway();
  const json::object body{{"model", "Qwen3.6-35B-A3B"},
                          {"input", "tell me about the sea"},
                          {"temperature", 0},
                          {"max_output_tokens", 60},
                          {"store", false},
                          {"stream", true}};
  json::object whole_body = body;
  whole_body.erase("stream");
  HttpClient direct(second_->port());
  const Response whole = direct.post("/v1/responses", json::serialize(whole_body));
  ASSERT_EQ(whole.status, 200) << whole.body;
  const std::string whole_text =
      str(parse_json(whole.body).at("output").at(0).at("content").at(0).at("text"));
  // The first backend computes the first token for seconds: the stream is cut after its
  // opening events (response.created, response.in_progress), before any output.
  HttpClient admin(first_->port());
  ASSERT_EQ(admin.post("/admin/faults", R"({"slow_factor":300})").status, 200);
  auto stream = StreamingResponse::open(gw_->port(), "POST", "/v1/responses", json::serialize(body),
                                        {{"X-Request-Id", "rescued"}});
  ASSERT_EQ(stream->status(), 200);
  const SseResult opening = read_sse(*stream, 2);
  ASSERT_EQ(opening.events.size(), 2u);
  ::kill(first_->pid(), SIGKILL);
  const SseResult rest = read_sse(*stream, SIZE_MAX, 10s, 60s);
  EXPECT_EQ(rest.end, ReadStatus::End);
  std::vector<SseEvent> all = opening.events;
  all.insert(all.end(), rest.events.begin(), rest.events.end());
  const SeenResponses seen = read_responses(all);
  EXPECT_EQ(std::count(seen.types.begin(), seen.types.end(), "response.created"), 1);
  EXPECT_EQ(std::count(seen.types.begin(), seen.types.end(), "response.in_progress"), 1);
  EXPECT_EQ(std::count(seen.types.begin(), seen.types.end(), "response.completed"), 1);
  EXPECT_EQ(std::count(seen.types.begin(), seen.types.end(), "error"), 0);
  EXPECT_EQ(seen.types.back(), "response.completed");
  EXPECT_EQ(seen.response_ids.size(), 1u) << "one response id across both legs";
  ASSERT_EQ(seen.sequence_numbers.size(), all.size());
  for (std::size_t i = 0; i < seen.sequence_numbers.size(); ++i)
    EXPECT_EQ(seen.sequence_numbers[i], static_cast<std::int64_t>(i)) << "event " << i;
  EXPECT_EQ(seen.text, whole_text);
  const json::object record = gw_->wait_access_record("rescued", 5s);
  EXPECT_EQ(record.at("migrations"), 1) << json::serialize(record);
  EXPECT_EQ(record.at("backend"), "second");
}

TEST_F(GatewayMigration, ResponsesStreamCutAfterItsOutputBeganEndsWithTheErrorEvent) {
  start_gateway();
  const json::object body{{"model", "Qwen3.6-35B-A3B"},
                          {"input", "tell me about the sea"},
                          {"temperature", 0},
                          {"max_output_tokens", 200},
                          {"store", false},
                          {"stream", true}};
  auto stream = StreamingResponse::open(gw_->port(), "POST", "/v1/responses", json::serialize(body),
                                        {{"X-Request-Id", "not-rescued"}});
  ASSERT_EQ(stream->status(), 200);
  // The opening events, the message's item and part, and ten deltas.
  const SseResult before = read_sse(*stream, 14);
  ASSERT_EQ(before.events.size(), 14u);
  ::kill(first_->pid(), SIGKILL);
  const SseResult after = read_sse(*stream, SIZE_MAX, 10s, 30s);
  std::vector<SseEvent> all = before.events;
  all.insert(all.end(), after.events.begin(), after.events.end());
  const SeenResponses seen = read_responses(all);
  EXPECT_EQ(seen.types.back(), "error");
  EXPECT_EQ(std::count(seen.types.begin(), seen.types.end(), "response.completed"), 0);
  EXPECT_FALSE(gw_->wait_access_record("not-rescued", 5s).contains("migrations"));
}

/// Kills `victim` (SIGKILL) once it runs a request, from a thread of its own: the caller sends
/// the request meanwhile, then joins the thread.
std::thread kill_once_running(const SimServer& victim) {
  return std::thread([&victim] {
    poll_until(
        [&victim] {
          HttpClient scrape(victim.port());
          return metric_value(scrape.get("/metrics").body, "vllm:num_requests_running")
                     .value_or(0) >= 1;
        },
        10s);
    ::kill(victim.pid(), SIGKILL);
  });
}

TEST_F(GatewayMigration, NonStreamingRequestWhoseBackendDiesIsSentAgain) {
  start_gateway();
  json::object body = chat_body("tell me about the sea", false);
  body.erase("stream");
  const json::object whole = whole_answer(second_->port(), "/v1/chat/completions", body);
  // The first backend takes the request, then dies while it computes the answer (~2 s).
  HttpClient client(gw_->port());
  std::thread killer = kill_once_running(*first_);
  const Response response =
      client.post("/v1/chat/completions", json::serialize(body), {{"X-Request-Id", "resent"}});
  killer.join();
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.header("x-llmux-backend"), "second");
  EXPECT_EQ(str(parse_json(response.body).at("choices").at(0).at("message").at("content")),
            str(whole.at("choices").at(0).at("message").at("content")));
  EXPECT_EQ(gw_->wait_access_record("resent", 5s).at("attempts"), 2);
}

TEST_F(GatewayMigration, RequestHeldByAHungBackendIsRescuedOnceChecksEjectIt) {
  // Checks that notice a hung backend within a few seconds; the first_byte timeout far beyond.
  start_gateway(
      "health_checks: {enabled: true, interval: 1s, timeout: 500ms, unhealthy_threshold: 2}\n"
      "timeouts: {first_byte: 60s}\n");
  HttpClient admin(first_->port());
  ASSERT_EQ(admin.post("/admin/faults", R"({"hang":true})").status, 200);
  json::object body = chat_body("tell me about the sea", false);
  body.erase("stream");
  body["max_tokens"] = 20;
  HttpClient client(gw_->port());
  const auto sent = std::chrono::steady_clock::now();
  const Response response =
      client.post("/v1/chat/completions", json::serialize(body), {{"X-Request-Id", "rescued"}});
  const auto waited = std::chrono::steady_clock::now() - sent;
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(response.header("x-llmux-backend"), "second");
  // Sent to the hung backend first, taken back when its checks failed: long before first_byte.
  EXPECT_EQ(gw_->wait_access_record("rescued", 5s).at("attempts"), 2);
  EXPECT_LT(waited, 20s);
  EXPECT_EQ(HttpClient(first_->port()).post("/admin/faults", "{}").status, 200);
}

TEST_F(GatewayMigration, StoredResponsesRequestIsSentAgainOnlyFromABackendDownForSure) {
  start_gateway();
  const std::string body = json::serialize(json::object{{"model", "Qwen3.6-35B-A3B"},
                                                        {"input", "tell me about the sea"},
                                                        {"temperature", 0},
                                                        {"max_output_tokens", 100}});
  HttpClient client(gw_->port());
  // The first backend closes the connection without answering but is up (it accepts a fresh
  // connection): it may have stored the response, so the request is not sent again.
  HttpClient admin(first_->port());
  ASSERT_EQ(admin.post("/admin/faults", R"({"close_after":5})").status, 200);
  const Response closed = client.post("/v1/responses", body, {{"X-Request-Id", "stored-up"}});
  EXPECT_EQ(closed.status, 502) << closed.body;
  EXPECT_EQ(gw_->wait_access_record("stored-up", 5s).at("attempts"), 1);
  ASSERT_EQ(admin.post("/admin/faults", "{}").status, 200);
  // The first backend dies while it computes the answer: a fresh connection is refused, so it is
  // down for sure, and the request goes to the second.
  std::thread killer = kill_once_running(*first_);
  HttpClient fresh(gw_->port());
  const Response resent = fresh.post("/v1/responses", body, {{"X-Request-Id", "stored-down"}});
  killer.join();
  ASSERT_EQ(resent.status, 200) << resent.body;
  EXPECT_EQ(resent.header("x-llmux-backend"), "second");
  EXPECT_EQ(gw_->wait_access_record("stored-down", 5s).at("attempts"), 2);
}

/// Streams a chat request through the gateway; after `cut_after` events posts `fault` to the
/// first backend's /admin/faults (it stays up, the stream on it stops), then reads the rest.
SeenStream stream_and_fault(int port, const json::object& body, const SimServer& victim,
                            std::size_t cut_after, const std::string& fault) {
  auto stream =
      StreamingResponse::open(port, "POST", "/v1/chat/completions", json::serialize(body));
  EXPECT_EQ(stream->status(), 200);
  const SseResult before = read_sse(*stream, cut_after);
  EXPECT_EQ(HttpClient(victim.port()).post("/admin/faults", fault).status, 200);
  const SseResult after = read_sse(*stream, SIZE_MAX, 20s, 60s);
  std::vector<SseEvent> all = before.events;
  all.insert(all.end(), after.events.begin(), after.events.end());
  return read_seen(all, after.end);
}

TEST_F(GatewayMigration, StreamOfAStalledBackendContinuesElsewhere) {
  // The first backend's engine freezes mid-stream (its /health still answers): stall detection
  // cuts the silent stream, which goes on from the second.
  start_gateway("outlier_detection: {stall_timeout: 1s}\n");
  const json::object body = chat_body("tell me about the sea", true);
  const json::object whole = whole_answer(second_->port(), "/v1/chat/completions", body);
  const SeenStream seen = stream_and_fault(gw_->port(), body, *first_, 20, R"({"freeze":true})");
  EXPECT_EQ(seen.error_events, 0) << seen.errors;
  EXPECT_EQ(seen.content, str(whole.at("choices").at(0).at("message").at("content")));
  EXPECT_EQ(seen.done_events, 1);
  const std::string text = HttpClient(gw_->port()).get("/metrics").body;
  EXPECT_NE(
      text.find(
          R"(llmux_migrations_total{route="all",from="first",to="second",reason="stalled"} 1)"),
      std::string::npos)
      << text;
  EXPECT_EQ(HttpClient(first_->port()).post("/admin/faults", "{}").status, 200);
}

TEST_F(GatewayMigration, SilentStreamOfABackendDeclaredDownContinuesElsewhere) {
  // Stall detection slow; health checks quick. The first backend freezes and its /health fails:
  // once the checks take it out, its silent stream goes on from the second.
  start_gateway(
      "outlier_detection: {stall_timeout: 60s}\n"
      "health_checks: {enabled: true, interval: 1s, timeout: 900ms, unhealthy_threshold: 1}\n");
  const json::object body = chat_body("tell me about the sea", true);
  const json::object whole = whole_answer(second_->port(), "/v1/chat/completions", body);
  const auto started = std::chrono::steady_clock::now();
  const SeenStream seen =
      stream_and_fault(gw_->port(), body, *first_, 20, R"({"freeze":true,"not_ready_for":60})");
  EXPECT_EQ(seen.error_events, 0) << seen.errors;
  EXPECT_EQ(seen.content, str(whole.at("choices").at(0).at("message").at("content")));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 20s) << "not cut before the idle timeout";
  const std::string text = HttpClient(gw_->port()).get("/metrics").body;
  EXPECT_NE(
      text.find(
          R"(llmux_migrations_total{route="all",from="first",to="second",reason="ejected"} 1)"),
      std::string::npos)
      << text;
  EXPECT_EQ(HttpClient(first_->port()).post("/admin/faults", "{}").status, 200);
}

}  // namespace
}  // namespace llmux::test
