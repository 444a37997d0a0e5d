// SPDX-License-Identifier: Apache-2.0
// prefix_aware: a prompt that shares a long prefix with one sent before goes where that prefix
// is cached; a prompt_cache_key held by a backend wins; a new prefix goes to the least loaded;
// the load guard overrides the cache when the fleet is out of balance. Plus a statistical
// simulation against backends with LRU prefix caches smaller than the working set.
#include <gtest/gtest.h>

#include <list>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "policy/prefix_aware.hpp"
#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

/// prefix_aware with options `o`, built for `pool`'s backends.
std::unique_ptr<Policy> make_prefix_aware(const Pool& pool, const Options& o = {}) {
  std::string err;
  auto p = make_policy("prefix_aware", o, &err);
  EXPECT_TRUE(p) << err;
  if (p) p->build(pool.all(), nullptr);
  return p;
}

std::string system_prompt(int i) {
  std::string s = "system " + std::to_string(i) + ":";
  std::mt19937 rng(static_cast<std::uint32_t>(i));
  while (s.size() < 2000) s += " w" + std::to_string(rng() % 1000);
  return s;
}

Backend* send(Policy& p, Pool& pool, const std::string& prompt, std::string_view key = {}) {
  auto ctx = request();
  ctx.prompt = prompt;
  ctx.prompt_cache_key = key;
  return p.pick(ctx, pool.all(), TriedSet{});
}

TEST(PrefixAware, ASharedPrefixGoesWhereItWasSent) {
  Pool pool({1, 1});
  auto p = make_prefix_aware(pool);
  ASSERT_TRUE(p->needs_prompt());
  Backend* first = send(*p, pool, system_prompt(1) + " question one");
  ASSERT_TRUE(first);
  first->inflight = 2;  // busier, but within the guard: the cache wins
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(send(*p, pool, system_prompt(1) + " another question " + std::to_string(i)), first);
  // A different system prompt starts on the least loaded backend.
  Backend* other = send(*p, pool, system_prompt(2) + " question");
  EXPECT_NE(other, first);
  const auto& counts = dynamic_cast<PrefixAware&>(*p).counts();
  EXPECT_EQ(counts.by_prefix.load(), 5u);
  EXPECT_EQ(counts.by_load.load(), 2u);
  first->inflight = 0;
}

TEST(PrefixAware, APromptCacheKeyHeldByABackendWins) {
  Pool pool({1, 1});
  auto p = make_prefix_aware(pool);
  Backend* b = send(*p, pool, "short turn one", "conv-1");
  b->inflight = 1;
  // A different (short, unmatched) prompt with the same key: the same backend.
  EXPECT_EQ(send(*p, pool, "completely different text", "conv-1"), b);
  EXPECT_NE(send(*p, pool, "completely different text", "conv-2"), b) << "a new key: least loaded";
  b->inflight = 0;
}

TEST(PrefixAware, TheLoadGuardBeatsTheCacheWhenTheFleetIsOutOfBalance) {
  Pool pool({1, 1});
  auto p = make_prefix_aware(pool, {{"balance_abs", "8"}, {"balance_rel", "1.5"}});
  Backend* home = send(*p, pool, system_prompt(3) + " q");
  Backend* away = home == &pool[0] ? &pool[1] : &pool[0];
  away->inflight = 5;  // a second prefix starts on `home` too (`away` is over four busier)
  ASSERT_EQ(send(*p, pool, system_prompt(5) + " q"), home);
  home->inflight = 8;
  away->inflight = 0;
  EXPECT_EQ(send(*p, pool, system_prompt(3) + " q2"), home) << "8 is not above balance_abs";
  home->inflight = 9;
  EXPECT_EQ(send(*p, pool, system_prompt(3) + " q3"), away) << "9 > 8 and > 1.5 × 0";
  EXPECT_EQ(dynamic_cast<PrefixAware&>(*p).counts().by_guard.load(), 1u);
  away->inflight = 7;  // 9 is not above 1.5 × 7: balanced again, the cache wins
  EXPECT_EQ(send(*p, pool, system_prompt(5) + " q4"), home);
  // Prefix 3 went to both: of two that hold it, the less loaded.
  EXPECT_EQ(send(*p, pool, system_prompt(3) + " q5"), away);
  home->inflight = 0;
  away->inflight = 0;
}

TEST(PrefixAware, NewPrefixesSpreadEvenlyOverTheCaches) {
  Pool pool({1, 1, 1});
  auto p = make_prefix_aware(pool);
  std::map<Backend*, int> homes;
  for (int i = 0; i < 12; ++i) ++homes[send(*p, pool, system_prompt(200 + i) + " q")];
  ASSERT_EQ(homes.size(), 3u);
  for (const auto& [b, n] : homes) EXPECT_EQ(n, 4) << b->name;
  // Within four requests of the least loaded, the fewest prefixes; beyond, load first.
  pool[0].inflight = 1;
  pool[1].inflight = 4;
  pool[2].inflight = 9;
  Backend* b = send(*p, pool, system_prompt(300) + " q");
  EXPECT_TRUE(b == &pool[0] || b == &pool[1]) << "pool[2] is over four busier";
  Backend* c = send(*p, pool, system_prompt(301) + " q");
  EXPECT_NE(c, b) << "the other of the two now has fewer prefixes";
  EXPECT_NE(c, &pool[2]);
  for (std::size_t i = 0; i < 3; ++i) pool[i].inflight = 0;
}

