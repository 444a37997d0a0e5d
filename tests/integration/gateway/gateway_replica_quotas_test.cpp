// SPDX-License-Identifier: Apache-2.0
// Per-key quotas and usage shared by gateway replicas through Redis (issue 15), end to end: two
// `llmux gateway` processes in front of one simulator, sharing a real redis-server.
//  - requests_per_minute and tokens_per_minute are counted once for the whole fleet, not once
//    per replica (Redis holds exactly what was admitted and charged);
//  - with Redis stopped, each replica admits its local share of a limit (1 / the replicas it has
//    heard of: half, with two), starting from what it admitted itself, and nothing fails; once
//    Redis is back the counts are shared again;
//  - /admin/usage on either replica answers every replica's rows; with Redis stopped, its own,
//    marked partial (JSON "partial": true, CSV header X-Llmux-Usage-Partial); once Redis is back
//    the rows written meanwhile are written back and the shared answer has them all, also when
//    Redis comes back empty (without the sequence numbers of what the replicas wrote before).
// Loopback only; every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kAdminToken = "admin-token-0123456789";
constexpr const char* kPrefix = "quotas-test:";
// The keys' limits in config(), which the expectations are about.
constexpr int kRpm = 10;
constexpr int kTpm = 100;

Headers bearer(const std::string& key) {
  return {{"Authorization", "Bearer " + key}};
}

/// The keys: `name` is used with the key "sk-<name>-0001".
std::string key_of(const std::string& name) {
  return "sk-" + name + "-0001";
}

std::string config(int sim_port, const std::string& redis_url) {
  std::string keys;
  for (const char* name : {"shared", "down", "after"})
    keys += "    - {name: " + std::string(name) + ", key: " + key_of(name) +
            ", limits: {requests_per_minute: " + std::to_string(kRpm) + "}}\n";
  keys += "    - {name: tokens, key: " + key_of("tokens") +
          ", limits: {tokens_per_minute: " + std::to_string(kTpm) + "}}\n";
  keys += "    - {name: usage, key: " + key_of("usage") + "}\n";
  return "listen: \"127.0.0.1:0\"\nthreads: 1\nbackends:\n" + backend_line("sim", sim_port) +
         "routes: [{name: all, backends: [sim]}]\n"
         "auth:\n  keys:\n" +
         keys + "admin: {token: " + kAdminToken +
         "}\n"
         "state: {url: \"" +
         redis_url + "\", prefix: \"" + kPrefix + "\", timeout: 50ms}\n";
}

/// Waits (bounded) until the gateway's /metrics has `name` at `value`.
bool wait_metric(int port, const std::string& name, double value) {
  return poll_until(
      [&] { return metric_value(HttpClient(port).get("/metrics").body, name) == value; }, 10s,
      50ms);
}

/// A gateway replica in front of the simulator, sharing `redis`, once it says Redis is up.
std::unique_ptr<GatewayServer> replica(const SimServer& sim, const RedisServer& redis) {
  auto gw = GatewayServer::with_config(config(sim.port(), redis.url()));
  EXPECT_TRUE(wait_metric(gw->port(), "llmux_state_redis_up", 1)) << "it never saw Redis";
  return gw;
}

/// Waits (bounded) until Redis has answered everything the replica on `port` sent for quotas. A
/// replica never waits for Redis: a request that overtakes the answer to the one before is decided
/// on the older mirror, so the bounds below hold for requests sent after it.
bool answered(int port) {
  return wait_metric(port, "llmux_state_quota_inflight", 0);
}

struct Tally {
  int admitted = 0, refused = 0;
  std::int64_t tokens = 0;  // prompt + completion of the admitted ones
};

/// One request of key `name`: 200 (admitted) or a 429 over a limit, which must say so as OpenAI
/// does (code rate_limit_exceeded, Retry-After); anything else fails the test.
void send(int port, const std::string& name, Tally& t) {
  Response r = HttpClient(port).post("/v1/completions",
                                     R"({"model":"m","prompt":"hello there","max_tokens":30})",
                                     bearer(key_of(name)));
  if (r.status == 200) {
    ++t.admitted;
    const json::value v = parse_json(r.body);
    const json::object& u = v.at("usage").as_object();
    t.tokens += u.at("prompt_tokens").to_number<std::int64_t>() +
                u.at("completion_tokens").to_number<std::int64_t>();
    return;
  }
  ASSERT_EQ(r.status, 429) << name << ": " << r.body;
  ++t.refused;
  const json::value v = parse_json(r.body);
  EXPECT_EQ(v.at("error").at("code").as_string(), "rate_limit_exceeded") << r.body;
  ASSERT_TRUE(r.has_header("retry-after")) << r.body;
  const int retry = std::stoi(r.header("retry-after"));
  EXPECT_GE(retry, 1);
  EXPECT_LE(retry, 120);
}

