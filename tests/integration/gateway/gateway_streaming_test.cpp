// SPDX-License-Identifier: Apache-2.0
// Streams through `llmux gateway`: relayed event by event (proved with a backend that sends
// each event only when the test allows it, so no clock is involved), an upstream dying mid-
// stream (an OpenAI error event, then [DONE], then a clean end), a client leaving (the backend
// stops generating at once, streaming or not), and the graceful drain on SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>

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

double running(int sim_port) {
  HttpClient c(sim_port);
  return metric_value(c.get("/metrics").body, "vllm:num_requests_running").value_or(-1);
}

// ---------------------------------------------------------------------------------------------

TEST(GatewayRelay, EachEventReachesTheClientBeforeTheNextIsSent) {
  constexpr int kEvents = 6;
  GatedBackend be({GatedBackend::Mode::GatedSse, kEvents});
  auto gw = GatewayServer::with_config(
      one_route_config(/*threads=*/2, backend_line("gated", be.port()), "gated"));
  // The response header reaches the client before the backend was allowed a single event.
  auto s = StreamingResponse::open(gw->port(), "POST", "/v1/chat/completions",
                                   R"({"messages":[{"role":"user","content":"x"}],"stream":true})");
  ASSERT_EQ(s->status(), 200);
  EXPECT_EQ(s->header("x-llmux-backend"), "gated");
  EXPECT_EQ(s->header("content-type").rfind("text/event-stream", 0), 0u);
  EXPECT_TRUE(s->chunked());
  EXPECT_EQ(be.events_sent(), 0);

  SseParser parser;
  for (int k = 0; k <= kEvents; ++k) {
    SCOPED_TRACE("event " + std::to_string(k));
    be.release(1);  // the backend may now write event k, and nothing more
    std::vector<SseEvent> got;
    // Bounded wait for event k; the backend cannot send k+1 until the next release, so a
    // gateway that held event k back (to fill a buffer, or waiting for more) times out here.
    while (got.empty()) {
      Chunk c;
      const ReadStatus st = s->read(c, 10s);
      ASSERT_EQ(st, ReadStatus::Data)
          << "event " << k << " did not reach the client while the backend waited; got "
          << to_string(st) << " after " << be.events_sent() << " events sent";
      for (auto& ev : parser.feed(c.bytes, c.t_ns)) got.push_back(std::move(ev));
    }
    ASSERT_EQ(got.size(), 1u) << "only one event was released";
    EXPECT_EQ(be.events_sent(), k + 1);
    EXPECT_FALSE(parser.pending()) << "an event was still incomplete";
    if (k < kEvents) {
      EXPECT_EQ(got[0].data, "{\"k\":" + std::to_string(k) + "}");
    } else {
      EXPECT_EQ(got[0].data, "[DONE]");
    }
  }
  Chunk c;
  EXPECT_EQ(s->read(c, 10s), ReadStatus::End) << c.bytes;
  EXPECT_EQ(be.requests().size(), 1u);
  gw->expect_clean_exit();
  dump_on_failure(*gw);
}

// ---------------------------------------------------------------------------------------------

class GatewayMidStream : public SimBehindGatewayTest {
 protected:
  void SetUp() override {
    sim_ = std::make_unique<SimServer>(std::vector<std::string>{"--time-scale", "100"});
    gw_ = GatewayServer::with_config(
        one_route_config(/*threads=*/2, backend_line("sim", sim_->port()), "sim"));
  }
};

