// SPDX-License-Identifier: Apache-2.0
// Quota counters shared by replicas through a real redis-server (issue 15): each "replica" is its
// own RedisClient and RedisQuotaCounters (as separate processes would be), all on the test's
// redis-server. incr() answers from the local mirror at once; replies keep the mirror in step.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "auth/quota.hpp"
#include "state/redis_fixture.hpp"
#include "state/redis_quota.hpp"
#include "state/replicas.hpp"

namespace llmux::state_test {
namespace {

using state::RedisQuotaCounters;
using state::RedisQuotaOptions;
using test::poll_until;

constexpr std::int64_t kW = auth::kQuotaWindowMs;
constexpr std::int64_t kB = auth::kQuotaBucketMs;
constexpr std::int64_t kT0 = 1'764'756'000'000;  // a minute's (and a bucket's) start (Unix ms)

/// Every reply of `qs` has come back (bounded).
bool settled(const std::vector<std::shared_ptr<RedisQuotaCounters>>& qs) {
  return poll_until(
      [&] {
        for (const auto& q : qs)
          if (q->stats().inflight != 0) return false;
        return true;
      },
      5s, 0ms);
}

class RedisQuota : public RedisFixture {
 protected:
  std::shared_ptr<RedisQuotaCounters> counters(std::shared_ptr<state::RedisClient> c,
                                               std::chrono::milliseconds refresh = 100ms) {
    clients.push_back(c);
    return std::make_shared<RedisQuotaCounters>(
        c, RedisQuotaOptions{.prefix = "t:", .refresh = refresh, .clock = clock()});
  }
  std::vector<std::shared_ptr<state::RedisClient>> clients;
};

TEST_F(RedisQuota, CountsAreSharedAcrossReplicas) {
  auto a = counters(client()), b = counters(client());
  EXPECT_EQ(a->incr("r:alice", kT0, 1), 1);
  EXPECT_EQ(a->incr("r:alice", kT0, 2), 3);
  ASSERT_TRUE(settled({a, b}));
  EXPECT_EQ(raw({"GET", "t:quota:r:alice:" + std::to_string(kT0)}).str, "3");
  // b has not heard of the counter: its first read answers what it knows and asks Redis.
  EXPECT_EQ(b->incr("r:alice", kT0, 0), 0);
  ASSERT_TRUE(settled({a, b}));
  EXPECT_EQ(b->incr("r:alice", kT0, 0), 3);
  // b's increment's reply brings a's along.
  EXPECT_EQ(b->incr("r:alice", kT0, 1), 4);
  ASSERT_TRUE(settled({a, b}));
  // a learns b's increment once its mirror is older than `refresh`.
  EXPECT_EQ(a->incr("r:alice", kT0, 0), 3) << "refreshed before `refresh` passed";
  now += 100;
  a->incr("r:alice", kT0, 0);
  ASSERT_TRUE(settled({a, b}));
  EXPECT_EQ(a->incr("r:alice", kT0, 0), 4);
  // Another bucket, another key, prefixed; expiring once no estimate reads it, and the margin.
  EXPECT_EQ(a->incr("r:alice", kT0 + kB, 1), 1);
  ASSERT_TRUE(settled({a, b}));
  const std::string k = a->redis_key("r:alice", kT0 + kB);
  EXPECT_EQ(k, "t:quota:r:alice:" + std::to_string(kT0 + kB));
  EXPECT_EQ(raw({"GET", k}).str, "1");
  const auto pttl = raw({"PTTL", k}).integer;
  EXPECT_GT(pttl, (auth::kQuotaBuckets + 1) * kB) << "expires while an estimate still reads it";
  EXPECT_LE(pttl, (auth::kQuotaBuckets + 2) * kB + 10000);
}

TEST_F(RedisQuota, ConcurrentIncrementsAreNeitherLostNorCountedTwice) {
  // Worker threads send in whatever order they reach the Redis thread, and replies interleave
  // with new increments: once all are answered the mirror must equal Redis exactly.
  auto a = counters(client(), 1h), b = counters(client(), 1h);
  constexpr int kThreads = 6, kEach = 400;
  std::vector<std::thread> threads;
  std::atomic<int> nullopts{0}, ready{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto& q = t % 2 == 0 ? a : b;
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();  // all at once
      for (int i = 0; i < kEach; ++i) {
        const std::int64_t amount = i % 5 == 4 ? -1 : 2;  // take-backs too
        if (!q->incr("t:bob", kT0, amount)) ++nullopts;
      }
    });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(settled({a, b}));
  EXPECT_EQ(nullopts.load(), 0);
  const std::int64_t expected = kThreads * (kEach / 5) * (4 * 2 - 1);
  EXPECT_EQ(raw({"GET", "t:quota:t:bob:" + std::to_string(kT0)}).str, std::to_string(expected));
  // Each mirror holds the total its replica's last reply carried: the replica whose last
  // increment Redis executed last holds exactly the final total.
  const auto ma = a->incr("t:bob", kT0, 0), mb = b->incr("t:bob", kT0, 0);
  ASSERT_TRUE(ma && mb);
  EXPECT_TRUE(*ma == expected || *mb == expected) << *ma << " " << *mb << " vs " << expected;
  // Refreshed, both mirrors are exactly Redis's total: nothing of their own is left over.
  now += 3'600'001;
  a->incr("t:bob", kT0, 0);
  b->incr("t:bob", kT0, 0);
  ASSERT_TRUE(settled({a, b}));
  EXPECT_EQ(a->incr("t:bob", kT0, 0), expected);
  EXPECT_EQ(b->incr("t:bob", kT0, 0), expected);
  EXPECT_EQ(a->stats().failed + b->stats().failed, 0u);
}

TEST_F(RedisQuota, RedisDownAnswersNulloptThenCountsAgain) {
  auto c = client();
  auto a = counters(c);
  EXPECT_EQ(a->incr("r:k", kT0, 1), 1);
  ASSERT_TRUE(settled({a}));
  server->stop();
  ASSERT_TRUE(poll_until([&] { return !c->up(); }, 5s));
  EXPECT_EQ(a->incr("r:k", kT0, 1), std::nullopt);
  EXPECT_EQ(a->incr("r:k", kT0, 0), std::nullopt);
  EXPECT_GE(a->stats().unanswered, 2u);
  server->start();  // empty: nothing persisted
  ASSERT_TRUE(poll_until([&] { return c->up(); }, 10s));
  // The mirror still says 1 until Redis answers; then it follows Redis (restarted empty).
  EXPECT_EQ(a->incr("r:k", kT0, 1), 2);
  ASSERT_TRUE(settled({a}));
  EXPECT_EQ(a->incr("r:k", kT0, 0), 1);
  EXPECT_EQ(raw({"GET", "t:quota:r:k:" + std::to_string(kT0)}).str, "1");
}

TEST_F(RedisQuota, SlowRedisNeverBlocksIncrAndCountsAsAwayAfterMaxLag) {
  auto c = client();
  auto a = counters(c);
  EXPECT_EQ(a->incr("r:k", kT0, 1), 1);
  ASSERT_TRUE(settled({a}));
  // A probe on another connection is answered only when the pause ends: every incr() below
  // must return before it is (order of events, no timing threshold).
  auto probe_client = client();
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "3000"}).str, "OK");
  std::atomic<bool> probe_done{false};
  probe_client->fire({"PING"}, [&](const state::RedisReply&) { probe_done = true; });
  ASSERT_TRUE(poll_until([&] { return probe_client->counters().inflight == 1; }, 2s));
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a->incr("r:k", kT0, 1), 2 + i);
  EXPECT_EQ(a->stats().inflight, 50);
  now += 1001;  // max_lag (1 s) without an answer: away
  EXPECT_EQ(a->incr("r:k", kT0, 1), std::nullopt);
  EXPECT_EQ(a->incr("r:k", kT0, 0), std::nullopt);
  EXPECT_FALSE(probe_done.load()) << "an incr() waited for the paused server";
  EXPECT_TRUE(c->up()) << "slow, not down";
  // The pause ends: the replies come, the mirror agrees with Redis, and incr() answers again.
  ASSERT_TRUE(poll_until([&] { return probe_done.load(); }, 10s));
  ASSERT_TRUE(settled({a}));
  EXPECT_EQ(a->incr("r:k", kT0, 0), 51);
  EXPECT_EQ(raw({"GET", "t:quota:r:k:" + std::to_string(kT0)}).str, "51");
  EXPECT_EQ(a->stats().failed, 0u);
}

