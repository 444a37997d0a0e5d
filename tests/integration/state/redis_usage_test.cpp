// SPDX-License-Identifier: Apache-2.0
// The usage ledger shared by replicas through a real redis-server (issue 15): each "replica" is
// its own RedisClient and RedisUsageLedger. add() never waits; rows wait while Redis is away and
// are written back exactly once; query_shared() reads every replica's rows.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "auth/usage.hpp"
#include "state/redis_fixture.hpp"
#include "state/redis_scripts.hpp"
#include "state/redis_usage.hpp"

namespace llmux::state_test {
namespace {

using auth::MemoryUsageLedger;
using auth::TokenUsage;
using auth::UsageQuery;
using auth::UsageRow;
using state::RedisUsageLedger;
using state::RedisUsageOptions;
using test::poll_until;

constexpr std::int64_t kH0 = 1'764'756'000;  // an hour's start (Unix s)

class RedisUsage : public RedisFixture {
 protected:
  void SetUp() override {
    RedisFixture::SetUp();
    now = kH0 + 3 * 3600 + 5;  // Unix seconds for these tests
  }
  std::unique_ptr<RedisUsageLedger> ledger(std::shared_ptr<state::RedisClient> c) {
    return std::make_unique<RedisUsageLedger>(
        c,
        RedisUsageOptions{.prefix = "t:", .retention = std::chrono::hours(48), .now_s = clock()});
  }
  /// Adds to `l` and to the oracle (what every replica's adds sum to).
  void add(RedisUsageLedger& l, std::string_view key, std::string_view model, std::int64_t t,
           TokenUsage u) {
    l.add(key, model, "server1", t, u);
    oracle.add(key, model, "server1", t, u);
  }
  /// Every write of `ls` answered and applied, nothing waiting (bounded).
  static bool written(const std::vector<RedisUsageLedger*>& ls) {
    return poll_until(
        [&] {
          for (auto* l : ls) {
            const auto s = l->stats();
            if (s.inflight != 0 || s.pending_rows != 0 || s.unsure_writes != 0) return false;
          }
          return true;
        },
        10s, 1ms);
  }
  std::optional<std::vector<UsageRow>> shared(RedisUsageLedger& l, UsageQuery q = {}) {
    return await(l.query_shared(q));
  }
  MemoryUsageLedger oracle{std::chrono::hours(48)};
};

TEST_F(RedisUsage, EveryReplicasRowsAcrossHoursAndKeys) {
  auto a = ledger(client()), b = ledger(client());
  // Names with the field separator and the escape character in them stay apart.
  const std::string odd_model = "m%1F\x1fx";
  add(*a, "alice", "llama", kH0 + 10, {100, 40, 7});
  add(*b, "alice", "llama", kH0 + 20, {50, 0, 3});
  add(*b, "bob", odd_model, kH0 + 3600 + 1, {9, 1, 2});
  add(*a, "alice", "llama", kH0 + 2 * 3600, {1, 0, 1});
  ASSERT_TRUE(written({a.get(), b.get()}));
  auto all = shared(*a);
  ASSERT_TRUE(all);
  EXPECT_EQ(*all, oracle.query({}));
  EXPECT_EQ(all->size(), 3u);
  EXPECT_EQ(shared(*b), all) << "both replicas see the same rows";
  // By key, and by time: hours overlapping [from, to).
  UsageQuery bob{.key = "bob"};
  EXPECT_EQ(shared(*a, bob), oracle.query(bob));
  ASSERT_EQ(oracle.query(bob).size(), 1u);
  EXPECT_EQ(oracle.query(bob)[0].model, odd_model);
  UsageQuery second_hour{.key = "", .from = kH0 + 3600 + 1800, .to = kH0 + 2 * 3600};
  EXPECT_EQ(shared(*b, second_hour), oracle.query(second_hour));
  EXPECT_EQ(oracle.query(second_hour).size(), 1u);
  // The local answer: what this replica added, only.
  ASSERT_EQ(a->query({}).size(), 2u);
  EXPECT_EQ(a->query({})[0].requests, 1);
  EXPECT_EQ(a->query({})[0].prompt_tokens, 100);
}

TEST_F(RedisUsage, AddsFromManyThreadsAddUpExactly) {
  auto a = ledger(client()), b = ledger(client());
  constexpr int kThreads = 4, kEach = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto& l = t % 2 == 0 ? *a : *b;
      for (int i = 0; i < kEach; ++i)
        add(l, i % 3 == 0 ? "alice" : "bob", "llama", kH0 + (i % 2) * 3600, {i, i / 2, 1});
    });
  for (auto& t : threads) t.join();
  ASSERT_TRUE(written({a.get(), b.get()}));
  EXPECT_EQ(shared(*a), oracle.query({}));
  EXPECT_EQ(a->stats().written + b->stats().written, std::uint64_t{kThreads * kEach});
}

