// SPDX-License-Identifier: Apache-2.0
// Admission control (issue 10): when every backend of a route is at its max_inflight, requests
// wait in the route's FIFO queue — served one by one in the order they came, never more than
// max_inflight on a backend, 429 with Retry-After when the queue is full, 503 with Retry-After
// when a request waited longer than queue.timeout, its place given up when its client leaves.
// Queued requests are seen through GET /health's `queued`, never guessed with sleeps.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;

const std::string kBody = R"({"model":"m","stream":true,"messages":[]})";

std::string config(int port, const std::string& queue) {
  return "listen: \"127.0.0.1:0\"\nthreads: 2\nqueue: " + queue + "\nbackends:\n" +
         backend_line("be", port, ", max_inflight: 1") +
         "routes:\n  - {name: all, backends: [be], policy: least_inflight}\n";
}

int queued(int gw_port) {
  Response r = HttpClient(gw_port).get("/health");
  return static_cast<int>(parse_json(r.body).at("routes").at(0).at("queued").as_int64());
}

std::unique_ptr<StreamingResponse> open_stream(int port, const std::string& id) {
  return StreamingResponse::open(port, "POST", "/v1/chat/completions?n=" + id, kBody,
                                 {{"x-request-id", "q" + id}}, 20s);
}

/// Lets `s` (one event and [DONE] on the gated backend) run to its end.
void finish(GatedBackend& be, StreamingResponse& s) {
  be.release(2);
  SseResult r = read_sse(s, SIZE_MAX, 5s, 10s);
  EXPECT_EQ(r.end, ReadStatus::End) << r.raw();
}

TEST(GatewayAdmission, QueuedRequestsAreServedInOrderOneAtATimeAndAFullQueueIs429) {
  GatedBackend be({GatedBackend::Mode::GatedSse, 1});
  auto gw = GatewayServer::with_config(config(be.port(), "{size: 2, timeout: 20s}"));
  const int port = gw->port();
  auto first = open_stream(port, "0");
  ASSERT_EQ(first->status(), 200);
  EXPECT_EQ(first->header("x-llmux-queue-depth"), "");  // not queued
  auto second = std::async(std::launch::async, [&] { return open_stream(port, "1"); });
  ASSERT_TRUE(poll_until([&] { return queued(port) == 1; }, 5s));
  auto third = std::async(std::launch::async, [&] { return open_stream(port, "2"); });
  ASSERT_TRUE(poll_until([&] { return queued(port) == 2; }, 5s));

  // The queue holds two: the next is refused at once.
  Response full = HttpClient(port).post("/v1/chat/completions?n=3", kBody);
  EXPECT_EQ(full.status, 429) << full.body;
  EXPECT_EQ(full.header("retry-after"), "1");
  std::string why;
  EXPECT_TRUE(is_openai_error(full.body, 429, &why)) << why;
  EXPECT_EQ(be.requests().size(), 1u) << "a queued request reached the backend";

  // Each one starts only when the one before it ended, in the order they came.
  finish(be, *first);
  auto s2 = second.get();
  ASSERT_EQ(s2->status(), 200);
  EXPECT_EQ(s2->header("x-llmux-queue-depth"), "1");
  ASSERT_TRUE(be.wait_requests(2, 5s));
  EXPECT_EQ(be.requests().size(), 2u);
  EXPECT_EQ(be.requests()[1].target, "/v1/chat/completions?n=1");
  EXPECT_EQ(queued(port), 1);
  finish(be, *s2);
  auto s3 = third.get();
  ASSERT_EQ(s3->status(), 200);
  EXPECT_EQ(s3->header("x-llmux-queue-depth"), "2");
  ASSERT_TRUE(be.wait_requests(3, 5s));
  EXPECT_EQ(be.requests()[2].target, "/v1/chat/completions?n=2");
  finish(be, *s3);
  EXPECT_EQ(queued(port), 0);
  const auto rec = gw->wait_access_record("q2", 5s);
  EXPECT_EQ(rec.at("queue_depth"), 2);
  EXPECT_GT(rec.at("queue_ms").as_double(), 0.0);
  gw->expect_clean_exit();
}

