// SPDX-License-Identifier: Apache-2.0
// The gateway's metrics storage (gateway/metrics.hpp): label tables, per-worker counters and
// histograms, read while a worker writes.
#include "gateway/metrics.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

namespace llmux::gateway::metrics {
namespace {

TEST(MetricsNames, StableIdsAndABoundedTable) {
  NameTable t("other");
  const int a = t.id("alpha");
  EXPECT_EQ(t.id("beta"), a + 1);
  EXPECT_EQ(t.id("alpha"), a);
  EXPECT_EQ(t.find("beta"), a + 1);
  EXPECT_EQ(t.find("gamma"), 0);
  EXPECT_EQ(t.name(a), "alpha");
  EXPECT_EQ(t.name(0), "other");
  EXPECT_EQ(t.id(""), 0);
  for (int i = 0; i < 2 * kMaxNames; ++i) t.id("n" + std::to_string(i));
  EXPECT_EQ(t.size(), kMaxNames);
  EXPECT_EQ(t.id("one-too-many"), 0) << "a full table says other";
  EXPECT_EQ(t.name(a), "alpha");
}

TEST(MetricsCounters, AddUpByKeyAndSurviveCollisions) {
  auto table = std::make_unique<CounterTable>();
  std::map<std::uint64_t, std::uint64_t> expected;
  for (int i = 0; i < 3000; ++i) {
    const auto key = CounterTable::key(Family::requests, i % 7, i % 13, 200 + i % 5);
    table->add(key, static_cast<std::uint64_t>(i % 3 + 1));
    expected[key] += static_cast<std::uint64_t>(i % 3 + 1);
  }
  std::map<std::uint64_t, std::uint64_t> got;
  table->each([&](std::uint64_t k, std::uint64_t v) { got[k] += v; });
  EXPECT_EQ(got, expected);
  EXPECT_EQ(table->dropped(), 0u);
  // Full: counted as dropped, nothing else changes.
  for (std::uint64_t i = 0; i < CounterTable::kSlots; ++i)
    table->add(CounterTable::key(Family::retries, static_cast<std::uint16_t>(i % 65536),
                                 static_cast<std::uint16_t>(i / 65536 + 1)),
               1);
  EXPECT_GT(table->dropped(), 0u);
}

TEST(MetricsHistogram, BucketsCountsAndSums) {
  const Bounds& b = bounds(HistKind::ttft);
  Histogram h;
  h.record(b, 1'000'000);           // 1 ms: the first bucket (5 ms)
  h.record(b, 300'000'000, 3);      // 0.3 s three times: the 0.5 s bucket
  h.record(b, 10'000'000'000'000);  // beyond the last bound: +Inf only
  std::array<std::uint64_t, kMaxBuckets + 1> buckets{};
  std::uint64_t count = 0, sum = 0;
  h.add_to(buckets, count, sum);
  EXPECT_EQ(count, 5u);
  EXPECT_EQ(sum, 1'000'000u + 900'000'000u + 10'000'000'000'000u);
  EXPECT_EQ(buckets[0], 1u);
  std::size_t half = 0;
  while (b.upper_ns[half] < 500'000'000) ++half;
  EXPECT_EQ(buckets[half], 3u);
  EXPECT_EQ(buckets[b.upper_ns.size()], 1u);
}

TEST(MetricsRegistry, AScrapeReadsWhileTheWorkerWrites) {
  Registry r;
  WorkerMetrics& w = r.add_worker();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 200000; ++i) w.count(Family::generation_tokens, 1, 2, 0, 1);
    done = true;
  });
  std::uint64_t last = 0;
  while (!done) {  // bounded by the writer's 200000 adds
    std::uint64_t now = 0;
    r.each([&](const WorkerMetrics& m) {
      m.counters.each([&](std::uint64_t, std::uint64_t v) { now += v; });
    });
    EXPECT_GE(now, last) << "a counter never goes back";
    last = now;
  }
  writer.join();
  std::uint64_t total = 0;
  r.each([&](const WorkerMetrics& m) {
    m.counters.each([&](std::uint64_t, std::uint64_t v) { total += v; });
  });
  EXPECT_EQ(total, 200000u);
}

}  // namespace
}  // namespace llmux::gateway::metrics
