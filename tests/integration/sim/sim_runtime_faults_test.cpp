// SPDX-License-Identifier: Apache-2.0
// Faults changed while the simulator runs (`GET/POST /admin/faults`): each one set by a POST,
// seen by a client, then cleared; who may post; bad bodies; crashes (the process exits); hang
// (held until cleared, /admin/faults still answered); refusing new connections while a running
// stream finishes, then listening again on the same port.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/sim_suite.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kFaults = "/admin/faults";
constexpr std::string_view kGarbage = "garbage}{ from llmux-sim\n";  // sim/faults.hpp

std::string chat(int max_tokens, bool stream) {
  return json::serialize(json::object{
      {"messages", json::array{json::object{{"role", "user"}, {"content", "runtime faults"}}}},
      {"max_tokens", max_tokens},
      {"ignore_eos", true},
      {"stream", stream}});
}

const char* kOneToken = R"({"prompt":"x","max_tokens":1})";

bool is_json(std::string_view text) {
  boost::system::error_code ec;
  json::parse(text, ec);
  return !ec;
}

double running_count(HttpClient& c) {
  return metric_value(c.get("/metrics").body, "vllm:num_requests_running").value_or(-1);
}

/// The events of a whole SSE body.
std::vector<SseEvent> events_of(std::string_view raw) {
  SseParser p;
  return p.feed(raw, 0);
}

/// Events whose data is neither JSON nor `[DONE]`.
std::size_t broken_events(const std::vector<SseEvent>& evs) {
  std::size_t n = 0;
  for (const auto& e : evs)
    if (e.data != "[DONE]" && !is_json(e.data)) ++n;
  return n;
}

// ---------------------------------------------------------------------------------------------

class SimRuntime : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50"}); }
  void SetUp() override {
    SimSuite::SetUp();
    // One keep-alive admin connection per test: refusing new connections keeps it open.
    admin_ = std::make_unique<HttpClient>(port());
    set("{}");
  }
  void TearDown() override {
    if (sim_ && sim_->alive() && admin_) {
      try {
        Response r = admin_->post(kFaults, "{}");
        EXPECT_EQ(r.status, 200) << "clearing the faults: " << r.body;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "clearing the faults: " << e.what();
      }
    }
    admin_.reset();
    SimSuite::TearDown();
  }

  /// POSTs a fault set; it must be accepted.
  json::object set(std::string_view body) {
    Response r = admin_->post(kFaults, body);
    EXPECT_EQ(r.status, 200) << body << " -> " << r.body;
    auto v = parse_json(r.body);
    return v.is_object() ? v.get_object() : json::object{};
  }
  json::object get() {
    Response r = admin_->get(kFaults);
    EXPECT_EQ(r.status, 200) << r.body;
    auto v = parse_json(r.body);
    return v.is_object() ? v.get_object() : json::object{};
  }

  std::unique_ptr<HttpClient> admin_;
};

TEST_F(SimRuntime, GetShowsThePostedSetAndEmptyClearsIt) {
  EXPECT_EQ(get(), json::object{});
  const json::object posted =
      set(R"({"error_rate":0.25,"error_statuses":[503],"stall_after":7,"latency_ms":5,)"
          R"("malformed":"json","close_after":9,"close_rate":0.5})");
  const json::object want =
      parse_json(R"({"error_rate":0.25,"error_statuses":[503],"stall_after":7,)"
                 R"("latency_ms":5,"malformed":"json","close_after":9,)"
                 R"("close_rate":0.5})")
          .as_object();
  EXPECT_EQ(posted, want);
  EXPECT_EQ(get(), want);
  // A new set replaces the last one entirely.
  EXPECT_EQ(set(R"({"latency_ms":1})"), parse_json(R"({"latency_ms":1})").as_object());
  EXPECT_EQ(set("{}"), json::object{});
  EXPECT_EQ(get(), json::object{});
}

