// SPDX-License-Identifier: Apache-2.0
// RoundRobin: exact alternation, weighted shares over 100k picks (simulation test), interleaving,
// skipping of tried and saturated backends, and concurrent picks.
#include "policy/round_robin.hpp"

#include <gtest/gtest.h>

#include <array>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

/// Counts of picks per backend index over `n` picks (nullptr counted at the end).
std::vector<int> tally(Policy& p, Pool& pool, int n, const TriedSet& tried = {}) {
  std::vector<int> counts(pool.size() + 1, 0);
  for (int i = 0; i < n; ++i) {
    Backend* b = p.pick(request(), pool.all(), tried);
    ++counts[b ? b->index : pool.size()];
  }
  return counts;
}

TEST(RoundRobin, AlternatesExactlyOverTwoBackends) {
  Pool pool({1, 1});
  RoundRobin rr;
  Backend* first = rr.pick(request(), pool.all(), {});
  ASSERT_NE(first, nullptr);
  Backend* prev = first;
  for (int i = 1; i < 1000; ++i) {
    Backend* b = rr.pick(request(), pool.all(), {});
    ASSERT_NE(b, nullptr);
    ASSERT_NE(b, prev) << "pick " << i << " repeated " << b->name;
    prev = b;
  }
}

TEST(RoundRobin, VisitsEveryBackendOncePerCycle) {
  Pool pool({1, 1, 1, 1, 1});
  RoundRobin rr;
  for (int cycle = 0; cycle < 20; ++cycle) {
    std::array<int, 5> seen{};
    for (int i = 0; i < 5; ++i) ++seen[rr.pick(request(), pool.all(), {})->index];
    for (int s : seen) ASSERT_EQ(s, 1) << "cycle " << cycle;
  }
}

TEST(RoundRobin, Weights3To1GiveThreeQuartersAndOneQuarter) {
  Pool pool({3, 1});
  RoundRobin rr;
  constexpr int kPicks = 100000;
  auto counts = tally(rr, pool, kPicks);
  EXPECT_EQ(counts[2], 0);
  EXPECT_NEAR(counts[0] / double(kPicks), 0.75, 0.005);
  EXPECT_NEAR(counts[1] / double(kPicks), 0.25, 0.005);
}

TEST(RoundRobin, Weights3To1AreInterleaved) {
  Pool pool({3, 1});
  RoundRobin rr;
  int run = 0, longest = 0;
  Backend* prev = nullptr;
  for (int i = 0; i < 100000; ++i) {
    Backend* b = rr.pick(request(), pool.all(), {});
    run = b == prev ? run + 1 : 1;
    longest = std::max(longest, run);
    prev = b;
    // The light backend is never starved for long either: within any 4 picks it appears once.
  }
  EXPECT_LE(longest, 3);
}

TEST(RoundRobin, LightBackendAppearsOncePerCycle) {
  Pool pool({3, 1});
  RoundRobin rr;
  for (int cycle = 0; cycle < 1000; ++cycle) {
    int light = 0;
    for (int i = 0; i < 4; ++i) light += rr.pick(request(), pool.all(), {})->index == 1;
    ASSERT_EQ(light, 1) << "cycle " << cycle;
  }
}

// Smooth weighted round robin as nginx documents it: weights 5, 1, 1 give a a b a c a a, every
// cycle; the light ones never back to back, the heavy one never more than twice in a row.
TEST(RoundRobin, SmoothWeightedCycleAsNginx) {
  Pool pool({5, 1, 1});
  RoundRobin rr;
  const std::array<int, 7> cycle{0, 0, 1, 0, 2, 0, 0};
  for (int round = 0; round < 10; ++round)
    for (std::size_t i = 0; i < cycle.size(); ++i)
      ASSERT_EQ(rr.pick(request(), pool.all(), {})->index, cycle[i])
          << "round " << round << ", pick " << i;
}

TEST(RoundRobin, ThreeUnequalWeights) {
  Pool pool({1, 2, 5});
  RoundRobin rr;
  constexpr int kPicks = 100000;
  auto counts = tally(rr, pool, kPicks);
  EXPECT_NEAR(counts[0] / double(kPicks), 1.0 / 8, 0.005);
  EXPECT_NEAR(counts[1] / double(kPicks), 2.0 / 8, 0.005);
  EXPECT_NEAR(counts[2] / double(kPicks), 5.0 / 8, 0.005);
}

TEST(RoundRobin, TriedBackendsAreSkipped) {
  Pool pool({1, 1, 1});
  RoundRobin rr;
  TriedSet tried;
  tried.add(pool[1]);
  auto counts = tally(rr, pool, 3000, tried);
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[3], 0);  // never nullptr while one is left
  EXPECT_EQ(counts[0] + counts[2], 3000);
  tried.add(pool[0]);
  counts = tally(rr, pool, 100, tried);
  EXPECT_EQ(counts[2], 100);
}

TEST(RoundRobin, SaturatedBackendIsSkipped) {
  Pool pool({1, 1});
  pool[0].max_inflight = 2;
  pool[0].inflight = 2;
  RoundRobin rr;
  auto counts = tally(rr, pool, 1000);
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[1], 1000);

  pool[0].inflight = 1;  // one slot free again: back to alternating
  counts = tally(rr, pool, 1000);
  EXPECT_EQ(counts[0], 500);
  EXPECT_EQ(counts[1], 500);
}

