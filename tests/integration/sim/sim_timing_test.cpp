// SPDX-License-Identifier: Apache-2.0
// A client that leaves frees its sequence at once, and the per-request ground truth on
// /debug/requests agrees with what a client measures (both on CLOCK_MONOTONIC).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/sim_suite.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

double running(HttpClient& c) {
  return metric_value(c.get("/metrics").body, "vllm:num_requests_running").value_or(-1);
}

json::object timing_record(HttpClient& c, const std::string& id) {
  Response r = c.get("/debug/requests/" + id);
  EXPECT_EQ(r.status, 200) << r.body;
  auto v = parse_json(r.body);
  return v.is_object() ? v.get_object() : json::object{};
}

// ---------------------------------------------------------------------------------------------

class SimDisconnect : public SimSuite {
 protected:
  // Real time (about 50 tokens/s): a 100000-token stream would run for half an hour.
  static void SetUpTestSuite() { start({"--time-scale", "1"}); }
};

TEST_F(SimDisconnect, StreamingClientGoneFreesSequence) {
  HttpClient c(port());
  ASSERT_EQ(running(c), 0);
  auto s = StreamingResponse::open(
      port(), "POST", "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"talk forever"}],"max_tokens":100000,"ignore_eos":true,"stream":true})");
  ASSERT_EQ(s->status(), 200);
  SseResult r = read_sse(*s, 4, 5s, 10s);  // role frame + 3 tokens
  ASSERT_EQ(r.events.size(), 4u) << to_string(r.end) << "\n" << r.raw();
  const std::string id(parse_json(r.events[0].data).at("id").as_string());
  EXPECT_EQ(running(c), 1);

  const auto closed_at = std::chrono::steady_clock::now();
  s->close();
  double now_running = -1;
  ASSERT_TRUE(poll_until(
      [&] {
        now_running = running(c);
        return now_running == 0;
      },
      5s, 20ms))
      << "num_requests_running stayed " << now_running;
  const auto freed_after = std::chrono::steady_clock::now() - closed_at;
  EXPECT_LT(freed_after, 1s)
      << "freed only after "
      << std::chrono::duration_cast<std::chrono::milliseconds>(freed_after).count() << " ms";
  auto t = timing_record(c, id);
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.at("outcome"), "client_gone");
  EXPECT_GE(i64(t.at("completion_tokens")), 3);
  EXPECT_LT(i64(t.at("completion_tokens")), 1000);
  // The KV cache it held is free again (prefix-cached blocks may stay, usage counts refs).
  EXPECT_EQ(metric_value(c.get("/metrics").body, "vllm:kv_cache_usage_perc").value_or(-1), 0);
}

TEST_F(SimDisconnect, NonStreamingClientGoneFreesSequence) {
  HttpClient c(port());
  ASSERT_EQ(running(c), 0);
  auto raw = std::make_unique<RawConnection>(port());
  const std::string body =
      R"({"prompt":"a very long answer","max_tokens":100000,"ignore_eos":true})";
  ASSERT_TRUE(
      raw->send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "X-Request-Id: gone-nonstream\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body));
  ASSERT_TRUE(poll_until([&] { return running(c) == 1; }, 5s));
  raw->close();
  ASSERT_TRUE(poll_until([&] { return running(c) == 0; }, 5s, 20ms));
  auto t = timing_record(c, "gone-nonstream");
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.at("outcome"), "client_gone");
}

TEST_F(SimDisconnect, OtherStreamsContinue) {
  // Two streams; one leaves; the other runs to its end.
  auto stay = StreamingResponse::open(
      port(), "POST", "/v1/completions",
      R"({"prompt":"stay","max_tokens":20,"ignore_eos":true,"stream":true})");
  auto leave = StreamingResponse::open(
      port(), "POST", "/v1/completions",
      R"({"prompt":"leave","max_tokens":100000,"ignore_eos":true,"stream":true})");
  SseResult l = read_sse(*leave, 2, 5s, 10s);
  ASSERT_EQ(l.events.size(), 2u);
  leave->close();
  SseResult r = read_sse(*stay, SIZE_MAX, 5s, 20s);
  EXPECT_EQ(r.end, ReadStatus::End);
  ASSERT_EQ(r.events.size(), 21u) << r.raw();  // 20 tokens + [DONE]
  EXPECT_EQ(r.events.back().data, "[DONE]");
  HttpClient c(port());
  EXPECT_TRUE(poll_until([&] { return running(c) == 0; }, 5s));
}

// ---------------------------------------------------------------------------------------------

class SimDebugTimings : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "10"}); }
};