/// What Redis holds for counter `counter` (r:NAME or t:NAME), over all its windows.
std::int64_t in_redis(const RedisServer& redis, const std::string& counter) {
  std::int64_t sum = 0;
  for (const auto& k :
       redis.command({"KEYS", std::string(kPrefix) + "quota:" + counter + ":*"}).elements)
    if (const auto v = redis.command({"GET", k.str}); v.kind == state::RedisReply::Kind::string)
      sum += std::stoll(v.str);
  return sum;
}

/// Polls (bounded) until Redis holds `want` for `counter`; returns what it holds last.
std::int64_t wait_in_redis(const RedisServer& redis, const std::string& counter,
                           std::int64_t want) {
  std::int64_t got = 0;
  poll_until([&] { return (got = in_redis(redis, counter)) == want; }, 5s);
  return got;
}

/// Every test: a redis-server of its own, one simulator, and two replicas sharing them, both of
/// which must exit cleanly at the end. A count stays whole for at least 50 s after it is made
/// (10 s buckets: auth/quota.hpp), longer than any phase here; each phase uses a key of its own.
class GatewayReplicaQuotas : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = RedisServer::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    redis = std::make_unique<RedisServer>();
    sim = std::make_unique<SimServer>(
        std::vector<std::string>{"--time-scale", "100", "--served-model-name", "m"});
    a = replica(*sim, *redis);
    b = replica(*sim, *redis);
  }
  void TearDown() override {
    if (a) a->expect_clean_exit();
    if (b) b->expect_clean_exit();
  }
  std::unique_ptr<RedisServer> redis;
  std::unique_ptr<SimServer> sim;
  std::unique_ptr<GatewayServer> a, b;
};

TEST_F(GatewayReplicaQuotas, RequestsPerMinuteAreCountedOnceForAllReplicas) {
  // Three times the limit, alternating between the replicas, one request at a time, each once
  // Redis has answered the replica's last (see answered()).
  Tally ta, tb;
  for (int i = 0; i < 3 * kRpm; ++i) {
    const int port = i % 2 == 0 ? a->port() : b->port();
    send(port, "shared", i % 2 ? tb : ta);
    ASSERT_TRUE(answered(port));
  }
  const int admitted = ta.admitted + tb.admitted;
  // Counted per replica, each would admit the whole limit (twice it in all). Shared, at most
  // one more: a replica decides on its mirror of the Redis counter (it never waits for Redis),
  // which misses the other replica's increment since its own last reply, one request here.
  EXPECT_GE(admitted, kRpm);
  EXPECT_LE(admitted, kRpm + 1) << "replica 1 admitted " << ta.admitted << ", replica 2 "
                                << tb.admitted;
  EXPECT_GT(ta.admitted, 0);
  EXPECT_GT(tb.admitted, 0);
  EXPECT_GT(ta.refused, 0);
  EXPECT_GT(tb.refused, 0);
  // Redis counts each admitted request once (refused ones are taken back).
  EXPECT_EQ(wait_in_redis(*redis, "r:shared", admitted), admitted);
}

TEST_F(GatewayReplicaQuotas, TokensChargedThroughOneReplicaHoldTheOther) {
  // Replica 1 spends the key's tokens per minute (charged as each response ends) until refused.
  Tally ta, tb;
  for (int i = 0; i < 20 && ta.refused == 0; ++i) send(a->port(), "tokens", ta);
  ASSERT_EQ(ta.refused, 1) << "tokens_per_minute never refused";
  EXPECT_GE(ta.tokens, kTpm);
  // Replica 2 has admitted nothing of this key: counting on its own it would admit as many as
  // replica 1 did. Shared, at most its first (read from a mirror that has not heard from Redis
  // for this key yet; the read asks Redis, and its own charge brings the total).
  for (int i = 0; i < 4; ++i) {
    send(b->port(), "tokens", tb);
    ASSERT_TRUE(answered(b->port()));
  }
  EXPECT_LE(tb.admitted, 1);
  EXPECT_GE(tb.refused, 3);
  // Redis holds every admitted response's tokens, charged once.
  EXPECT_EQ(wait_in_redis(*redis, "t:tokens", ta.tokens + tb.tokens), ta.tokens + tb.tokens);
}

/// Waits (bounded) until the gateway has logged that `n` replicas share Redis (each replica
/// says it is alive every 5 s; the count is what their local share is taken from).
bool wait_replicas(const GatewayServer& gw, int n) {
  const std::string line = "state: " + std::to_string(n) + " gateway replicas share Redis";
  return poll_until([&] { return gw.stderr_text().find(line) != std::string::npos; }, 15s, 100ms);
}

