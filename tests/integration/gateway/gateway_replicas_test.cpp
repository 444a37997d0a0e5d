// SPDX-License-Identifier: Apache-2.0
// Gateway replicas sharing their state in Redis (issue 15): a conversation begun through one
// replica continues through another, which knows where it lives without asking the backends
// ("known", not "found"); with Redis silent (paused), a turn waits for it no longer than the
// lookup timeout, and what was sent meanwhile lands once it answers; with Redis stopped, every
// turn still succeeds (each replica goes on with what it knows, and asks the backends for the
// rest), the metric and the dashboard say Redis is down, and once Redis is back the ids learned
// meanwhile are written back and known to the other replica. A real redis-server on a free
// loopback port, two simulators, two or three gateway processes.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;

struct Turn {
  int status = 0;
  std::string backend, id, body;
};

/// One non-streaming /v1/responses turn (`rid`: its X-Request-Id, to find its access-log line).
Turn turn(int port, const std::string& prev, const std::string& rid) {
  boost::json::object o{{"input", "tell me more"}, {"max_output_tokens", 4}};
  if (!prev.empty()) o["previous_response_id"] = prev;
  Response r =
      HttpClient(port).post("/v1/responses", boost::json::serialize(o), {{"X-Request-Id", rid}});
  Turn t;
  t.status = r.status;
  t.backend = r.header("x-llmux-backend");
  t.body = r.body;
  if (r.status == 200) t.id = std::string(parse_json(r.body).at("id").as_string());
  return t;
}

/// Waits (bounded: 5 s) until Redis holds response `id`; false if it never does.
bool in_redis(const RedisServer& redis, const std::string& id) {
  return poll_until(
      [&] {
        return redis.command({"EXISTS", "replicas-test:resp:" + id}).integer == 1;
      },
      5s);
}

std::string affinity_of(const GatewayServer& gw, const std::string& rid) {
  auto rec = gw.wait_access_record(rid, 5s);
  const auto* a = rec.if_contains("affinity");
  return a ? std::string(a->as_string()) : std::string();
}

std::string config(int p1, int p2, const std::string& redis_url) {
  return "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("s1", p1) +
         backend_line("s2", p2) +
         "routes:\n  - {name: responses, match: {path_prefix: /v1/responses}, backends: [s1, s2],"
         " policy: round_robin}\n  - {name: rest, backends: [s1, s2]}\n"
         "state: {url: \"" +
         redis_url + "\", prefix: \"replicas-test:\", timeout: 50ms}\n";
}

/// The value of the gauge `name` in the gateway's /metrics ("" when absent).
std::string metric(int port, const std::string& name) {
  const std::string text = HttpClient(port).get("/metrics").body;
  const auto at = text.find("\n" + name + " ");
  if (at == std::string::npos) return "";
  const auto begin = at + name.size() + 2;
  return text.substr(begin, text.find('\n', begin) - begin);
}

/// Waits (bounded) until the gauge `name` reads `value`.
bool wait_metric(int port, const std::string& name, const std::string& value) {
  for (const auto until = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(50ms))  // polling interval, bounded by `until`
    if (metric(port, name) == value) return true;
  return false;
}

/// A gateway replica in front of the two simulators, sharing `redis`, once it says Redis is up.
std::unique_ptr<GatewayServer> replica(const SimServer& s1, const SimServer& s2,
                                       const RedisServer& redis) {
  auto gw = GatewayServer::with_config(config(s1.port(), s2.port(), redis.url()));
  EXPECT_TRUE(wait_metric(gw->port(), "llmux_state_redis_up", "1")) << "it never saw Redis";
  return gw;
}