TEST_F(SimRuntime, BadBodiesAre400NamingTheFieldAndChangeNothing) {
  set(R"({"latency_ms":1})");
  const std::pair<const char*, const char*> cases[] = {
      {"{", nullptr},
      {"[1]", nullptr},
      {R"({"no_such_fault":true})", "no_such_fault"},
      {R"({"error_rate":"half"})", "error_rate"},
      {R"({"error_rate":2})", "error_rate"},
      {R"({"error_rate":1,"error_statuses":[200]})", "error_statuses"},
      {R"({"crash_after_requests":0})", "crash_after_requests"},
      {R"({"crash_after_requests":1.5})", "crash_after_requests"},
      {R"({"crash_at":-1})", "crash_at"},
      {R"({"hang":"yes"})", "hang"},
      {R"({"stall_after":-2})", "stall_after"},
      {R"({"close_after":"3"})", "close_after"},
      {R"({"not_ready_for":-1})", "not_ready_for"},
      {R"({"malformed":"xml"})", "malformed"},
      {R"({"latency_ms":-5})", "latency_ms"},
      {R"({"refuse_new":1})", "refuse_new"},
      // One bad field refuses the whole body: the good ones before it are not applied either.
      {R"({"hang":true,"refuse_new":true,"latency_ms":"x"})", "latency_ms"},
  };
  for (const auto& [body, field] : cases) {
    SCOPED_TRACE(body);
    Response r = admin_->post(kFaults, body);
    EXPECT_EQ(r.status, 400) << r.body;
    std::string why;
    EXPECT_TRUE(is_openai_error(r.body, 400, &why)) << why;
    if (field) {
      EXPECT_EQ(str(parse_json(r.body).at("error").at("param")), field) << r.body;
      EXPECT_NE(error_message(r.body).find(field), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(get(), parse_json(R"({"latency_ms":1})").as_object());
  HttpClient c(port());
  EXPECT_EQ(c.get("/health").status, 200);  // not hung, still listening
  EXPECT_EQ(admin_->request("PUT", kFaults, "{}").status, 405);
}

TEST_F(SimRuntime, ErrorRateAnswersWithTheStatusesUntilCleared) {
  set(R"({"error_rate":1,"error_statuses":[429,503]})");
  HttpClient c(port());
  std::set<int> seen;
  for (int i = 0; i < 30; ++i) {
    Response r = c.post("/v1/completions", kOneToken);
    std::string why;
    EXPECT_TRUE(is_openai_error(r.body, r.status, &why)) << r.status << ": " << why;
    seen.insert(r.status);
  }
  EXPECT_EQ(seen, (std::set<int>{429, 503}));
  Response st = c.post("/v1/chat/completions", chat(5, true));
  EXPECT_TRUE(st.status == 429 || st.status == 503) << st.status;
  // The header wins for its request; other endpoints are not affected.
  EXPECT_EQ(c.post("/v1/completions", kOneToken, {{"X-Llmux-Fault", "error=0"}}).status, 200);
  EXPECT_EQ(c.get("/health").status, 200);
  set("{}");
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);
}

TEST_F(SimRuntime, CloseAfterEndsStreamsMidwayUntilCleared) {
  set(R"({"close_after":3})");
  auto s = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(100, true));
  ASSERT_EQ(s->status(), 200);
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::Closed) << to_string(r.end);
  EXPECT_EQ(r.events.size(), 4u) << r.raw();  // role + 3 tokens, no [DONE]
  set("{}");
  auto ok = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(100, true));
  SseResult full = read_sse(*ok);
  EXPECT_EQ(full.end, ReadStatus::End) << to_string(full.end);
  ASSERT_EQ(full.events.size(), 102u) << full.raw();  // role + 100 tokens + [DONE]
  EXPECT_EQ(full.events.back().data, "[DONE]");
}

TEST_F(SimRuntime, StallAfterStopsStreamsMidwayUntilCleared) {
  set(R"({"stall_after":2})");
  auto s = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(100, true));
  ASSERT_EQ(s->status(), 200);
  // 100 tokens at this time scale take well under 100 ms; 500 ms of silence is a stall.
  SseResult r = read_sse(*s, SIZE_MAX, 500ms, 10s);
  EXPECT_EQ(r.end, ReadStatus::Timeout) << to_string(r.end) << "\n" << r.raw();
  EXPECT_EQ(r.events.size(), 3u) << r.raw();  // role + 2 tokens
  set("{}");
  auto ok = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(100, true));
  SseResult full = read_sse(*ok);
  EXPECT_EQ(full.end, ReadStatus::End) << to_string(full.end);
  EXPECT_EQ(full.events.size(), 102u);
}