TEST_F(GatewayReplicaQuotas, RedisAwayEachReplicaAdmitsItsShareThenSharedAgain) {
  ASSERT_TRUE(wait_replicas(*a, 2)) << a->stderr_text();
  ASSERT_TRUE(wait_replicas(*b, 2)) << b->stderr_text();

  // Two requests through replica 1 while Redis answers: its own count, kept all along.
  Tally before;
  for (int i = 0; i < 2; ++i) send(a->port(), "down", before);
  ASSERT_EQ(before.admitted, 2);
  redis->stop();
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_redis_up", 0));
  ASSERT_TRUE(wait_metric(b->port(), "llmux_state_redis_up", 0));
  // Redis away: each replica admits half the limit (two replicas), replica 1 counting the two it
  // admitted before; nothing else fails.
  Tally ta, tb;
  for (int i = 0; i < 2 * kRpm; ++i)
    send(i % 2 == 0 ? a->port() : b->port(), "down", i % 2 ? tb : ta);
  EXPECT_EQ(before.admitted + ta.admitted, kRpm / 2);
  EXPECT_EQ(tb.admitted, kRpm / 2);

  redis->start();
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_redis_up", 1));
  ASSERT_TRUE(wait_metric(b->port(), "llmux_state_redis_up", 1));
  // Shared again: replica 1 admits the whole limit of a fresh key (not its half) ...
  Tally ta2, tb2;
  for (int i = 0; i < kRpm + 2; ++i) send(a->port(), "after", ta2);
  EXPECT_EQ(ta2.admitted, kRpm);
  // ... and replica 2, which would have its half to itself, is held by it: at most its first
  // request passes, decided on a mirror that had not heard from Redis for this key.
  for (int i = 0; i < 4; ++i) {
    send(b->port(), "after", tb2);
    ASSERT_TRUE(answered(b->port()));
  }
  EXPECT_LE(tb2.admitted, 1);
  EXPECT_EQ(wait_in_redis(*redis, "r:after", ta2.admitted + tb2.admitted),
            ta2.admitted + tb2.admitted);
}

/// /admin/usage?key=usage on one replica, summed over its rows (hours), JSON or CSV.
struct Usage {
  int status = 0;
  bool partial = false;
  std::int64_t requests = 0, tokens = 0;
  std::string body;
};

Usage usage_json(int port) {
  Usage u;
  Response r = HttpClient(port).get("/admin/usage?key=usage", bearer(kAdminToken));
  u.status = r.status;
  u.body = r.body;
  if (r.status != 200) return u;
  const json::object o = parse_json(r.body).as_object();
  if (const json::value* p = o.if_contains("partial")) u.partial = p->as_bool();
  for (const json::value& row : o.at("data").as_array()) {
    EXPECT_EQ(row.at("key").as_string(), "usage");
    EXPECT_EQ(row.at("backend").as_string(), "sim");
    u.requests += row.at("requests").to_number<std::int64_t>();
    u.tokens += row.at("total_tokens").to_number<std::int64_t>();
  }
  return u;
}

Usage usage_csv(int port) {
  Usage u;
  Response r = HttpClient(port).get("/admin/usage?key=usage&format=csv", bearer(kAdminToken));
  u.status = r.status;
  u.body = r.body;
  u.partial = r.header("x-llmux-usage-partial") == "true";
  std::istringstream lines(r.body);
  std::string line;
  std::getline(lines, line);  // the header line
  // hour,key,model,backend,requests,prompt_tokens,cached_tokens,completion_tokens,total_tokens
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string s; std::getline(fields, s, ',');) f.push_back(s);
    if (f.size() != 9) {
      ADD_FAILURE() << "not a usage line: " << line;
      continue;
    }
    u.requests += std::stoll(f[4]);
    u.tokens += std::stoll(f[8]);
  }
  return u;
}

/// The answer once it has `requests` (usage is counted as each request ends, and the shared
/// answer leaves out writes still in flight): bounded.
Usage wait_usage(int port, std::int64_t requests) {
  Usage u;
  poll_until([&] { return (u = usage_json(port)).requests == requests; }, 10s, 50ms);
  return u;
}

