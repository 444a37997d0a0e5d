// SPDX-License-Identifier: Apache-2.0
// consistent_hash: a session key keeps its backend; when a backend leaves only its keys move;
// the ring is built per membership, not per request; bounded load caps any backend at
// load_factor × the mean; no key falls back to the least loaded. Plus a statistical simulation
// of many multi-turn sessions.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "policy/consistent_hash.hpp"
#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

std::unique_ptr<Policy> make_consistent_hash(const Options& o = {}) {
  std::string err;
  auto p = make_policy("consistent_hash", o, &err);
  EXPECT_TRUE(p) << err;
  return p;
}

/// A request whose X-Session-ID header is `key`.
struct Keyed {
  std::string key;
  std::string_view operator()(std::string_view name) const {
    return name == "x-session-id" || name == "X-Session-ID" ? std::string_view(key)
                                                            : std::string_view();
  }
};

Backend* pick_key(Policy& p, Pool& pool, const std::string& key) {
  Keyed h{key};
  auto ctx = request();
  ctx.header = h;
  return p.pick(ctx, pool.all(), TriedSet{});
}

TEST(ConsistentHash, TheSameKeyTheSameBackendAndKeysSpread) {
  Pool pool({1, 1, 1});
  auto p = make_consistent_hash();
  std::map<std::string, int> count;
  for (int i = 0; i < 3000; ++i) {
    const std::string key = "session-" + std::to_string(i);
    Backend* b = pick_key(*p, pool, key);
    ASSERT_TRUE(b);
    EXPECT_EQ(pick_key(*p, pool, key), b);
    ++count[b->name];
  }
  for (const auto& [name, n] : count) EXPECT_NEAR(n, 1000, 200) << name;
}

TEST(ConsistentHash, WhenABackendLeavesOnlyItsKeysMove) {
  Pool pool({1, 1, 1});
  auto p = make_consistent_hash();
  auto* ch = dynamic_cast<ConsistentHash*>(p.get());
  ASSERT_TRUE(ch);
  std::vector<Backend*> before;
  for (int i = 0; i < 3000; ++i) before.push_back(pick_key(*p, pool, "k" + std::to_string(i)));
  EXPECT_EQ(ch->builds(), 1u) << "built once for 3000 requests";
  pool[1].checks_ok = false;  // b1 fails its checks
  int moved = 0, to0 = 0;
  for (int i = 0; i < 3000; ++i) {
    Backend* now = pick_key(*p, pool, "k" + std::to_string(i));
    ASSERT_NE(now, &pool[1]);
    if (before[i] != &pool[1]) {
      EXPECT_EQ(now, before[i]) << "key " << i << " moved though its backend stayed";
    } else {
      ++moved;
      to0 += now == &pool[0];
    }
  }
  EXPECT_EQ(ch->builds(), 2u) << "rebuilt once when b1 left";
  EXPECT_GT(moved, 700);
  EXPECT_NEAR(static_cast<double>(to0) / moved, 0.5, 0.15) << "b1's keys spread over the rest";
  pool[1].checks_ok = true;  // back: every key where it was
  for (int i = 0; i < 3000; ++i) EXPECT_EQ(pick_key(*p, pool, "k" + std::to_string(i)), before[i]);
  EXPECT_EQ(ch->builds(), 3u);
}

TEST(ConsistentHash, BoundedLoadCapsABackendAtTheFactorOfTheMean) {
  for (const char* factor : {"1.25", "0"}) {
    Pool pool({1, 1, 1});
    auto p = make_consistent_hash({{"load_factor", factor}});
    std::vector<upstream::Slot> held;
    Keyed h{"one-hot-session"};
    for (int i = 0; i < 30; ++i) {
      auto ctx = request();
      ctx.header = h;
      TriedSet tried;
      held.push_back(pick_and_acquire(*p, ctx, pool.all(), tried));
      ASSERT_TRUE(held.back());
    }
    int max = 0;
    for (std::size_t i = 0; i < pool.size(); ++i) max = std::max(max, pool[i].inflight.load());
    if (std::string(factor) == "0")
      EXPECT_EQ(max, 30) << "unbounded: one hot key, one backend";
    else
      EXPECT_LE(max, 13) << "ceil(1.25 × 30 / 3)";
  }
}

