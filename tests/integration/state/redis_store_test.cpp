// SPDX-License-Identifier: Apache-2.0
// Shared state on a real redis-server (issue 15): the Redis client (pipelined commands from many
// threads, bounded waits, Redis down, slow and returning), the response-id table shared by two
// "replicas" (two clients, two stores, one redis-server), and the counters quotas and usage need.
// Each test starts its own redis-server on a free loopback port; skipped without redis-server.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "state/redis_client.hpp"
#include "state/redis_response_store.hpp"
#include "support/redis_server.hpp"
#include "support/test_util.hpp"

namespace llmux::state_test {
namespace {

using state::RedisOptions;
using state::RedisReply;
using state::RedisResponseStore;
using state::RedisUrl;

namespace net = boost::asio;
using namespace std::chrono_literals;
using llmux::test::poll_until;
using llmux::test::RedisServer;
using Clock = std::chrono::steady_clock;
using Kind = RedisReply::Kind;

// Runs a coroutine to completion on an io_context of its own (another thread's loop, as a
// gateway worker's would be) and returns its result.
// The loop outlives the clients (as a worker's does): a completion posted to it by the Redis
// thread never meets a loop being destroyed.
template <typename T>
T await(net::awaitable<T> a) {
  thread_local net::io_context io;
  io.restart();
  auto f = net::co_spawn(io, std::move(a), net::use_future);
  io.run();
  return f.get();
}

std::chrono::milliseconds since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
}

class RedisFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = RedisServer::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    server = std::make_unique<RedisServer>();
  }

  // A client of the test's server (database `db`); connected unless `wait_up` is false.
  std::shared_ptr<state::RedisClient> client(int db = 0, bool wait_up = true,
                                             std::size_t max_inflight = 100000) {
    RedisOptions o;
    o.max_inflight = max_inflight;
    o.url = *RedisUrl::parse(server->url(db));
    o.backoff_min = 50ms;
    o.backoff_max = 400ms;
    auto c = std::make_shared<state::RedisClient>(o);
    if (wait_up) {
      EXPECT_TRUE(poll_until([&] { return c->up(); }, 5s)) << "never connected";
    }
    return c;
  }

  RedisReply raw(const std::vector<std::string>& args, int db = 0) {
    return server->command(args, db);
  }
  bool key_exists(const std::string& key) { return raw({"EXISTS", key}).integer == 1; }

  std::unique_ptr<RedisServer> server;
};

// The suites, named after what they test (the types are state::RedisClient, ...).
class RedisClient : public RedisFixture {};
class RedisStore : public RedisFixture {};
class RedisCounters : public RedisFixture {};

TEST_F(RedisClient, RepliesOfEveryKind) {
  auto c = client();
  EXPECT_EQ(await(c->command({"SET", "k", std::string("v\0w", 3)}, 1s)).str, "OK");
  auto got = await(c->command({"GET", "k"}, 1s));
  EXPECT_EQ(got.kind, Kind::string);
  EXPECT_EQ(got.str, std::string("v\0w", 3));  // binary-safe both ways
  EXPECT_EQ(await(c->command({"GET", "missing"}, 1s)).kind, Kind::nil);
  auto n = await(c->command({"INCRBY", "n", "41"}, 1s));
  EXPECT_EQ(n.kind, Kind::integer);
  EXPECT_EQ(n.integer, 41);
  auto arr = await(c->command({"MGET", "n", "missing"}, 1s));
  ASSERT_EQ(arr.kind, Kind::array);
  ASSERT_EQ(arr.elements.size(), 2u);
  EXPECT_EQ(arr.elements[0].str, "41");
  EXPECT_EQ(arr.elements[1].kind, Kind::nil);
  auto err = await(c->command({"INCR", "k"}, 1s));  // not an integer
  EXPECT_EQ(err.kind, Kind::error);
  EXPECT_FALSE(err.ok());
  EXPECT_FALSE(err.failed());
  EXPECT_GE(c->counters().errors, 1u);
}

TEST_F(RedisClient, PipelinesCommandsFromManyThreads) {
  constexpr int kThreads = 4, kEach = 300;
  // Each thread its own loop, as gateway workers have; the loops outlive the client.
  std::vector<std::unique_ptr<net::io_context>> loops;
  for (int t = 0; t < kThreads; ++t) loops.push_back(std::make_unique<net::io_context>());
  auto c = client();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      net::io_context& io = *loops[t];
      for (int i = 0; i < kEach; ++i)
        net::co_spawn(
            io,
            [&]() -> net::awaitable<void> {
              std::vector<std::string> args{"INCR", "hits"};  // named: GCC 12 and co_await
              auto r = co_await c->command(std::move(args), 5s);
              if (r.kind == Kind::integer) ++ok;
            },
            net::detached);
      io.run();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kEach);
  EXPECT_EQ(raw({"GET", "hits"}).str, std::to_string(kThreads * kEach));
  // fire(): not waited for, but done in order on the one connection.
  for (int i = 0; i < 100; ++i) c->fire({"RPUSH", "list", std::to_string(i)});
  EXPECT_TRUE(poll_until([&] { return raw({"LLEN", "list"}).integer == 100; }, 5s));
  EXPECT_EQ(raw({"LINDEX", "list", "99"}).str, "99");
}