TEST_F(RedisQuota, OnlyTheNewestBucketsAreMirrored) {
  auto a = counters(client());
  a->incr("r:k", kT0, 5);
  // Every bucket an estimate reads (kQuotaBuckets + 1) is kept, and one more.
  for (int i = 1; i <= auth::kQuotaBuckets + 1; ++i) a->incr("r:k", kT0 + i * kB, 1);
  ASSERT_TRUE(settled({a}));
  EXPECT_EQ(a->incr("r:k", kT0, 0), 5);
  a->incr("r:k", kT0 + (auth::kQuotaBuckets + 2) * kB, 1);  // the first bucket leaves the mirror
  ASSERT_TRUE(settled({a}));
  EXPECT_EQ(a->incr("r:k", kT0, 0), 0) << "a bucket older than those kept is expired";
  EXPECT_EQ(a->incr("r:k", kT0 + kB, 0), 1);
  EXPECT_EQ(a->stats().inflight, 0) << "nothing sent for an expired bucket";
}

// Another replica adds to a bucket only while it is current: a past bucket's mirror is refreshed
// every `past_refresh` (1 s), the current one's every `refresh` (100 ms).
TEST_F(RedisQuota, PastBucketsAreRefreshedLessOften) {
  auto a = counters(client());
  a->incr("r:k", kT0, 1);
  a->incr("r:k", kT0 + kB, 1);  // kT0 is past now
  ASSERT_TRUE(settled({a}));
  const auto before = a->stats().refreshes;
  now += 200;
  a->incr("r:k", kT0 + kB, 0);
  a->incr("r:k", kT0, 0);
  ASSERT_TRUE(settled({a}));
  EXPECT_EQ(a->stats().refreshes, before + 1) << "only the current bucket, after 200 ms";
  now += 1000;
  a->incr("r:k", kT0, 0);
  ASSERT_TRUE(settled({a}));
  EXPECT_EQ(a->stats().refreshes, before + 2) << "the past bucket, after 1.2 s";
}