TEST_F(SimRuntime, FreezeStopsEveryRunningStreamAndClearingLetsThemFinish) {
  // 400 tokens at this time scale take ~0.4 s: the stream is running when the engine stops.
  auto running = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(400, true));
  ASSERT_EQ(running->status(), 200);
  SseResult first = read_sse(*running, 5, 5s, 10s);
  ASSERT_EQ(first.events.size(), 5u) << first.raw();
  set(R"({"freeze":true})");
  // No token is generated while frozen (the engine's own counter stands still), a new request
  // gets its header, and /health still says 200.
  auto generated = [&] {
    return metric_value(admin_->get("/metrics").body, "vllm:generation_tokens_total").value_or(-1);
  };
  const double before = generated();
  auto fresh = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(10, true));
  EXPECT_EQ(fresh->status(), 200);
  std::this_thread::sleep_for(300ms);  // a span in which ~300 tokens would come unfrozen
  EXPECT_EQ(generated(), before);
  EXPECT_EQ(running_count(*admin_), 1);  // the new one waits: no step schedules it
  EXPECT_EQ(metric_value(admin_->get("/metrics").body, "vllm:num_requests_waiting"), 1.0);
  EXPECT_EQ(admin_->get("/health").status, 200);
  EXPECT_EQ(get().at("freeze"), true);
  // Cleared: both go on to their ends, whole.
  set("{}");
  SseResult rest = read_sse(*running, SIZE_MAX, 5s, 10s);
  EXPECT_EQ(rest.end, ReadStatus::End);
  EXPECT_EQ(first.events.size() + rest.events.size(), 402u);  // role + 400 tokens + [DONE]
  SseResult done = read_sse(*fresh, SIZE_MAX, 5s, 10s);
  EXPECT_EQ(done.end, ReadStatus::End);
  EXPECT_EQ(done.events.size(), 12u) << done.raw();  // role + 10 tokens + [DONE]
}

TEST_F(SimRuntime, LatencyDelaysEveryRequestUntilCleared) {
  set(R"({"latency_ms":300})");
  HttpClient c(port());
  auto t0 = Clock::now();
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);
  EXPECT_GE(Clock::now() - t0, 300ms);
  set("{}");
  t0 = Clock::now();
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);
  EXPECT_LT(Clock::now() - t0, 300ms);
}

TEST_F(SimRuntime, SlowFactorSlowsTheEngineUntilCleared) {
  // 40 tokens at time scale 50 take ~16 ms; 50 times slower, ~0.8 s (a margin of 5x either way).
  const std::string forty =
      R"({"prompt":"hello","max_tokens":40,"ignore_eos":true,"temperature":0})";
  HttpClient c(port());
  auto t0 = Clock::now();
  EXPECT_EQ(c.post("/v1/completions", forty).status, 200);
  const auto normal = Clock::now() - t0;
  EXPECT_EQ(set(R"({"slow_factor":50})").at("slow_factor"), 50);
  EXPECT_EQ(get().at("slow_factor"), 50);
  t0 = Clock::now();
  EXPECT_EQ(c.post("/v1/completions", forty).status, 200);
  const auto slowed = Clock::now() - t0;
  EXPECT_GT(slowed, 10 * normal) << "normal " << normal.count() << " ns";
  EXPECT_GE(slowed, 150ms);
  set("{}");
  t0 = Clock::now();
  EXPECT_EQ(c.post("/v1/completions", forty).status, 200);
  EXPECT_LT(Clock::now() - t0, slowed / 5);
  for (const char* bad :
       {R"({"slow_factor":0.5})", R"({"slow_factor":5000})", R"({"slow_factor":"x"})"}) {
    const Response r = admin_->post(kFaults, bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("slow_factor"), std::string::npos) << r.body;
  }
}

TEST_F(SimRuntime, MalformedJsonBreaksBodiesAndOneStreamEvent) {
  set(R"({"malformed":"json"})");
  HttpClient c(port());
  Response plain = c.post("/v1/chat/completions", chat(5, false));
  EXPECT_EQ(plain.status, 200);
  EXPECT_FALSE(plain.body.empty());
  EXPECT_FALSE(is_json(plain.body)) << plain.body;
  auto s = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(5, true));
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::End) << to_string(r.end);  // the HTTP framing is intact
  EXPECT_EQ(r.events.size(), 7u) << r.raw();              // role + 5 tokens + [DONE]
  EXPECT_EQ(broken_events(r.events), 1u) << r.raw();

  set("{}");
  EXPECT_TRUE(is_json(c.post("/v1/chat/completions", chat(5, false)).body));
  auto ok = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(5, true));
  SseResult good = read_sse(*ok);
  EXPECT_EQ(good.events.size(), 7u);
  EXPECT_EQ(broken_events(good.events), 0u) << good.raw();
}