TEST(GatewayAdmission, WaitingLongerThanTheQueueTimeoutIs503WithRetryAfter) {
  GatedBackend be({GatedBackend::Mode::GatedSse, 1});
  auto gw = GatewayServer::with_config(config(be.port(), "{size: 4, timeout: 300ms}"));
  auto first = open_stream(gw->port(), "0");
  ASSERT_EQ(first->status(), 200);
  const auto start = std::chrono::steady_clock::now();
  Response r = HttpClient(gw->port()).post("/v1/chat/completions?n=1", kBody);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.header("retry-after"), "2");
  EXPECT_NE(r.body.find("queue.timeout"), std::string::npos) << r.body;
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(be.requests().size(), 1u);
  finish(be, *first);
  gw->expect_clean_exit();
}

TEST(GatewayAdmission, AClientThatLeavesGivesUpItsPlace) {
  GatedBackend be({GatedBackend::Mode::GatedSse, 1});
  auto gw = GatewayServer::with_config(config(be.port(), "{size: 4, timeout: 20s}"));
  const int port = gw->port();
  auto first = open_stream(port, "0");
  ASSERT_EQ(first->status(), 200);
  {
    RawConnection leaver(port);
    ASSERT_TRUE(
        leaver.send("POST /v1/chat/completions?n=gone HTTP/1.1\r\nHost: x\r\n"
                    "X-Request-Id: gone\r\nContent-Type: application/json\r\n"
                    "Content-Length: " +
                    std::to_string(kBody.size()) + "\r\n\r\n" + kBody));
    ASSERT_TRUE(poll_until([&] { return queued(port) == 1; }, 5s));
  }  // closed while queued
  EXPECT_TRUE(poll_until([&] { return queued(port) == 0; }, 5s));
  const auto rec = gw->wait_access_record("gone", 5s);
  EXPECT_EQ(rec.at("status"), 499);
  // The next request is served as soon as the slot frees: nobody is left ahead of it.
  auto next = std::async(std::launch::async, [&] { return open_stream(port, "1"); });
  ASSERT_TRUE(poll_until([&] { return queued(port) == 1; }, 5s));
  finish(be, *first);
  auto s = next.get();
  EXPECT_EQ(s->status(), 200);
  finish(be, *s);
  EXPECT_EQ(be.requests().size(), 2u);
  gw->expect_clean_exit();
}

TEST(GatewayAdmission, ARequestPinnedToOneBackendWaitsForItAloneAndBlocksNoOneElse) {
  // /v1/responses is pinned to `one` (as the seed pins it to server1); everything else may use
  // both. With `one` full, a pinned request waits, while a request that may use `two` does not.
  GatedBackend one({GatedBackend::Mode::GatedSse, 1});
  GatedBackend two({GatedBackend::Mode::GatedSse, 1});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\nqueue: {size: 8, timeout: 20s}\nbackends:\n" +
      backend_line("one", one.port(), ", max_inflight: 1") +
      backend_line("two", two.port(), ", max_inflight: 1") +
      "routes:\n"
      "  - {name: pinned, match: {path_prefix: /v1/responses}, backends: [one]}\n"
      "  - {name: all, backends: [one, two], policy: first}\n");
  const int port = gw->port();
  auto held = StreamingResponse::open(port, "POST", "/v1/responses", kBody, {}, 20s);
  ASSERT_EQ(held->status(), 200);
  auto pinned = std::async(std::launch::async, [&] {
    return StreamingResponse::open(port, "POST", "/v1/responses?n=pinned", kBody, {}, 20s);
  });
  ASSERT_TRUE(poll_until(
      [&] {
        Response r = HttpClient(port).get("/health");
        return parse_json(r.body).at("routes").at(0).at("queued").as_int64() == 1;
      },
      5s));
  // Not behind the pinned request: served by `two` at once.
  auto other = StreamingResponse::open(port, "POST", "/v1/chat/completions", kBody, {}, 5s);
  EXPECT_EQ(other->status(), 200);
  EXPECT_EQ(other->header("x-llmux-backend"), "two");
  EXPECT_EQ(other->header("x-llmux-queue-depth"), "");
  // `one` frees: the pinned request takes it.
  finish(one, *held);
  auto p = pinned.get();
  EXPECT_EQ(p->status(), 200);
  EXPECT_EQ(p->header("x-llmux-backend"), "one");
  EXPECT_EQ(p->header("x-llmux-queue-depth"), "1");
  finish(one, *p);
  finish(two, *other);
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