TEST_F(RedisUsage, HashesExpireAfterTheRetention) {
  auto a = ledger(client());
  add(*a, "alice", "llama", kH0 + 3 * 3600, {1, 0, 1});
  ASSERT_TRUE(written({a.get()}));
  // Kept 48 hours past the end of its hour; `now` is 5 s into it.
  const auto pttl = raw({"PTTL", a->hash_key(kH0 + 3 * 3600)}).integer;
  EXPECT_GT(pttl, (48 * 3600 + 3600 - 5 - 60) * 1000LL);
  EXPECT_LE(pttl, (48 * 3600 + 3600 - 5) * 1000LL);
  EXPECT_EQ(raw({"HGET", "t:usage:" + std::to_string(kH0 + 3 * 3600),
                 RedisUsageLedger::field("alice", "llama", "server1", "prompt")})
                .str,
            "1");
  // Hours with nothing in them: no rows.
  EXPECT_EQ(shared(*a, {.key = "", .from = kH0 - 100 * 3600, .to = kH0})->size(), 0u);
}

TEST_F(RedisUsage, DownThenBackWritesBackExactlyOnce) {
  auto ca = client(), cb = client();
  auto a = ledger(ca), b = ledger(cb);
  server->stop();
  ASSERT_TRUE(poll_until([&] { return !ca->up() && !cb->up(); }, 5s));
  for (int i = 0; i < 50; ++i)
    add(*a, "alice", i % 2 ? "llama" : "qwen", kH0 + 3 * 3600, {10, 1, 2});
  add(*b, "bob", "llama", kH0 + 2 * 3600, {5, 0, 5});
  EXPECT_EQ(a->stats().pending_rows, 2u) << "rows are summed while they wait";
  EXPECT_EQ(b->stats().pending_rows, 1u);
  EXPECT_EQ(shared(*a), std::nullopt) << "no shared answer without Redis";
  EXPECT_EQ(a->query({.key = "alice"}), oracle.query({.key = "alice"})) << "the local answer";
  server->start();  // empty: nothing persisted
  ASSERT_TRUE(poll_until([&] { return ca->up() && cb->up(); }, 10s));
  ASSERT_TRUE(written({a.get(), b.get()}));
  add(*b, "bob", "llama", kH0 + 3 * 3600, {1, 0, 1});  // and new rows go on
  ASSERT_TRUE(written({a.get(), b.get()}));
  EXPECT_EQ(shared(*b), oracle.query({}));
  EXPECT_EQ(a->stats().dropped_rows, 0u);
}

TEST_F(RedisUsage, BackEmptyAfterWritingBeforeWritesBackWithoutAnotherAdd) {
  // Ledgers that have written before: Redis comes back without their sequence keys, and refuses
  // their next sequence as a gap. The rows go out at once under a new one, not at the next add().
  auto ca = client(), cb = client();
  auto a = ledger(ca), b = ledger(cb);
  add(*a, "before", "llama", kH0 + 3 * 3600, {1, 0, 0});
  add(*b, "before", "llama", kH0 + 3 * 3600, {1, 0, 0});
  ASSERT_TRUE(written({a.get(), b.get()}));
  server->stop();
  ASSERT_TRUE(poll_until([&] { return !ca->up() && !cb->up(); }, 5s));
  add(*b, "bob", "llama", kH0 + 3 * 3600, {2, 0, 1});  // waits for Redis
  server->start();                                     // empty: nothing persisted
  ASSERT_TRUE(poll_until([&] { return ca->up() && cb->up(); }, 10s));
  // b's row, written back as Redis came up; a's, written as it is added.
  add(*a, "alice", "llama", kH0 + 3 * 3600, {3, 0, 1});
  EXPECT_TRUE(written({a.get(), b.get()})) << "rows wait for another add()";
  // Each read by the other ledger (a ledger's answer includes its own rows still waiting).
  for (auto [reader, key] : {std::pair{b.get(), "alice"}, std::pair{a.get(), "bob"}}) {
    const auto rows = shared(*reader, {.key = key});
    ASSERT_TRUE(rows.has_value());
    EXPECT_EQ(*rows, oracle.query({.key = key})) << key;
  }
}