TEST(GatewayReplicas, AConversationContinuesThroughAnotherReplica) {
  if (const auto why = RedisServer::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  RedisServer redis;
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  auto a = replica(s1, s2, redis);
  auto b = replica(s1, s2, redis);
  for (int c = 0; c < 4; ++c) {
    Turn t = turn(a->port(), "", "first-" + std::to_string(c));
    ASSERT_EQ(t.status, 200) << t.body;
    const std::string home = t.backend;
    for (int k = 1; k < 4; ++k) {
      // Turns alternate between the replicas: each learns ids the other must know.
      GatewayServer& gw = k % 2 == 1 ? *b : *a;
      const std::string rid = "c" + std::to_string(c) + "-k" + std::to_string(k);
      // The replica that answered writes the id to Redis as the response ends, not before the
      // client has it: wait (bounded) until it is there, as a user's next turn would come later.
      EXPECT_TRUE(in_redis(redis, t.id)) << "the id never reached Redis";
      t = turn(gw.port(), t.id, rid);
      ASSERT_EQ(t.status, 200) << rid << ": " << t.body;
      EXPECT_EQ(t.backend, home) << rid;
      EXPECT_EQ(affinity_of(gw, rid), "known") << rid << ": from Redis, no backend asked";
    }
  }
  // The table lives in Redis, under the deployment's prefix, with a TTL.
  const auto keys = redis.command({"KEYS", "replicas-test:resp:*"});
  EXPECT_EQ(keys.elements.size(), 16u);
  const auto ttl = redis.command({"PTTL", keys.elements.at(0).str});
  EXPECT_GT(ttl.integer, 0);
}

TEST(GatewayReplicas, RedisAwayFailsNoRequestAndWhatWasLearnedIsWrittenBack) {
  if (const auto why = RedisServer::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  RedisServer redis;
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  auto a = replica(s1, s2, redis);
  auto b = replica(s1, s2, redis);

  redis.stop();
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_redis_up", "0"));
  const auto dash = parse_json(HttpClient(a->port()).get("/dashboard/data").body);
  EXPECT_EQ(dash.at("gateway").at("state").at("kind").as_string(), "redis");
  EXPECT_FALSE(dash.at("gateway").at("state").at("up").as_bool());
  // Conversations begun while Redis is away: every turn succeeds, on either replica.
  std::vector<Turn> begun;
  for (int c = 0; c < 4; ++c) {
    Turn t = turn(a->port(), "", "outage-first-" + std::to_string(c));
    ASSERT_EQ(t.status, 200) << t.body;
    const std::string rid = "outage-next-" + std::to_string(c);
    Turn next = turn(b->port(), t.id, rid);
    ASSERT_EQ(next.status, 200) << next.body;
    EXPECT_EQ(next.backend, t.backend);
    EXPECT_EQ(affinity_of(*b, rid), "found") << "Redis away: replica b asked the backends";
    begun.push_back(t);
  }
  EXPECT_NE(metric(a->port(), "llmux_state_pending_writes"), "0");

  redis.start();
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_redis_up", "1"));
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_pending_writes", "0"));
  // A third replica, started now with an empty table: it knows the conversations begun during
  // the outage from Redis (replica a wrote them back), without asking any backend.
  auto c = replica(s1, s2, redis);
  for (std::size_t i = 0; i < begun.size(); ++i) {
    const std::string rid = "after-" + std::to_string(i);
    Turn t = turn(c->port(), begun[i].id, rid);
    ASSERT_EQ(t.status, 200) << t.body;
    EXPECT_EQ(t.backend, begun[i].backend);
    EXPECT_EQ(affinity_of(*c, rid), "known") << rid;
  }
}

TEST(GatewayReplicas, ASlowRedisCostsATurnNoMoreThanTheLookupTimeout) {
  if (const auto why = RedisServer::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  RedisServer redis;
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  auto a = replica(s1, s2, redis);
  auto b = replica(s1, s2, redis);

  // Redis stops answering but keeps its connections: the replicas' commands wait in vain. Each
  // turn still succeeds, through a replica that never saw its conversation too: the lookup gives
  // up after state.timeout (50 ms) and the backends are asked. Were the wait unbounded, the turn
  // would still be waiting when Redis answers again, long after this loop.
  redis.pause();
  std::vector<Turn> begun;
  for (int c = 0; c < 3; ++c) {
    Turn t = turn(a->port(), "", "slow-first-" + std::to_string(c));
    ASSERT_EQ(t.status, 200) << t.body;
    const std::string rid = "slow-next-" + std::to_string(c);
    const auto sent = std::chrono::steady_clock::now();
    Turn next = turn(b->port(), t.id, rid);
    const auto took = std::chrono::steady_clock::now() - sent;
    ASSERT_EQ(next.status, 200) << next.body;
    EXPECT_EQ(next.backend, t.backend);
    EXPECT_EQ(affinity_of(*b, rid), "found") << "Redis silent: replica b asked the backends";
    EXPECT_LT(took, 5s) << "a turn waited on a silent Redis";
    begun.push_back(t);
  }
  // Redis answers again: the writes it was sent meanwhile land, and a replica started now knows
  // those conversations from Redis.
  redis.resume();
  for (const Turn& t : begun) EXPECT_TRUE(in_redis(redis, t.id)) << t.id;
  auto c = replica(s1, s2, redis);
  for (std::size_t i = 0; i < begun.size(); ++i) {
    const std::string rid = "after-slow-" + std::to_string(i);
    Turn t = turn(c->port(), begun[i].id, rid);
    ASSERT_EQ(t.status, 200) << t.body;
    EXPECT_EQ(t.backend, begun[i].backend);
    EXPECT_EQ(affinity_of(*c, rid), "known") << rid;
  }
}

}  // namespace
}  // namespace llmux::test