TEST_F(GatewayReplicaQuotas, UsageListsEveryReplicasRowsPartialWithoutRedisWrittenBackAfter) {
  Tally ta, tb;
  for (int i = 0; i < 3; ++i) send(a->port(), "usage", ta);
  for (int i = 0; i < 2; ++i) send(b->port(), "usage", tb);
  ASSERT_EQ(ta.admitted + tb.admitted, 5);
  // Either replica answers both replicas' rows, from Redis.
  for (const auto* gw : {a.get(), b.get()}) {
    const Usage u = wait_usage(gw->port(), ta.admitted + tb.admitted);
    ASSERT_EQ(u.status, 200) << u.body;
    EXPECT_FALSE(u.partial) << u.body;
    EXPECT_EQ(u.requests, ta.admitted + tb.admitted) << u.body;
    EXPECT_EQ(u.tokens, ta.tokens + tb.tokens) << u.body;
  }

  // Redis goes (what it holds is saved, so it comes back as it was: a partition, not a loss).
  ASSERT_TRUE(redis->command({"SAVE"}).ok());
  redis->stop();
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_redis_up", 0));
  ASSERT_TRUE(wait_metric(b->port(), "llmux_state_redis_up", 0));
  Tally ta2, tb2;
  for (int i = 0; i < 2; ++i) send(a->port(), "usage", ta2);
  send(b->port(), "usage", tb2);
  ASSERT_EQ(ta2.admitted + tb2.admitted, 3) << "no request fails while Redis is away";
  // Each replica answers its own rows, all of them (before and during the outage), as partial.
  const Usage pa = wait_usage(a->port(), ta.admitted + ta2.admitted);
  const Usage pb = wait_usage(b->port(), tb.admitted + tb2.admitted);
  ASSERT_EQ(pa.status, 200) << pa.body;
  EXPECT_TRUE(pa.partial) << pa.body;
  EXPECT_EQ(pa.requests, ta.admitted + ta2.admitted) << pa.body;
  EXPECT_EQ(pa.tokens, ta.tokens + ta2.tokens) << pa.body;
  ASSERT_EQ(pb.status, 200) << pb.body;
  EXPECT_TRUE(pb.partial) << pb.body;
  EXPECT_EQ(pb.requests, tb.admitted + tb2.admitted) << pb.body;
  const Usage ca = usage_csv(a->port());
  ASSERT_EQ(ca.status, 200) << ca.body;
  EXPECT_TRUE(ca.partial) << "X-Llmux-Usage-Partial";
  EXPECT_EQ(ca.requests, pa.requests) << ca.body;

  // Redis is back: the rows written meanwhile are written back, and either replica's shared
  // answer has every request again.
  redis->start();
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_redis_up", 1));
  ASSERT_TRUE(wait_metric(b->port(), "llmux_state_redis_up", 1));
  const std::int64_t all = ta.admitted + tb.admitted + ta2.admitted + tb2.admitted;
  for (const auto* gw : {a.get(), b.get()}) {
    const Usage u = wait_usage(gw->port(), all);
    ASSERT_EQ(u.status, 200) << u.body;
    EXPECT_FALSE(u.partial) << u.body;
    EXPECT_EQ(u.requests, all) << u.body;
    EXPECT_EQ(u.tokens, ta.tokens + tb.tokens + ta2.tokens + tb2.tokens) << u.body;
  }
  const Usage c = usage_csv(b->port());
  EXPECT_FALSE(c.partial);
  EXPECT_EQ(c.requests, all) << c.body;
}

// Redis comes back empty (restarted without persistence): the usage sequences it kept for the
// replicas are gone with it. What a replica wrote during the outage still reaches it, without
// waiting for that replica's next request, so the other replica's answer has it.
TEST_F(GatewayReplicaQuotas, UsageWrittenDuringTheOutageReachesARedisThatCameBackEmpty) {
  Tally before;
  send(a->port(), "usage", before);  // replica 1 has written to Redis before
  ASSERT_EQ(wait_usage(b->port(), before.admitted).requests, before.admitted);

  redis->stop();
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_redis_up", 0));
  ASSERT_TRUE(wait_metric(b->port(), "llmux_state_redis_up", 0));
  Tally ta, tb;
  for (int i = 0; i < 2; ++i) send(a->port(), "usage", ta);
  send(b->port(), "usage", tb);
  redis->start();  // empty
  ASSERT_TRUE(wait_metric(a->port(), "llmux_state_redis_up", 1));
  ASSERT_TRUE(wait_metric(b->port(), "llmux_state_redis_up", 1));
  // No request since: each replica's outage rows are in Redis, as either replica answers.
  for (const auto* gw : {b.get(), a.get()}) {
    const Usage u = wait_usage(gw->port(), ta.admitted + tb.admitted);
    EXPECT_FALSE(u.partial) << u.body;
    EXPECT_EQ(u.requests, ta.admitted + tb.admitted) << u.body;
    EXPECT_EQ(u.tokens, ta.tokens + tb.tokens) << u.body;
  }
}

}  // namespace
}  // namespace llmux::test