TEST_F(RedisUsage, WritesCutOffWithTheConnectionAreResentOnce) {
  auto c = client();
  auto a = ledger(c);
  add(*a, "alice", "llama", kH0 + 3 * 3600, {1, 0, 0});
  ASSERT_TRUE(written({a.get()}));
  // Writes held by a paused server, then the connection killed under them: their replies are
  // lost; they are resent under their own sequence when the client reconnects.
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "3000", "WRITE"}).str, "OK");
  for (int i = 0; i < 20; ++i) add(*a, "alice", "llama", kH0 + 3 * 3600, {1, 0, 0});
  ASSERT_TRUE(poll_until([&] { return c->counters().inflight == 20; }, 2s));
  EXPECT_GE(raw({"CLIENT", "KILL", "TYPE", "normal"}).integer, 1);
  ASSERT_TRUE(poll_until([&] { return a->stats().unsure_writes == 20 || c->up(); }, 5s));
  ASSERT_EQ(raw({"CLIENT", "UNPAUSE"}).str, "OK");
  ASSERT_TRUE(written({a.get()}));
  EXPECT_EQ(a->stats().resent, 20u) << "not resent under their own sequence";
  EXPECT_EQ(shared(*a), oracle.query({}));
  EXPECT_EQ(shared(*a)->at(0).requests, 21);
}

TEST_F(RedisUsage, WritesRefusedWhileUpAreWrittenBackByTheNextAdd) {
  auto c = client(true, 4);  // at most 4 commands in flight
  auto a = ledger(c);
  // Paused until the test has seen the refusals (the 10 s are a ceiling, not a timing: a loaded
  // machine that issues the adds slowly must not see the pause end under them).
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "10000", "WRITE"}).str, "OK");
  for (int i = 0; i < 6; ++i) add(*a, "alice", "llama", kH0 + 3 * 3600, {2, 0, 1});
  // Four wait for the server, the other two are refused at once: not applied, to be resent.
  // (On a loaded machine a refusal's callback may come before the last add, which then flushes
  // the refused write again, refused again: at least two, then.)
  EXPECT_TRUE(poll_until([&] { return c->counters().refused >= 2; }, 10s));
  ASSERT_EQ(raw({"CLIENT", "UNPAUSE"}).str, "OK");
  ASSERT_TRUE(poll_until([&] { return a->stats().inflight == 0; }, 10s));
  EXPECT_GT(a->stats().unsure_writes, 0u);
  add(*a, "alice", "llama", kH0 + 3 * 3600, {2, 0, 1});  // Redis answers again: written back
  ASSERT_TRUE(written({a.get()}));
  EXPECT_EQ(shared(*a), oracle.query({}));
  EXPECT_EQ(shared(*a)->at(0).requests, 7);
}

TEST_F(RedisUsage, SequencedWritesApplyOnceAndNeverPastAGap) {
  // The script's contract, which the resends rely on.
  auto eval = [&](const std::string& seq) {
    return raw({"EVAL", state::scripts::kHincrSeq, "2", "h", "s", seq, "60000", "60000", "f", "5"})
        .integer;
  };
  EXPECT_EQ(eval("1"), 1);
  EXPECT_EQ(eval("1"), 2) << "a resend of an applied write applied again";
  EXPECT_EQ(eval("3"), 0) << "applied past a gap";
  EXPECT_EQ(eval("2"), 1);
  EXPECT_EQ(raw({"HGET", "h", "f"}).str, "10");
  EXPECT_GT(raw({"PTTL", "s"}).integer, 0);
}

TEST_F(RedisUsage, SlowRedisNeverBlocksAdd) {
  auto c = client(), probe_client = client();
  auto a = ledger(c);
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "3000"}).str, "OK");
  std::atomic<bool> probe_done{false};
  probe_client->fire({"PING"}, [&](const state::RedisReply&) { probe_done = true; });
  ASSERT_TRUE(poll_until([&] { return probe_client->counters().inflight == 1; }, 2s));
  for (int i = 0; i < 100; ++i) add(*a, "alice", "llama", kH0 + 3 * 3600, {3, 1, 4});
  EXPECT_FALSE(probe_done.load()) << "an add() waited for the paused server";
  EXPECT_EQ(a->query({}), oracle.query({}));
  ASSERT_TRUE(poll_until([&] { return probe_done.load(); }, 10s));
  ASSERT_TRUE(written({a.get()}));
  EXPECT_EQ(shared(*a), oracle.query({}));
}

}  // namespace
}  // namespace llmux::state_test