TEST_F(SimRuntime, MalformedSseBreaksOneEventsFraming) {
  set(R"({"malformed":"sse"})");
  auto s = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(5, true));
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::End) << to_string(r.end);
  const std::string raw = r.raw();
  EXPECT_NE(raw.find(kGarbage), std::string::npos) << raw;
  // The first token's event ran into the second: one event fewer, holding two JSON documents.
  EXPECT_EQ(r.events.size(), 6u) << raw;
  EXPECT_EQ(broken_events(r.events), 1u) << raw;
  // Non-streaming answers are not SSE: untouched.
  HttpClient c(port());
  EXPECT_TRUE(is_json(c.post("/v1/chat/completions", chat(5, false)).body));

  set("{}");
  auto ok = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(5, true));
  SseResult good = read_sse(*ok);
  EXPECT_EQ(good.raw().find(kGarbage), std::string::npos);
  EXPECT_EQ(good.events.size(), 7u);
  EXPECT_EQ(broken_events(good.events), 0u);
}

TEST_F(SimRuntime, NotReadyForMakesHealth503ForThatLong) {
  HttpClient c(port());
  set(R"({"not_ready_for":60})");
  Response h = c.get("/health");
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(h.body, "");  // vLLM's: an empty 503
  const double left = get().at("not_ready_for").to_number<double>();
  EXPECT_GT(left, 55);
  EXPECT_LE(left, 60);
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);  // only /health says so
  set("{}");
  EXPECT_EQ(c.get("/health").status, 200);

  set(R"({"not_ready_for":0.3})");
  EXPECT_EQ(c.get("/health").status, 503);
  EXPECT_TRUE(poll_until([&] { return c.get("/health").status == 200; }, 5s));
  EXPECT_FALSE(get().contains("not_ready_for"));  // over: no longer in force
}

TEST_F(SimRuntime, HangHoldsRequestsUntilClearedButAnswersAdmin) {
  set(R"({"hang":true})");
  // A request read while hung gets nothing (not even /health)...
  RawConnection held(port());
  ASSERT_TRUE(held.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(held.read_response(300ms), "");
  // ...a client with a deadline gives up...
  HttpClient impatient(port(), 300ms);
  const auto t0 = Clock::now();
  EXPECT_THROW(impatient.post("/v1/completions", kOneToken), std::runtime_error);
  EXPECT_LT(Clock::now() - t0, 3s);
  // ...while /admin/faults is answered.
  EXPECT_EQ(get(), parse_json(R"({"hang":true})").as_object());
  set("{}");
  // The held request is served once the hang ends; new ones are too.
  Response r = parse_raw_response(held.read_response(5s));
  EXPECT_EQ(r.status, 200);
  HttpClient c(port());
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);
  EXPECT_EQ(running_count(c), 0);  // the request whose client left never reached the engine
}

TEST_F(SimRuntime, RefuseNewThenListenAgainWhileAStreamFinishes) {
  // An idle keep-alive connection, and a long stream (3000 tokens: about 1.2 s here).
  RawConnection idle(port());
  ASSERT_TRUE(idle.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(parse_raw_response(idle.read_response(5s)).status, 200);
  auto s = StreamingResponse::open(port(), "POST", "/v1/chat/completions", chat(3000, true));
  ASSERT_EQ(s->status(), 200);
  Chunk first;
  ASSERT_EQ(s->read(first, 5s), ReadStatus::Data);

  set(R"({"refuse_new":true})");
  EXPECT_THROW(RawConnection{port()}, std::runtime_error);  // connection refused
  bool closed = false;
  idle.read_until_close(5s, &closed);
  EXPECT_TRUE(closed) << "an idle keep-alive connection stays open while refusing";
  EXPECT_EQ(running_count(*admin_), 1);  // the admin connection is kept; the stream still runs
  EXPECT_EQ(get(), parse_json(R"({"refuse_new":true})").as_object());

  SseResult rest = read_sse(*s, SIZE_MAX, 5s, 15s);
  EXPECT_EQ(rest.end, ReadStatus::End) << to_string(rest.end);
  const auto evs = events_of(first.bytes + rest.raw());
  EXPECT_EQ(evs.size(), 3002u);  // role + 3000 tokens + [DONE]: finished normally
  ASSERT_FALSE(evs.empty());
  EXPECT_EQ(evs.back().data, "[DONE]");

  set(R"({"refuse_new":false})");
  HttpClient c(port());  // the same port again
  EXPECT_EQ(c.get("/health").status, 200);
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);
}