// Issue 15's figure: one key limited to 600 requests/minute, driven at 2,000/minute spread at
// random over three replicas for 3 simulated minutes: admitted over the last 2 within 5% of 600.
// `ack_every`: the replicas' replies are waited for every that many requests (1: each request
// sees every earlier one; 10: 300 ms of simulated lag at 2,000/minute).
void drive_three_replicas(RedisQuota& t, std::vector<std::shared_ptr<RedisQuotaCounters>> qs,
                          std::atomic<std::int64_t>& now, int ack_every) {
  std::vector<std::unique_ptr<auth::QuotaLimiter>> limiters;
  for (auto& q : qs) limiters.push_back(std::make_unique<auth::QuotaLimiter>(q, 1.0 / 3));
  auth::KeyEntry key;
  key.name = "alice";
  key.limits.requests_per_minute = 600;
  std::mt19937 rng(15);
  constexpr std::int64_t kStep = 30;  // 2,000 per minute
  std::int64_t admitted_last_two = 0, admitted = 0;
  bool always_shared = true;
  for (std::int64_t i = 0; i < 3 * kW / kStep; ++i) {
    now = kT0 + 17 + i * kStep;  // not on a window boundary
    auto& l = *limiters[rng() % 3];
    const bool ok = l.admit(key, now).decision.ok();
    always_shared = always_shared && l.shared_ok();
    admitted += ok;
    if (ok && now >= kT0 + kW) ++admitted_last_two;
    if ((i + 1) % ack_every == 0) {
      ASSERT_TRUE(settled(qs)) << "replies did not come";
    }
  }
  EXPECT_TRUE(always_shared) << "a replica fell back to local counting";
  EXPECT_NEAR(static_cast<double>(admitted_last_two) / 2, 600, 30)
      << admitted_last_two << " admitted in the last 2 minutes, " << admitted << " in all";
}

TEST_F(RedisQuota, ThreeReplicasHoldTheLimitWithin5Percent) {
  drive_three_replicas(*this, {counters(client()), counters(client()), counters(client())}, now, 1);
}

TEST_F(RedisQuota, ThreeReplicasHoldTheLimitWithRepliesLagging300ms) {
  drive_three_replicas(*this, {counters(client()), counters(client()), counters(client())}, now,
                       10);
}

// The local share's count: a replica that starts before Redis answers is counted as soon as its
// connection comes up, not a beat period (5 s in the gateway) later. No beat() is called here
// after Redis is up: only the connection's coming up can announce the replicas.
TEST_F(RedisQuota, ReplicasAreCountedAsSoonAsTheirConnectionComesUp) {
  server->stop();
  auto c1 = client(false), c2 = client(false);
  state::ReplicaPresence a(c1, "presence:", "a");
  state::ReplicaPresence b(c2, "presence:", "b");
  a.beat(1'000);  // Redis down: nothing sent, the count stays 1
  b.beat(1'000);
  EXPECT_EQ(a.count(), 1);
  server->start();
  EXPECT_TRUE(poll_until([&] { return c1->up() && c2->up(); }, 10s));
  // Each announced itself when its connection came up: the set holds both within a moment, and
  // the one that announced last has counted both.
  EXPECT_TRUE(poll_until([&] { return raw({"ZCARD", "presence:replicas"}).integer == 2; }, 5s));
  EXPECT_TRUE(poll_until([&] { return std::max(a.count(), b.count()) == 2; }, 5s));
}

}  // namespace
}  // namespace llmux::state_test