TEST(RoundRobin, UnlimitedBackendIsNeverSaturated) {
  Pool pool({1, 1});
  pool[0].max_inflight = 0;
  pool[0].inflight = 1'000'000;
  RoundRobin rr;
  auto counts = tally(rr, pool, 1000);
  EXPECT_EQ(counts[0], 500);
}

TEST(RoundRobin, HeavyBackendSaturatedSendsEverythingToTheOthers) {
  Pool pool({3, 1});
  pool[0].max_inflight = 1;
  pool[0].inflight = 1;
  RoundRobin rr;
  auto counts = tally(rr, pool, 1000);
  EXPECT_EQ(counts[1], 1000);
}

// An unavailable backend's share is spread over the others by weight, not handed to the
// backend that happens to follow it (which would then saturate next).
TEST(RoundRobin, SaturatedBackendsShareIsSpreadEvenly) {
  Pool pool({1, 1, 1});
  pool[0].max_inflight = 4;
  pool[0].inflight = 4;
  RoundRobin rr;
  constexpr int kPicks = 30000;
  auto counts = tally(rr, pool, kPicks);
  EXPECT_EQ(counts[0], 0);
  EXPECT_NEAR(counts[1] / double(kPicks), 0.5, 0.01);
  EXPECT_NEAR(counts[2] / double(kPicks), 0.5, 0.01);
}

TEST(RoundRobin, TriedBackendsShareIsSpreadByWeight) {
  Pool pool({1, 1, 2});
  RoundRobin rr;
  TriedSet tried;
  tried.add(pool[0]);
  constexpr int kPicks = 30000;
  auto counts = tally(rr, pool, kPicks, tried);
  EXPECT_NEAR(counts[1] / double(kPicks), 1.0 / 3, 0.01);
  EXPECT_NEAR(counts[2] / double(kPicks), 2.0 / 3, 0.01);
}

TEST(RoundRobin, AllTriedGivesNullptr) {
  Pool pool({1, 2});
  RoundRobin rr;
  TriedSet tried;
  tried.add(pool[0]);
  tried.add(pool[1]);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(rr.pick(request(), pool.all(), tried), nullptr);
}

TEST(RoundRobin, AllSaturatedGivesNullptr) {
  Pool pool({1, 1});
  for (std::size_t i = 0; i < pool.size(); ++i) {
    pool[i].max_inflight = 1;
    pool[i].inflight = 1;
  }
  RoundRobin rr;
  EXPECT_EQ(rr.pick(request(), pool.all(), {}), nullptr);
}

TEST(RoundRobin, NoCandidatesGivesNullptr) {
  RoundRobin rr;
  EXPECT_EQ(rr.pick(request(), {}, {}), nullptr);
}

TEST(RoundRobin, SixtyFourBackends) {
  std::vector<int> weights(64, 1);
  Pool pool(weights);
  RoundRobin rr;
  TriedSet tried;
  for (int i = 0; i < 63; ++i) tried.add(pool[i]);
  EXPECT_EQ(rr.pick(request(), pool.all(), tried), &pool[63]);
  tried.add(pool[63]);
  EXPECT_EQ(rr.pick(request(), pool.all(), tried), nullptr);
}

TEST(RoundRobin, ConcurrentPicksStayBalanced) {
  Pool pool({1, 1});
  RoundRobin rr;
  constexpr int kThreads = 4, kPerThread = 250000;
  std::vector<std::array<int, 3>> counts(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::array<int, 3> local{};
      for (int i = 0; i < kPerThread; ++i) {
        Backend* b = rr.pick(request(), pool.all(), {});
        ++local[b ? b->index : 2];
      }
      counts[t] = local;
    });
  for (auto& th : threads) th.join();
  std::array<int, 3> total{};
  for (const auto& c : counts)
    for (int i = 0; i < 3; ++i) total[i] += c[i];
  constexpr double kTotal = kThreads * kPerThread;
  EXPECT_EQ(total[2], 0);
  EXPECT_EQ(total[0] + total[1], kThreads * kPerThread);
  EXPECT_NEAR(total[0] / kTotal, 0.5, 0.01);
  EXPECT_NEAR(total[1] / kTotal, 0.5, 0.01);
}

TEST(RoundRobin, ConcurrentWeightedPicks) {
  Pool pool({3, 1});
  RoundRobin rr;
  constexpr int kThreads = 4, kPerThread = 100000;
  std::vector<std::array<int, 2>> counts(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::array<int, 2> local{};
      for (int i = 0; i < kPerThread; ++i) ++local[rr.pick(request(), pool.all(), {})->index];
      counts[t] = local;
    });
  for (auto& th : threads) th.join();
  const double heavy = counts[0][0] + counts[1][0] + counts[2][0] + counts[3][0];
  EXPECT_NEAR(heavy / (kThreads * kPerThread), 0.75, 0.01);
}

TEST(RoundRobin, Name) {
  EXPECT_EQ(RoundRobin().name(), "round_robin");
}

}  // namespace
}  // namespace llmux::policy