TEST_F(RedisClient, SelectsTheDatabaseOfItsUrl) {
  auto c = client(3);
  EXPECT_EQ(await(c->command({"SET", "where", "three"}, 1s)).str, "OK");
  EXPECT_EQ(raw({"GET", "where"}, 3).str, "three");
  EXPECT_EQ(raw({"GET", "where"}, 0).kind, Kind::nil);
}

TEST_F(RedisClient, SlowRedisTimesOutWithoutDroppingTheConnection) {
  auto c = client();
  RedisResponseStore store(c, {.prefix = "slow:", .lookup_timeout = 50ms});
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "1000"}).str, "OK");  // every client's commands wait 1 s
  auto t0 = Clock::now();
  auto r = await(c->command({"PING"}, 50ms));
  EXPECT_TRUE(r.failed()) << r.str;
  EXPECT_LT(since(t0), 500ms) << "a 50 ms command waited for the paused server";
  std::string id = "resp_slow";
  t0 = Clock::now();
  EXPECT_EQ(await(store.owner(id)), std::nullopt);
  EXPECT_LT(since(t0), 500ms) << "owner() waited for the paused server";
  EXPECT_GE(c->counters().timeouts, 2u);
  EXPECT_TRUE(c->up()) << "a slow Redis is not a dead one";
  // The pause ends: the late replies are dropped safely, and the same connection works.
  EXPECT_TRUE(poll_until(
      [&] {
        auto p = await(c->command({"PING"}, 300ms));
        return p.kind == Kind::status && p.str == "PONG";
      },
      5s));
  EXPECT_TRUE(c->up());
  EXPECT_EQ(c->counters().reconnects, 0u);
  EXPECT_EQ(c->counters().connect_failures, 0u);
  EXPECT_TRUE(poll_until([&] { return c->counters().inflight == 0; }, 3s))
      << "late replies not accounted for";
}

TEST_F(RedisClient, CommandsBeyondTheInFlightBoundFailAtOnce) {
  auto c = client(0, true, 2);
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "1000"}).str, "OK");
  c->fire({"PING"});
  c->fire({"PING"});
  ASSERT_TRUE(poll_until([&] { return c->counters().inflight == 2; }, 2s));
  auto t0 = Clock::now();
  auto r = await(c->command({"PING"}, 5s));
  EXPECT_TRUE(r.failed());
  EXPECT_LT(since(t0), 500ms) << "a command beyond the bound waited";
  EXPECT_EQ(c->counters().refused, 1u);
  // The paused ones are answered in the end; the bound frees up.
  EXPECT_TRUE(poll_until([&] { return c->counters().inflight == 0; }, 3s));
  EXPECT_EQ(await(c->command({"PING"}, 1s)).str, "PONG");
}

TEST_F(RedisClient, StopCompletesWaitingCommands) {
  auto c = client();
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "2000"}).str, "OK");
  net::io_context io;
  auto f = net::co_spawn(io, c->command({"PING"}, 10s), net::use_future);
  std::thread runner([&] { io.run(); });
  EXPECT_TRUE(poll_until([&] { return c->counters().inflight == 1; }, 2s));  // sent, waiting
  auto t0 = Clock::now();
  c->stop();
  runner.join();
  EXPECT_TRUE(f.get().failed());
  EXPECT_LT(since(t0), 1000ms) << "stop() waited for the paused server";
  EXPECT_FALSE(c->up());
  EXPECT_TRUE(await(c->command({"PING"}, 1s)).failed());  // after stop: at once
}

TEST_F(RedisClient, LastOwnerLettingGoOnTheRedisThreadIsSafe) {
  std::atomic<bool> called{false};
  {
    auto c = client();
    state::RedisClient* p = c.get();
    // The callback holds the last reference once `c` goes: the client ends on its own thread.
    p->fire({"PING"}, [keep = c, &called](const RedisReply&) { called = true; });
  }
  EXPECT_TRUE(poll_until([&] { return called.load(); }, 3s));
  auto clients = [&] {
    std::string list = raw({"CLIENT", "LIST"}).str;
    return std::count(list.begin(), list.end(), '\n');
  };
  EXPECT_TRUE(poll_until([&] { return clients() == 1; }, 3s))
      << "the connection stayed open: " << clients();
}

