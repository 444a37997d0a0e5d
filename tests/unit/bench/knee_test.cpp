// SPDX-License-Identifier: Apache-2.0
#include "bench/knee.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace llmux::bench {
namespace {

std::vector<SweepPoint> curve(const std::vector<double>& levels, double (*f)(double)) {
  std::vector<SweepPoint> pts;
  for (double n : levels) pts.push_back({n, f(n)});
  return pts;
}

const std::vector<double> kLevels{1, 2, 4, 8, 16, 32};

TEST(Knee, LinearCurveNeverSaturates) {
  auto pts = curve(kLevels, [](double n) { return 50 * n; });
  KneeResult r = detect_knee(pts);
  EXPECT_FALSE(r.saturated);
  EXPECT_FALSE(r.knee_index.has_value());
  ASSERT_EQ(r.efficiency.size(), pts.size() - 1);
  for (double e : r.efficiency) EXPECT_NEAR(e, 1.0, 1e-12);
  EXPECT_EQ(r.peak_index, pts.size() - 1);
  EXPECT_FALSE(sweep_should_stop(pts));
}

TEST(Knee, SaturatingCurveKneeAtEight) {
  auto pts = curve(kLevels, [](double n) { return std::min(50 * n, 350.0); });
  KneeResult r = detect_knee(pts);
  ASSERT_TRUE(r.saturated);
  ASSERT_TRUE(r.knee_index.has_value());
  EXPECT_EQ(*r.knee_index, 3u);
  EXPECT_DOUBLE_EQ(r.knee_concurrency, 8);
  EXPECT_DOUBLE_EQ(r.knee_tok_s, 350);
  const std::vector<double> want{1, 1, 0.75, 0, 0};
  ASSERT_EQ(r.efficiency.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r.efficiency[i], want[i], 1e-12);

  // A sweep in progress stops as soon as the flat step is measured, not before.
  std::span<const SweepPoint> all(pts);
  EXPECT_FALSE(sweep_should_stop(all.first(4)));  // 1..8
  EXPECT_TRUE(sweep_should_stop(all.first(5)));   // 1..16
}

TEST(Knee, BatchingModelCurve) {
  // The reference engine model: t_step(B) = max(20 ms + 0.95 ms (B-1), 2.85 ms B).
  auto tok_s = [](double b) { return b / (std::max(0.020 + 0.00095 * (b - 1), 0.00285 * b)); };
  std::vector<SweepPoint> pts;
  for (double n : kLevels) pts.push_back({n, tok_s(n)});
  KneeResult r = detect_knee(pts);
  ASSERT_TRUE(r.saturated);
  // 8 -> 16 still gains (300 -> 351 tok/s is 17% of ideal); 16 -> 32 gains nothing.
  EXPECT_DOUBLE_EQ(r.knee_concurrency, 16);
  EXPECT_NEAR(r.knee_tok_s, 350.9, 0.1);
}

TEST(Knee, NoisySaturatingCurve) {
  // With up to ±3% noise the rising steps stay above 64% efficiency and the plateau steps below
  // 7%: the knee is 8 for every draw.
  for (unsigned seed = 1; seed <= 50; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> noise(-0.03, 0.03);
    std::vector<SweepPoint> pts;
    for (double n : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0}) {
      pts.push_back({n, std::min(50 * n, 350.0) * (1 + noise(rng))});
    }
    KneeResult r = detect_knee(pts);
    ASSERT_TRUE(r.saturated) << "seed " << seed;
    EXPECT_DOUBLE_EQ(r.knee_concurrency, 8) << "seed " << seed;
    KneeResult r2 = detect_knee(pts, {.min_efficiency = 0.10, .patience = 2});
    EXPECT_DOUBLE_EQ(r2.knee_concurrency, 8) << "seed " << seed;
  }
}

TEST(Knee, PatienceIgnoresASingleDip) {
  // A noisy flat step in the rising part, then growth again.
  std::vector<SweepPoint> pts{{1, 50},   {2, 100},  {4, 104}, {8, 400},
                              {16, 800}, {32, 810}, {64, 805}};
  KneeResult eager = detect_knee(pts);
  ASSERT_TRUE(eager.saturated);
  EXPECT_DOUBLE_EQ(eager.knee_concurrency, 2);
  KneeResult patient = detect_knee(pts, {.min_efficiency = 0.10, .patience = 2});
  ASSERT_TRUE(patient.saturated);
  EXPECT_DOUBLE_EQ(patient.knee_concurrency, 16);
  EXPECT_EQ(patient.peak_index, 5u);
}

TEST(Knee, OverloadDeclineAndPeak) {
  std::vector<SweepPoint> pts{{1, 50}, {2, 100}, {4, 200}, {8, 350}, {16, 300}};
  KneeResult r = detect_knee(pts);
  ASSERT_TRUE(r.saturated);
  EXPECT_DOUBLE_EQ(r.knee_concurrency, 8);
  EXPECT_EQ(r.peak_index, 3u);
  EXPECT_LT(r.efficiency.back(), 0);
}

TEST(Knee, ThresholdMatters) {
  // Efficiencies 1, 0.5, 0.2: saturated at 25% but not at 10%.
  std::vector<SweepPoint> pts{{1, 100}, {2, 200}, {4, 300}, {8, 360}};
  EXPECT_FALSE(detect_knee(pts).saturated);
  KneeResult r = detect_knee(pts, {.min_efficiency = 0.25});
  ASSERT_TRUE(r.saturated);
  EXPECT_DOUBLE_EQ(r.knee_concurrency, 4);
}

TEST(Knee, DegenerateInputs) {
  KneeResult none = detect_knee(std::vector<SweepPoint>{});
  EXPECT_FALSE(none.saturated);
  EXPECT_FALSE(none.peak_index.has_value());
  KneeResult one = detect_knee(std::vector<SweepPoint>{{4, 100}});
  EXPECT_FALSE(one.saturated);
  EXPECT_EQ(one.peak_index, 0u);
  EXPECT_TRUE(one.efficiency.empty());
  EXPECT_DOUBLE_EQ(step_efficiency({1, 0}, {2, 10}), 1.0);
  EXPECT_DOUBLE_EQ(step_efficiency({1, 0}, {2, 0}), 0.0);
}

}  // namespace
}  // namespace llmux::bench
