// SPDX-License-Identifier: Apache-2.0
// least_load: the backends' own reports (running, waiting, KV usage) with the gateway's counts;
// stale or missing reports count as busy; with none fresh, least_inflight. Plus a statistical
// simulation where another client loads one machine behind the gateway's back.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/clock.hpp"
#include "policy/policy.hpp"
#include "test_util.hpp"
#include "upstream/load_report.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;
using upstream::LoadReport;
using upstream::store_report;

constexpr std::int64_t kFresh = 3'000'000'000;

Backend* pick(Policy& p, Pool& pool) {
  return p.pick(request(), pool.all(), TriedSet{});
}

TEST(LeastLoad, ReportedLoadCountsWithTheGatewaysOwn) {
  Pool pool({1, 1});
  auto p = make_policy("least_load");
  ASSERT_TRUE(p);
  const std::int64_t now = mono_ns();
  // Same count at this gateway, but b0 serves 10 more (another client): b1.
  store_report(pool[0], LoadReport{10, 0, 0.2}, now, kFresh);
  store_report(pool[1], LoadReport{0, 0, 0.2}, now, kFresh);
  EXPECT_EQ(pick(*p, pool), &pool[1]);
  // The report lags: b1 said 0, but this gateway has sent it 12 since.
  pool[1].inflight = 12;
  EXPECT_EQ(pick(*p, pool), &pool[0]);
  pool[1].inflight = 0;
  // Waiting requests weigh double: 4 running + 4 waiting is busier than 7 running.
  store_report(pool[0], LoadReport{4, 4, 0.2}, now, kFresh);
  store_report(pool[1], LoadReport{7, 0, 0.2}, now, kFresh);
  EXPECT_EQ(pick(*p, pool), &pool[1]);
  // Equal load: the emptier KV cache.
  store_report(pool[0], LoadReport{3, 0, 0.9}, now, kFresh);
  store_report(pool[1], LoadReport{3, 0, 0.4}, now, kFresh);
  EXPECT_EQ(pick(*p, pool), &pool[1]);
}

TEST(LeastLoad, StaleCountsAsBusyAndAllStaleFallsBackToInflight) {
  Pool pool({1, 1});
  auto p = make_policy("least_load");
  const std::int64_t now = mono_ns();
  store_report(pool[0], LoadReport{20, 5, 0.9}, now, kFresh);  // busy but fresh
  EXPECT_EQ(pick(*p, pool), &pool[0]) << "b1 never reported: after every fresh one";
  store_report(pool[1], LoadReport{0, 0, 0}, now - 2 * kFresh, kFresh);  // stale
  EXPECT_EQ(pick(*p, pool), &pool[0]);
  store_report(pool[0], LoadReport{20, 5, 0.9}, now - 2 * kFresh, kFresh);  // now both stale
  pool[0].inflight = 3;
  pool[1].inflight = 1;
  EXPECT_EQ(pick(*p, pool), &pool[1]) << "least_inflight";
  pool[0].inflight = 1;
  pool[1].inflight = 3;
  EXPECT_EQ(pick(*p, pool), &pool[0]);
  pool[0].inflight = 0;
  pool[1].inflight = 0;
}

/// Per-stream decode rate at `n` streams on a seed Spark (50 tok/s alone, 300 at 8).
double rate(int n) {
  return 50.0 / (1.0 + (8.0 / 6.0 - 1.0) / 7.0 * (n - 1));
}

// Two equal machines that run at most 8 sequences each (vLLM's max_num_seqs; more wait in its
// queue). Another client keeps 6 streams on machine 0 that this gateway does not see. 8
// closed-loop clients through the gateway; the scraper reports each machine's running and
// waiting once a simulated second. Tokens the gateway's clients get, per policy.
double simulate_hidden_load(const char* policy) {
  Pool pool({1, 1});
  auto p = make_policy(policy);
  p->build(pool.all(), nullptr);
  constexpr int kBatch = 8;
  const int external[2] = {6, 0};
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> out_len(64, 512);
  struct Req {
    upstream::Slot slot;
    double left = 0;
    int arrival = 0;  // FIFO order on its machine
  };
  std::vector<Req> reqs(8);
  int arrivals = 0;
  auto send = [&](Req& r) {
    TriedSet tried;
    r.slot = pick_and_acquire(*p, request(), pool.all(), tried);
    r.left = out_len(rng);
    r.arrival = arrivals++;
  };
  for (auto& r : reqs) send(r);
  double tokens = 0;
  const double dt = 0.01;
  int step = 0;
  for (double t = 0; t < 300; t += dt, ++step) {
    // Who runs: per machine, the external streams and the earliest arrivals, up to the batch.
    std::vector<Req*> order;
    for (auto& r : reqs) order.push_back(&r);
    std::sort(order.begin(), order.end(), [](Req* a, Req* b) { return a->arrival < b->arrival; });
    int running[2] = {external[0], external[1]}, waiting[2] = {0, 0};
    std::vector<bool> runs(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int m = order[i]->slot.backend()->index;
      runs[i] = running[m] < kBatch;
      (runs[i] ? running[m] : waiting[m])++;
    }
    if (step % 100 == 0)
      for (int b = 0; b < 2; ++b)
        store_report(pool[static_cast<std::size_t>(b)],
                     LoadReport{double(running[b]), double(waiting[b]), 0.1}, mono_ns(), kFresh);
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (!runs[i]) continue;
      Req& r = *order[i];
      const double got = std::min(r.left, rate(running[r.slot.backend()->index]) * dt);
      r.left -= got;
      tokens += got;
      if (r.left <= 1e-9) {
        r.slot.reset();
        send(r);
      }
    }
  }
  return tokens;
}

TEST(LeastLoad, SimulatedHiddenLoadIsAvoided) {
  const double li = simulate_hidden_load("least_inflight");
  const double ll = simulate_hidden_load("least_load");
  std::printf(
      "[model] 6 hidden streams on machine 0: tokens least_inflight %.0f, least_load %.0f\n", li,
      ll);
  EXPECT_GT(ll, 1.1 * li);
}

}  // namespace
}  // namespace llmux::policy