TEST_F(RedisClient, ConnectsWhenRedisStartsLater) {
  server->stop();
  auto c = client(0, false);
  auto t0 = Clock::now();
  auto r = await(c->command({"PING"}, 1s));
  EXPECT_TRUE(r.failed());
  EXPECT_LT(since(t0), 100ms) << "a command waited for a Redis that is down";
  EXPECT_FALSE(c->up());
  server->start();
  EXPECT_TRUE(poll_until([&] { return c->up(); }, 5s)) << "did not connect by itself";
  EXPECT_EQ(await(c->command({"PING"}, 1s)).str, "PONG");
  EXPECT_GE(c->counters().connect_failures, 1u);
}

TEST_F(RedisStore, LearnedOnOneReplicaIsFoundOnAnother) {
  auto a = client(), b = client();
  RedisResponseStore ra(a, {.prefix = "t:"}), rb(b, {.prefix = "t:"});
  ra.record_owner("resp_1", "server2");
  std::string id = "resp_1", unknown = "resp_none";
  EXPECT_TRUE(poll_until([&] { return await(rb.owner(id)) == "server2"; }, 3s));
  EXPECT_EQ(rb.size(), 1u) << "a hit from Redis is cached locally";
  EXPECT_EQ(await(rb.owner(unknown)), std::nullopt);
  EXPECT_EQ(rb.size(), 1u) << "a miss is not cached";
  EXPECT_EQ(raw({"GET", "t:resp:resp_1"}).str, "server2");
  ra.forget(id);
  EXPECT_TRUE(poll_until([&] { return !key_exists("t:resp:resp_1"); }, 3s));
  EXPECT_EQ(ra.size(), 0u);
  EXPECT_EQ(await(ra.owner(id)), std::nullopt);
}

TEST_F(RedisStore, EntriesCarryTheirTtl) {
  auto a = client();
  RedisResponseStore s(a, {.prefix = "ttl:", .ttl = 60s});
  s.record_owner("resp_t", "server1");
  ASSERT_TRUE(poll_until([&] { return key_exists("ttl:resp:resp_t"); }, 3s));
  auto pttl = raw({"PTTL", "ttl:resp:resp_t"});
  EXPECT_GT(pttl.integer, 0) << "no expiry on the key";
  EXPECT_LE(pttl.integer, 60000);
}

TEST_F(RedisStore, PrefixesKeepDeploymentsApart) {
  auto c = client();
  RedisResponseStore prod(c, {.prefix = "prod:"}), staging(c, {.prefix = "staging:"});
  prod.record_owner("resp_x", "server1");
  ASSERT_TRUE(poll_until([&] { return key_exists("prod:resp:resp_x"); }, 3s));
  std::string id = "resp_x";
  EXPECT_EQ(await(staging.owner(id)), std::nullopt);
  staging.record_owner("resp_x", "server9");
  ASSERT_TRUE(poll_until([&] { return key_exists("staging:resp:resp_x"); }, 3s));
  // Fresh stores (empty caches) read each its own.
  RedisResponseStore prod2(c, {.prefix = "prod:"}), staging2(c, {.prefix = "staging:"});
  EXPECT_EQ(await(prod2.owner(id)), "server1");
  EXPECT_EQ(await(staging2.owner(id)), "server9");
  EXPECT_FALSE(key_exists("resp:resp_x"));
}

TEST_F(RedisStore, DownThenBackWritesBackWhatWasLearned) {
  auto a = client(), b = client();
  RedisResponseStore ra(a, {.prefix = "p:"}), rb(b, {.prefix = "p:"});
  ra.record_owner("before", "server1");
  ASSERT_TRUE(poll_until([&] { return key_exists("p:resp:before"); }, 3s));

  server->stop();
  ASSERT_TRUE(poll_until([&] { return !a->up() && !b->up(); }, 5s)) << "up() stayed true";
  std::string before = "before";
  auto t0 = Clock::now();
  EXPECT_EQ(await(rb.owner(before)), std::nullopt);  // only Redis knew it
  EXPECT_LT(since(t0), 100ms) << "owner() waited for a Redis that is down";
  t0 = Clock::now();
  constexpr int kDuring = 200;
  for (int i = 0; i < kDuring; ++i) ra.record_owner("during_" + std::to_string(i), "server2");
  EXPECT_LT(since(t0), 200ms) << "record_owner() waited for a Redis that is down";
  std::string during0 = "during_0";
  EXPECT_EQ(await(ra.owner(during0)), "server2");  // the local table goes on
  EXPECT_TRUE(poll_until([&] { return ra.pending() == kDuring; }, 3s)) << ra.pending();

  server->start();  // empty: nothing was persisted
  ASSERT_TRUE(poll_until([&] { return a->up() && b->up(); }, 10s)) << "no reconnect";
  EXPECT_GE(a->counters().reconnects, 1u);
  // Affinity learned meanwhile is written back: the other replica finds it.
  std::string first = "during_0", last = "during_" + std::to_string(kDuring - 1);
  EXPECT_TRUE(poll_until(
      [&] { return await(rb.owner(first)) == "server2" && await(rb.owner(last)) == "server2"; },
      5s));
  EXPECT_TRUE(poll_until([&] { return ra.pending() == 0; }, 3s));
  EXPECT_GT(raw({"PTTL", "p:resp:" + last}).integer, 0);
  EXPECT_EQ(ra.pending_dropped(), 0u);
}