// ---------------------------------------------------------------------------------------------

class SimRuntimeToken : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--zero-cost", "--admin-token", "s3cret"}); }
};

TEST_F(SimRuntimeToken, BearerTokenIsRequired) {
  HttpClient c(port());
  Response none = c.post(kFaults, R"({"error_rate":1})");
  EXPECT_EQ(none.status, 401) << none.body;
  std::string why;
  EXPECT_TRUE(is_openai_error(none.body, 401, &why)) << why;
  EXPECT_EQ(c.get(kFaults).status, 401);
  Response wrong = c.post(kFaults, R"({"error_rate":1})", {{"Authorization", "Bearer nope"}});
  EXPECT_EQ(wrong.status, 403) << wrong.body;
  EXPECT_TRUE(is_openai_error(wrong.body, 403, &why)) << why;
  // Refused posts changed nothing.
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);

  const Headers auth{{"Authorization", "Bearer s3cret"}};
  Response ok = c.post(kFaults, R"({"error_rate":1,"error_statuses":[503]})", auth);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 503);  // no token needed there
  EXPECT_EQ(c.get(kFaults, auth).status, 200);
  EXPECT_EQ(c.post(kFaults, "{}", auth).status, 200);
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);
}

class SimNotReadyFlag : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--zero-cost", "--not-ready-for", "2"}); }
};

TEST_F(SimNotReadyFlag, HealthIs503WhileStartingThen200) {
  HttpClient c(port());
  EXPECT_EQ(c.get("/health").status, 503);
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);
  // Clearing the runtime set does not end the start-up time (a flag).
  EXPECT_EQ(c.post(kFaults, "{}").status, 200);
  EXPECT_EQ(c.get("/health").status, 503);
  EXPECT_TRUE(poll_until([&] { return c.get("/health").status == 200; }, 10s));
}

// ---------------------------------------------------------------------------------------------
// Crashes: one simulator per test, which must die.

constexpr int kKilled = 128 + 9;  // SIGKILL

TEST(SimRuntimeCrash, CrashAfterRequestsKillsTheProcessOnTheNth) {
  SimServer sim({"--zero-cost"});
  HttpClient admin(sim.port());
  ASSERT_EQ(admin.post(kFaults, R"({"crash_after_requests":3})").status, 200);
  HttpClient c(sim.port());
  EXPECT_EQ(c.post("/v1/completions", kOneToken).status, 200);
  EXPECT_EQ(c.get("/health").status, 200);  // only generation requests count
  EXPECT_EQ(c.post("/v1/chat/completions", chat(1, false)).status, 200);
  EXPECT_EQ(parse_json(admin.get(kFaults).body), parse_json(R"({"crash_after_requests":1})"));
  EXPECT_THROW(c.post("/v1/completions", kOneToken), std::runtime_error);  // never answered
  EXPECT_EQ(sim.wait(5s), kKilled) << sim.stderr_text();
  EXPECT_NE(sim.stderr_text().find("crash_after_requests"), std::string::npos);
}

TEST(SimRuntimeCrash, CrashAtKillsTheProcessThenAndClearingCancelsIt) {
  SimServer sim({"--zero-cost"});
  HttpClient admin(sim.port());
  ASSERT_EQ(admin.post(kFaults, R"({"crash_at":0.2})").status, 200);
  ASSERT_EQ(admin.post(kFaults, "{}").status, 200);
  EXPECT_EQ(sim.wait(600ms), std::nullopt) << "a cleared crash_at still fired";
  ASSERT_TRUE(sim.alive());
  Response r = admin.post(kFaults, R"({"crash_at":0.3})");
  ASSERT_EQ(r.status, 200);  // answered before dying
  EXPECT_EQ(sim.wait(5s), kKilled) << sim.stderr_text();
}

}  // namespace
}  // namespace llmux::test