TEST(PrefixAware, RefusedBackendsAreNotPicked) {
  Pool pool({1, 1});
  auto p = make_prefix_aware(pool);
  Backend* home = send(*p, pool, system_prompt(4) + " q");
  TriedSet tried;
  tried.add(*home);
  auto ctx = request();
  const std::string prompt = system_prompt(4) + " q";
  ctx.prompt = prompt;
  Backend* b = p->pick(ctx, pool.all(), tried);
  ASSERT_TRUE(b);
  EXPECT_NE(b, home);
}

// A reload builds the route's policy anew: what it knew a kept backend had cached goes with it;
// a new backend in an old slot (another uid) and a policy sized otherwise start empty.
TEST(PrefixAware, AReloadKeepsTheTablesOfTheBackendsThatStay) {
  Pool pool({1, 1});
  auto before = make_prefix_aware(pool);
  Backend* home = send(*before, pool, system_prompt(7) + " q");
  ASSERT_TRUE(home);
  const PrefixTable* kept = dynamic_cast<PrefixAware&>(*before).table_of(*home);
  ASSERT_TRUE(kept);
  ASSERT_GT(kept->starts(), 0u);

  auto after = make_policy("prefix_aware");
  after->build(pool.all(), before.get());
  EXPECT_EQ(dynamic_cast<PrefixAware&>(*after).table_of(*home), kept);
  Backend* other = home == &pool[0] ? &pool[1] : &pool[0];
  other->inflight = 0;
  home->inflight = 3;  // busier, within the guard: the carried table still wins
  EXPECT_EQ(send(*after, pool, system_prompt(7) + " q2"), home);
  EXPECT_EQ(dynamic_cast<PrefixAware&>(*after).counts().by_prefix.load(), 1u);
  home->inflight = 0;

  const std::uint64_t old_uid = home->uid;
  home->uid = 100;  // removed, and a new backend took its slot
  auto replaced = make_policy("prefix_aware");
  replaced->build(pool.all(), after.get());
  EXPECT_NE(dynamic_cast<PrefixAware&>(*replaced).table_of(*home), kept);
  EXPECT_EQ(dynamic_cast<PrefixAware&>(*replaced).table_of(*home)->starts(), 0u);
  home->uid = old_uid;

  auto resized = make_policy("prefix_aware", {{"table_blocks", "4096"}});
  resized->build(pool.all(), before.get());
  EXPECT_EQ(dynamic_cast<PrefixAware&>(*resized).table_of(*home)->starts(), 0u);
}

TEST(PrefixAware, OptionsAreChecked) {
  std::string err;
  EXPECT_FALSE(make_policy("prefix_aware", {{"min_match", "2"}}, &err));
  EXPECT_NE(err.find("min_match"), std::string::npos) << err;
  EXPECT_FALSE(make_policy("prefix_aware", {{"block_chars", "x"}}, &err));
  EXPECT_FALSE(make_policy("prefix_aware", {{"nope", "1"}}, &err));
  EXPECT_TRUE(make_policy("prefix_aware", {{"block_chars", "32"}, {"table_blocks", "4096"}}));
}

/// A backend's prefix cache, as vLLM's: the prompts' blocks in LRU order, `capacity` prompts.
struct LruCache {
  std::size_t capacity;
  std::list<int> order;
  bool hit_and_touch(int prefix) {
    for (auto it = order.begin(); it != order.end(); ++it)
      if (*it == prefix) {
        order.splice(order.begin(), order, it);
        return true;
      }
    order.push_front(prefix);
    if (order.size() > capacity) order.pop_back();
    return false;
  }
};

struct SimResult {
  double hit_rate = 0;
  double share0 = 0;
};

// 12 system prompts, two backends each caching 8 (the working set is 1.5× one backend's cache),
// requests for random prompts, 16 held in flight.
SimResult simulate_prefix_cache(const char* policy) {
  Pool pool({1, 1});
  auto p = make_policy(policy);
  p->build(pool.all(), nullptr);
  std::vector<LruCache> caches{{8, {}}, {8, {}}};
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> pick_prefix(0, 11);
  std::vector<std::string> prompts;
  for (int i = 0; i < 12; ++i) prompts.push_back(system_prompt(100 + i));
  std::vector<upstream::Slot> held;
  int hits = 0, n = 0, on0 = 0;
  for (int i = 0; i < 4000; ++i) {
    const int k = pick_prefix(rng);
    const std::string prompt = prompts[k] + " user question " + std::to_string(i);
    auto ctx = request();
    ctx.prompt = prompt;
    TriedSet tried;
    upstream::Slot s = pick_and_acquire(*p, ctx, pool.all(), tried);
    const int b = s.backend()->index;
    hits += caches[b].hit_and_touch(k);
    on0 += b == 0;
    ++n;
    held.push_back(std::move(s));
    if (held.size() > 16) held.erase(held.begin() + static_cast<long>(rng() % held.size()));
  }
  return {static_cast<double>(hits) / n, static_cast<double>(on0) / n};
}

TEST(PrefixAware, SimulatedPrefixCachesHitFarMoreThanRoundRobin) {
  const SimResult rr = simulate_prefix_cache("round_robin");
  const SimResult pa = simulate_prefix_cache("prefix_aware");
  std::printf(
      "[model] 12 prefixes over 2×8 cached: hit rate round_robin %.2f, prefix_aware %.2f "
      "(share of backend 0: %.2f)\n",
      rr.hit_rate, pa.hit_rate, pa.share0);
  EXPECT_GT(pa.hit_rate, 0.9);
  EXPECT_GT(pa.hit_rate, rr.hit_rate + 0.2);
  EXPECT_GT(pa.share0, 0.3);
  EXPECT_LT(pa.share0, 0.7);
}

}  // namespace
}  // namespace llmux::policy