TEST_F(RedisStore, PendingWritesAreBounded) {
  auto a = client();
  RedisResponseStore s(a, {.prefix = "b:", .max_pending = 10});
  server->stop();
  ASSERT_TRUE(poll_until([&] { return !a->up(); }, 5s));
  for (int i = 0; i < 25; ++i) s.record_owner("r" + std::to_string(i), "server1");
  EXPECT_TRUE(poll_until([&] { return s.pending_dropped() == 15; }, 3s)) << s.pending_dropped();
  EXPECT_EQ(s.pending(), 10u);
  server->start();
  ASSERT_TRUE(poll_until([&] { return a->up(); }, 10s));
  // The newest ten are written back, the oldest were dropped.
  EXPECT_TRUE(poll_until([&] { return key_exists("b:resp:r24") && key_exists("b:resp:r15"); }, 5s));
  EXPECT_FALSE(key_exists("b:resp:r14"));
}

TEST_F(RedisCounters, WindowCountsAcrossReplicasAndExpires) {
  auto a = client(), b = client();
  state::RedisCounters ca(a, "q:"), cb(b, "q:");
  EXPECT_EQ(await(ca.incr_window("rpm:key1", 1, 1000ms)), 1);
  EXPECT_EQ(await(cb.incr_window("rpm:key1", 2, 1000ms)), 3);
  EXPECT_EQ(await(ca.incr_window("rpm:key1", 1, 1000ms)), 4);
  auto pttl = raw({"PTTL", "q:rpm:key1"}).integer;
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 1000);
  // The expiry is set once per window: a later increment does not push it back.
  ASSERT_TRUE(poll_until([&] { return raw({"PTTL", "q:rpm:key1"}).integer < 700; }, 2s));
  EXPECT_EQ(await(cb.incr_window("rpm:key1", 1, 1000ms)), 5);
  EXPECT_LT(raw({"PTTL", "q:rpm:key1"}).integer, 700) << "the window restarted";
  // The window ends: counting starts again.
  EXPECT_TRUE(poll_until([&] { return !key_exists("q:rpm:key1"); }, 3s));
  EXPECT_EQ(await(ca.incr_window("rpm:key1", 1, 1000ms)), 1);
}

TEST_F(RedisCounters, HashCountersAddUpAndExpire) {
  auto a = client(), b = client();
  state::RedisCounters ca(a, "u:"), cb(b, "u:");
  EXPECT_TRUE(ca.fire_hincrby("usage:2026120312", "key1|model|server1|prompt", 100, 60s));
  EXPECT_TRUE(cb.fire_hincrby("usage:2026120312", "key1|model|server1|prompt", 23, 60s));
  EXPECT_TRUE(poll_until(
      [&] {
        return raw({"HGET", "u:usage:2026120312", "key1|model|server1|prompt"}).str == "123";
      },
      3s));
  auto pttl = raw({"PTTL", "u:usage:2026120312"}).integer;
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 60000);
}

TEST_F(RedisCounters, RedisAwayMeansCountLocally) {
  auto a = client();
  state::RedisCounters ca(a, "q:", 50ms);
  server->stop();
  ASSERT_TRUE(poll_until([&] { return !a->up(); }, 5s));
  auto t0 = Clock::now();
  EXPECT_EQ(await(ca.incr_window("k", 1, 1000ms)), std::nullopt);
  EXPECT_FALSE(ca.fire_hincrby("h", "f", 1, 1000ms));
  EXPECT_LT(since(t0), 100ms);
  // Slow rather than down: bounded by the timeout.
  server->start();
  ASSERT_TRUE(poll_until([&] { return a->up(); }, 10s));
  ASSERT_EQ(raw({"CLIENT", "PAUSE", "1000"}).str, "OK");
  t0 = Clock::now();
  EXPECT_EQ(await(ca.incr_window("k", 1, 1000ms)), std::nullopt);
  EXPECT_LT(since(t0), 500ms);
}

}  // namespace
}  // namespace llmux::state_test