TEST(ConsistentHash, KeysFromBodyFieldsAndNoKeyGoesToTheLeastLoaded) {
  Pool pool({1, 1});
  auto by_cache = make_consistent_hash({{"key", "prompt_cache_key"}});
  auto ctx = request();
  ctx.prompt_cache_key = "conv-7";
  Backend* b = by_cache->pick(ctx, pool.all(), TriedSet{});
  for (int i = 0; i < 10; ++i) EXPECT_EQ(by_cache->pick(ctx, pool.all(), TriedSet{}), b);
  // auto: the header first, then prompt_cache_key, then user.
  EXPECT_EQ(session_key(ctx, "auto"), "conv-7");
  ctx.user = "alice";
  EXPECT_EQ(session_key(ctx, "user"), "alice");
  Keyed h{"hdr"};
  ctx.header = h;
  EXPECT_EQ(session_key(ctx, "auto"), "hdr");
  EXPECT_EQ(session_key(ctx, "header:X-Session-ID"), "hdr");
  // No key: least_inflight.
  auto p = make_consistent_hash();
  pool[0].inflight = 3;
  auto none = request();
  EXPECT_EQ(p->pick(none, pool.all(), TriedSet{}), &pool[1]);
  pool[0].inflight = 0;
}

TEST(ConsistentHash, OptionsAreChecked) {
  std::string err;
  EXPECT_FALSE(make_policy("consistent_hash", {{"load_factor", "0.5"}}, &err));
  EXPECT_NE(err.find("load_factor"), std::string::npos) << err;
  EXPECT_FALSE(make_policy("consistent_hash", {{"key", "cookie"}}, &err));
  EXPECT_NE(err.find("header:NAME"), std::string::npos) << err;
  EXPECT_FALSE(make_policy("consistent_hash", {{"replica", "3"}}, &err));
  EXPECT_NE(err.find("replica"), std::string::npos) << err;
  EXPECT_TRUE(make_policy("consistent_hash", {{"key", "header:X-User"}, {"replicas", "50"}}));
}

// Statistical simulation: 300 sessions of a few turns each, arriving at random, each turn held
// for a while (24 in flight at most). Sessions keep their backend (their prefix cache) unless the
// load bound moves a turn; no backend gets much more than its share.
TEST(ConsistentHash, SimulatedSessionsStickAndLoadStaysBounded) {
  Pool pool({1, 1, 1});
  auto p = make_consistent_hash();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick_session(0, 299);
  std::map<int, std::map<std::string, int>> turns;  // session -> backend -> turns
  std::deque<upstream::Slot> held;
  std::map<std::string, int> total;
  int max_inflight = 0;
  for (int i = 0; i < 6000; ++i) {
    const int s = pick_session(rng);
    Keyed h{"s" + std::to_string(s)};
    auto ctx = request();
    ctx.header = h;
    TriedSet tried;
    upstream::Slot slot = pick_and_acquire(*p, ctx, pool.all(), tried);
    ASSERT_TRUE(slot);
    ++turns[s][slot.backend()->name];
    ++total[slot.backend()->name];
    held.push_back(std::move(slot));
    for (std::size_t b = 0; b < pool.size(); ++b)
      max_inflight = std::max(max_inflight, pool[b].inflight.load());
    if (held.size() > 24) held.erase(held.begin() + std::uniform_int_distribution<int>(0, 23)(rng));
  }
  int sticky = 0, all = 0;
  for (const auto& [s, by_backend] : turns) {
    int most = 0, n = 0;
    for (const auto& [b, k] : by_backend) {
      most = std::max(most, k);
      n += k;
    }
    sticky += most;
    all += n;
  }
  EXPECT_GT(static_cast<double>(sticky) / all, 0.9) << "turns on their session's backend";
  EXPECT_LE(max_inflight, 13) << "ceil(1.25 × 25 / 3)";
  for (const auto& [name, n] : total) EXPECT_LT(n, 6000 * 0.45) << name;
}

}  // namespace
}  // namespace llmux::policy