TEST_F(GatewayMidStream, UpstreamDeathBecomesAnErrorEventThenDone) {
  auto s = StreamingResponse::open(
      gw_->port(), "POST", "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"fault me"}],"max_tokens":100,"ignore_eos":true,"stream":true})",
      {{"X-Llmux-Fault", "close-after=3"}, {"X-Request-Id", "midstream-chat"}});
  ASSERT_EQ(s->status(), 200);
  SseResult r = read_sse(*s, SIZE_MAX, 10s, 30s);
  EXPECT_EQ(r.end, ReadStatus::End)
      << "the chunked body must end cleanly: " << to_string(r.end) << "\n"
      << r.raw();
  ASSERT_GE(r.events.size(), 3u) << r.raw();
  int content = 0;
  for (std::size_t i = 0; i + 2 < r.events.size(); ++i) {
    auto o = parse_json(r.events[i].data).as_object();
    ASSERT_TRUE(o.contains("choices")) << r.events[i].data;
    const auto& delta = o.at("choices").at(0).at("delta").as_object();
    if (const auto* t = delta.if_contains("content"); t && !t->as_string().empty()) ++content;
  }
  EXPECT_EQ(content, 3) << r.raw();
  const auto& err = r.events[r.events.size() - 2];
  std::string why;
  EXPECT_TRUE(is_openai_error(err.data, 502, &why)) << why;
  EXPECT_EQ(r.events.back().data, "[DONE]");

  // The access log tells what happened, with one attempt (nothing is retried once bytes went
  // to the client).
  auto rec = gw_->wait_access_record("midstream-chat", 5s);
  ASSERT_FALSE(rec.empty()) << read_text_file(gw_->access_log_path());
  EXPECT_EQ(rec.at("status"), 200);
  EXPECT_EQ(rec.at("attempts"), 1);
  EXPECT_EQ(rec.at("backend"), "sim");
  ASSERT_TRUE(rec.contains("error")) << json::serialize(rec);
  EXPECT_EQ(str(rec.at("error")).rfind("sim ", 0), 0u)
      << "the error names the backend that failed: " << json::serialize(rec);
  expect_serves(gw_->port());
}

// The relay's tap reads token usage with the bench's reader, whatever the dialect and
// whether the answer streams: the access log's counts are what the client itself received.
TEST_F(GatewayMidStream, AccessLogCountsTheTokensTheClientReceived) {
  struct Case {
    const char* id;
    const char* path;
    const char* body;
    bool stream;
  };
  const Case cases[] = {
      {"tap-cmpl", "/v1/completions", R"({"prompt":"a b c d","max_tokens":5})", false},
      {"tap-chat", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":"hello there"}],"max_tokens":7,"stream":true,"stream_options":{"include_usage":true}})",
       true},
      {"tap-resp", "/v1/responses", R"({"input":"one two three","max_output_tokens":6})", false},
      {"tap-resp-stream", "/v1/responses",
       R"({"input":"one two three four","max_output_tokens":4,"stream":true})", true},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.id);
    json::object usage;
    if (k.stream) {
      auto s =
          StreamingResponse::open(gw_->port(), "POST", k.path, k.body, {{"X-Request-Id", k.id}});
      ASSERT_EQ(s->status(), 200);
      SseResult r = read_sse(*s, SIZE_MAX, 10s, 30s);
      ASSERT_EQ(r.end, ReadStatus::End) << r.raw();
      for (const auto& ev : r.events) {
        if (ev.data == "[DONE]") continue;
        auto o = parse_json(ev.data).as_object();
        if (const auto* u = o.if_contains("usage"); u && u->is_object()) usage = u->as_object();
        if (const auto* resp = o.if_contains("response"))
          if (const auto* u = resp->as_object().if_contains("usage"); u && u->is_object())
            usage = u->as_object();
      }
    } else {
      Response r = HttpClient(gw_->port()).post(k.path, k.body, {{"X-Request-Id", k.id}});
      ASSERT_EQ(r.status, 200) << r.body;
      usage = parse_json(r.body).at("usage").as_object();
    }
    ASSERT_FALSE(usage.empty()) << "the client got no usage to compare with";
    const bool responses = std::string_view(k.path) == "/v1/responses";
    const auto prompt = usage.at(responses ? "input_tokens" : "prompt_tokens");
    const auto completion = usage.at(responses ? "output_tokens" : "completion_tokens");
    auto rec = gw_->wait_access_record(k.id, 5s);
    ASSERT_FALSE(rec.empty()) << read_text_file(gw_->access_log_path());
    ASSERT_TRUE(rec.contains("prompt_tokens")) << json::serialize(rec);
    ASSERT_TRUE(rec.contains("completion_tokens")) << json::serialize(rec);
    EXPECT_EQ(rec.at("prompt_tokens"), prompt) << json::serialize(rec);
    EXPECT_EQ(rec.at("completion_tokens"), completion) << json::serialize(rec);
  }
}