TEST_F(SimDebugTimings, StreamTimingsMatchClientView) {
  const int n = 20;
  const std::int64_t sent_ns = mono_ns();
  auto s = StreamingResponse::open(
      port(), "POST", "/v1/chat/completions",
      json::serialize(json::object{
          {"messages",
           json::array{json::object{{"role", "user"}, {"content", "time every token"}}}},
          {"max_tokens", n},
          {"ignore_eos", true},
          {"stream", true}}),
      {{"X-Request-Id", "timing-stream-1"}});
  ASSERT_EQ(s->status(), 200);
  SseResult r = read_sse(*s);
  const std::int64_t done_ns = mono_ns();
  ASSERT_EQ(r.end, ReadStatus::End);
  ASSERT_EQ(r.events.size(), static_cast<std::size_t>(n + 2)) << r.raw();  // role + n + DONE
  const std::string id(parse_json(r.events[0].data).at("id").as_string());

  HttpClient c(port());
  auto t = timing_record(c, id);
  ASSERT_FALSE(t.empty());
  // Also reachable by the client's X-Request-Id.
  auto by_rid = timing_record(c, "timing-stream-1");
  ASSERT_FALSE(by_rid.empty());
  EXPECT_EQ(str(by_rid.at("id")), id);

  EXPECT_EQ(t.at("clock"), "CLOCK_MONOTONIC_ns");
  EXPECT_EQ(t.at("outcome"), "ok");
  EXPECT_EQ(t.at("finish_reason"), "length");
  EXPECT_EQ(t.at("stream"), true);
  EXPECT_EQ(i64(t.at("completion_tokens")), n);
  const auto arrival = i64(t.at("arrival_ns")), scheduled = i64(t.at("scheduled_ns")),
             first = i64(t.at("first_token_ns")), end = i64(t.at("end_ns"));
  EXPECT_LE(sent_ns, arrival);
  EXPECT_LE(arrival, scheduled);
  EXPECT_LE(scheduled, first);
  EXPECT_LE(first, end);
  // end_ns is stamped once the server's last write completed, which may be just after the
  // client read it.
  EXPECT_LE(end, done_ns + 5'000'000);
  const auto& tok = t.at("token_ns").as_array();
  const auto& sched = t.at("token_sched_ns").as_array();
  ASSERT_EQ(tok.size(), static_cast<std::size_t>(n));
  ASSERT_EQ(sched.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(i64(tok[0]), first);
  for (int i = 0; i < n; ++i) {
    SCOPED_TRACE("token " + std::to_string(i));
    if (i > 0) {
      EXPECT_LE(i64(tok[i - 1]), i64(tok[i]));
    }
    EXPECT_LE(i64(sched[i]), i64(tok[i]));
    // The client saw token i in frame i+1 (after the role frame), no earlier than the server
    // sent it and within 50 ms of it.
    const std::int64_t client = r.events[i + 1].t_ns;
    const std::int64_t server = i64(tok[i]);
    EXPECT_GE(client, server);
    EXPECT_LE(client - server, 50'000'000) << "client " << client << " server " << server;
  }
  // Tokens are spaced by engine steps (about 19 ms / 10), not sent in one burst.
  EXPECT_GT(i64(tok[n - 1]) - i64(tok[0]), (n - 1) * 1'000'000);
}

TEST_F(SimDebugTimings, NonStreamTimings) {
  HttpClient c(port());
  Response r = c.post("/v1/completions", R"({"prompt":"plain","max_tokens":8,"ignore_eos":true})",
                      {{"X-Request-Id", "timing-plain-1"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto t = timing_record(c, "timing-plain-1");
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.at("stream"), false);
  EXPECT_EQ(i64(t.at("completion_tokens")), 8);
  const auto arrival = i64(t.at("arrival_ns")), scheduled = i64(t.at("scheduled_ns")),
             first = i64(t.at("first_token_ns")), end = i64(t.at("end_ns"));
  EXPECT_LE(arrival, scheduled);
  EXPECT_LE(scheduled, first);
  EXPECT_LE(first, end);
  EXPECT_EQ(t.at("token_sched_ns").as_array().size(), 8u);
  // Unknown ids are 404 in the usual envelope.
  Response u = c.get("/debug/requests/nope");
  EXPECT_EQ(u.status, 404);
  EXPECT_TRUE(is_openai_error(u.body, 404));
  // The list endpoint has the records.
  Response l = c.get("/debug/requests?limit=5");
  ASSERT_EQ(l.status, 200);
  auto lo = parse_json(l.body).as_object();
  EXPECT_EQ(lo.at("object"), "list");
  EXPECT_GE(lo.at("data").as_array().size(), 1u);
  EXPECT_LE(lo.at("data").as_array().size(), 5u);
}

}  // namespace
}  // namespace llmux::test

namespace llmux::test {
namespace {

// A waiting (not yet admitted) request whose client leaves is removed from the queue too.
class SimQueue : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "1", "--max-num-seqs", "1"}); }
};

TEST_F(SimQueue, WaitingClientGoneLeavesTheQueue) {
  HttpClient c(port());
  auto metric = [&](std::string_view name) {
    return metric_value(c.get("/metrics").body, name).value_or(-1);
  };
  const char* body =
      R"({"prompt":"hold the only slot","max_tokens":100000,"ignore_eos":true,"stream":true})";
  auto a = StreamingResponse::open(port(), "POST", "/v1/completions", body);
  ASSERT_EQ(a->status(), 200);
  ASSERT_EQ(read_sse(*a, 1, 5s, 5s).events.size(), 1u);
  auto b = StreamingResponse::open(port(), "POST", "/v1/completions", body);
  ASSERT_EQ(b->status(), 200);
  ASSERT_TRUE(poll_until([&] { return metric("vllm:num_requests_waiting") == 1; }, 5s));
  EXPECT_EQ(metric("vllm:num_requests_running"), 1);
  b->close();
  EXPECT_TRUE(poll_until([&] { return metric("vllm:num_requests_waiting") == 0; }, 5s, 20ms));
  EXPECT_EQ(metric("vllm:num_requests_running"), 1);
  // The admitted stream still flows.
  SseResult more = read_sse(*a, 3, 5s, 5s);
  EXPECT_EQ(more.events.size(), 3u) << to_string(more.end);
  a->close();
  EXPECT_TRUE(poll_until([&] { return metric("vllm:num_requests_running") == 0; }, 5s, 20ms));
}

}  // namespace
}  // namespace llmux::test