// An event larger than the relay's stream buffer (the Responses API's final event carries the
// whole output) goes out in pieces and arrives whole.
TEST_F(GatewayMidStream, AnEventLargerThanTheRelayBufferArrivesWhole) {
  auto s = StreamingResponse::open(
      gw_->port(), "POST", "/v1/responses",
      R"({"input":"write a lot","max_output_tokens":2500,"ignore_eos":true,"stream":true})");
  ASSERT_EQ(s->status(), 200);
  SseResult r = read_sse(*s, SIZE_MAX, 10s, 30s);
  ASSERT_EQ(r.end, ReadStatus::End) << to_string(r.end);
  std::string deltas;
  const SseEvent* completed = nullptr;
  for (const auto& ev : r.events) {
    auto o = parse_json(ev.data).as_object();
    if (o.at("type") == "response.output_text.delta") deltas += o.at("delta").as_string();
    if (o.at("type") == "response.completed") completed = &ev;
  }
  ASSERT_NE(completed, nullptr);
  EXPECT_GT(completed->data.size(), 8u * 1024) << "the event must exceed every relay buffer";
  const json::value done = parse_json(completed->data);
  const auto& out = done.at("response").at("output").as_array();
  std::string text;
  for (const auto& item : out)
    if (const auto* content = item.as_object().if_contains("content"))
      for (const auto& part : content->as_array()) text += part.at("text").as_string();
  EXPECT_EQ(text, deltas);
}

TEST_F(GatewayMidStream, ResponsesStreamEndsWithAResponsesErrorEvent) {
  // The Responses API has its own error event (no chat chunk, no [DONE]); it continues the
  // stream's sequence numbers, so an SDK reading it raises the error instead of a parse failure.
  auto s = StreamingResponse::open(
      gw_->port(), "POST", "/v1/responses",
      R"({"input":"fault me","max_output_tokens":100,"stream":true})",
      {{"X-Llmux-Fault", "close-after=3"}, {"X-Request-Id", "midstream-responses"}});
  ASSERT_EQ(s->status(), 200);
  SseResult r = read_sse(*s, SIZE_MAX, 10s, 30s);
  EXPECT_EQ(r.end, ReadStatus::End) << to_string(r.end) << "\n" << r.raw();
  ASSERT_GE(r.events.size(), 2u) << r.raw();
  const auto& err = r.events.back();
  EXPECT_EQ(err.event, "error") << r.raw();
  auto o = parse_json(err.data).as_object();
  EXPECT_EQ(str(o.at("type")), "error");
  EXPECT_NE(str(o.at("message")).find("sim"), std::string::npos) << err.data;
  const auto prev = parse_json(r.events[r.events.size() - 2].data).as_object();
  ASSERT_TRUE(prev.contains("sequence_number")) << r.raw();
  EXPECT_EQ(o.at("sequence_number").as_int64(), prev.at("sequence_number").as_int64() + 1);
  EXPECT_EQ(r.raw().find("[DONE]"), std::string::npos) << r.raw();
  expect_serves(gw_->port());
}

TEST_F(GatewayMidStream, CompletionsStreamToo) {
  auto s =
      StreamingResponse::open(gw_->port(), "POST", "/v1/completions",
                              R"({"prompt":"x","max_tokens":100,"ignore_eos":true,"stream":true})",
                              {{"X-Llmux-Fault", "close-after=5"}});
  SseResult r = read_sse(*s, SIZE_MAX, 10s, 30s);
  EXPECT_EQ(r.end, ReadStatus::End) << r.raw();
  ASSERT_EQ(r.events.size(), 7u) << r.raw();  // 5 tokens, the error, [DONE]
  std::string why;
  EXPECT_TRUE(is_openai_error(r.events[5].data, 502, &why)) << why;
  EXPECT_EQ(r.events[6].data, "[DONE]");
  expect_serves(gw_->port());
}

// ---------------------------------------------------------------------------------------------

class GatewayClientGone : public SimBehindGatewayTest {
 protected:
  void SetUp() override {
    // Real time (about 50 tokens/s): 100000 tokens would take half an hour.
    sim_ = std::make_unique<SimServer>(std::vector<std::string>{"--time-scale", "1"});
    // One request in flight at most: a slot the departed client kept would refuse the next.
    gw_ = GatewayServer::with_config(
        one_route_config(/*threads=*/2, backend_line("sim", sim_->port(), ", max_inflight: 1"),
                         "sim", "timeouts: {drain: 5s}\n"));
  }
  // The gateway's in-flight slot for the backend comes back: the next request is served (a
  // 503 until then; bounded).
  void expect_slot_released() {
    Response last;
    EXPECT_TRUE(poll_until(
        [&] {
          last =
              HttpClient(gw_->port()).post("/v1/completions", R"({"prompt":"x","max_tokens":2})");
          return last.status == 200;
        },
        5s))
        << "the backend's in-flight slot was not released: " << last.status << " " << last.body;
  }
  // A raw connection that sent a non-streaming request the backend would run for half an hour.
  std::unique_ptr<RawConnection> send_endless(const std::string& request_id) {
    auto raw = std::make_unique<RawConnection>(gw_->port());
    const std::string body =
        R"({"prompt":"a very long answer","max_tokens":100000,"ignore_eos":true})";
    EXPECT_TRUE(raw->send(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "X-Request-Id: " +
        request_id + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    return raw;
  }
  // The backend's running count comes back to 0 within 5 s.
  void expect_backend_idle() {
    double now = -1;
    EXPECT_TRUE(poll_until(
        [&] {
          now = running(sim_->port());
          return now == 0;
        },
        5s))
        << "the backend still runs the abandoned request: num_requests_running " << now;
  }
  std::string outcome(const std::string& request_id) {
    HttpClient c(sim_->port());
    Response r = c.get("/debug/requests/" + request_id);
    if (r.status != 200) return "no record: " + r.body;
    return str(parse_json(r.body).at("outcome"));
  }
};

TEST_F(GatewayClientGone, StreamingClientLeavingAbortsUpstream) {
  ASSERT_EQ(running(sim_->port()), 0);
  auto s = StreamingResponse::open(
      gw_->port(), "POST", "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"talk forever"}],"max_tokens":100000,"ignore_eos":true,"stream":true})",
      {{"X-Request-Id", "gone-streaming"}});
  ASSERT_EQ(s->status(), 200);
  SseResult r = read_sse(*s, 3, 10s, 20s);
  ASSERT_EQ(r.events.size(), 3u) << to_string(r.end) << "\n" << r.raw();
  EXPECT_EQ(running(sim_->port()), 1);
  s->close();
  expect_backend_idle();
  EXPECT_EQ(outcome("gone-streaming"), "client_gone");
  expect_slot_released();
}

TEST_F(GatewayClientGone, WaitingNonStreamingClientLeavingAbortsUpstream) {
  ASSERT_EQ(running(sim_->port()), 0);
  auto raw = send_endless("gone-nonstreaming");
  ASSERT_TRUE(poll_until([&] { return running(sim_->port()) == 1; }, 5s));
  raw->close();  // gone while the gateway waits for the response header
  expect_backend_idle();
  EXPECT_EQ(outcome("gone-nonstreaming"), "client_gone");
  expect_slot_released();
}

// The watch on the client starts a tick (50-100 ms) after the request began, so a short request
// never pays for one; a client that leaves sooner than that is still noticed once it starts.
TEST_F(GatewayClientGone, ClientLeavingAtOnceAbortsUpstream) {
  ASSERT_EQ(running(sim_->port()), 0);
  auto raw = send_endless("gone-at-once");
  raw->close();  // gone before the gateway's first tick
  std::string last;
  EXPECT_TRUE(poll_until(
      [&] {
        last = outcome("gone-at-once");
        return last == "client_gone";
      },
      5s))
      << "the backend's request did not end as client_gone: " << last;
  expect_backend_idle();
  expect_slot_released();
}

TEST(GatewayClientGoneOthers, OtherStreamsContinue) {
  SimServer sim({"--time-scale", "1"});
  auto gw = GatewayServer::with_config(
      one_route_config(/*threads=*/2, backend_line("sim", sim.port()), "sim"));
  auto stay = StreamingResponse::open(
      gw->port(), "POST", "/v1/completions",
      R"({"prompt":"stay","max_tokens":10,"ignore_eos":true,"stream":true})");
  auto leave = StreamingResponse::open(
      gw->port(), "POST", "/v1/completions",
      R"({"prompt":"leave","max_tokens":100000,"ignore_eos":true,"stream":true})");
  ASSERT_EQ(read_sse(*leave, 2, 10s, 20s).events.size(), 2u);
  leave->close();
  SseResult r = read_sse(*stay, SIZE_MAX, 10s, 30s);
  EXPECT_EQ(r.end, ReadStatus::End);
  ASSERT_EQ(r.events.size(), 11u) << r.raw();  // 10 tokens + [DONE]
  EXPECT_EQ(r.events.back().data, "[DONE]");
  EXPECT_TRUE(poll_until([&] { return running(sim.port()) == 0; }, 5s));
  gw->expect_clean_exit();
  dump_on_failure(*gw);
}

// ---------------------------------------------------------------------------------------------

// True once a new connection to the port is refused.
bool refuses_connections(int port) {
  try {
    RawConnection c(port);
    return false;
  } catch (const std::exception&) {
    return true;
  }
}

TEST(GatewayDrain, SigtermRefusesNewConnectionsAndLetsRunningStreamsFinish) {
  // Real time, about 50 tokens/s: 120 tokens are a stream of about 2.5 s.
  SimServer sim({"--time-scale", "1"});
  auto gw = GatewayServer::with_config(one_route_config(
      /*threads=*/2, backend_line("sim", sim.port()), "sim", "timeouts: {drain: 20s}\n"));
  auto s = StreamingResponse::open(
      gw->port(), "POST", "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"drain"}],"max_tokens":120,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(s->status(), 200);
  SseResult head = read_sse(*s, 2, 10s, 20s);
  ASSERT_EQ(head.events.size(), 2u) << head.raw();

  ASSERT_EQ(::kill(gw->pid(), SIGTERM), 0);
  EXPECT_TRUE(poll_until([&] { return refuses_connections(gw->port()); }, 3s))
      << "the gateway still accepts new connections after SIGTERM";
  EXPECT_TRUE(gw->alive()) << "the gateway exited with a stream running";

  SseResult rest = read_sse(*s, SIZE_MAX, 10s, 30s);
  EXPECT_EQ(rest.end, ReadStatus::End) << to_string(rest.end) << "\n" << rest.raw();
  ASSERT_GE(rest.events.size(), 2u);
  EXPECT_EQ(rest.events.back().data, "[DONE]");
  auto usage = parse_json(rest.events[rest.events.size() - 2].data).at("usage");
  EXPECT_EQ(usage.at("completion_tokens"), 120) << "the whole stream arrived";

  const auto status = gw->wait(10s);
  ASSERT_TRUE(status.has_value()) << "the gateway did not exit after its last stream ended";
  EXPECT_EQ(*status, 0) << gw->stderr_text();
  dump_on_failure(*gw);
}

TEST(GatewayDrain, DrainTimeoutCutsOffEndlessStreams) {
  SimServer sim({"--time-scale", "1"});
  auto gw = GatewayServer::with_config(one_route_config(
      /*threads=*/2, backend_line("sim", sim.port()), "sim", "timeouts: {drain: 500ms}\n"));
  auto s = StreamingResponse::open(
      gw->port(), "POST", "/v1/completions",
      R"({"prompt":"forever","max_tokens":100000,"ignore_eos":true,"stream":true})");
  ASSERT_EQ(s->status(), 200);
  ASSERT_EQ(read_sse(*s, 2, 10s, 20s).events.size(), 2u);
  ASSERT_EQ(::kill(gw->pid(), SIGTERM), 0);
  // 500 ms of drain, then the gateway exits 0; a generous bound against a hang.
  const auto status = gw->wait(10s);
  ASSERT_TRUE(status.has_value()) << "the gateway did not exit after its drain timeout";
  EXPECT_EQ(*status, 0) << gw->stderr_text();
  SseResult rest = read_sse(*s, SIZE_MAX, 10s, 20s);
  EXPECT_NE(rest.end, ReadStatus::Timeout) << "the client's connection must close";
  // The backend is told too: the cut-off request stops generating.
  EXPECT_TRUE(poll_until([&] { return running(sim.port()) == 0; }, 5s));
}

}  // namespace
}  // namespace llmux::test
