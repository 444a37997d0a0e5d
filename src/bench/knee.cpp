// SPDX-License-Identifier: Apache-2.0
#include "bench/knee.hpp"

#include <algorithm>

namespace llmux::bench {

double step_efficiency(const SweepPoint& before, const SweepPoint& after) {
  const double gain = after.tok_s - before.tok_s;
  if (before.tok_s <= 0 || before.concurrency <= 0) return gain > 0 ? 1.0 : 0.0;
  const double ideal = before.tok_s * (after.concurrency / before.concurrency - 1.0);
  if (ideal <= 0) return gain > 0 ? 1.0 : 0.0;  // load did not increase: nothing to judge
  return gain / ideal;
}

KneeResult detect_knee(std::span<const SweepPoint> points, const KneeOptions& opt) {
  KneeResult result;
  if (points.empty()) return result;
  result.peak_index = static_cast<std::size_t>(
      std::max_element(points.begin(), points.end(),
                       [](const SweepPoint& left, const SweepPoint& right) {
                         return left.tok_s < right.tok_s;
                       }) -
      points.begin());
  const std::size_t patience = std::max<std::size_t>(1, opt.patience);
  std::size_t flat_run = 0;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const double efficiency = step_efficiency(points[i - 1], points[i]);
    result.efficiency.push_back(efficiency);
    if (result.saturated) continue;
    if (efficiency < opt.min_efficiency) {
      ++flat_run;
      if (flat_run >= patience) {
        result.saturated = true;
        result.knee_index = i - flat_run;  // the point before the first flat step of the run
      }
    } else {
      flat_run = 0;
    }
  }
  if (result.knee_index) {
    result.knee_concurrency = points[*result.knee_index].concurrency;
    result.knee_tok_s = points[*result.knee_index].tok_s;
  }
  return result;
}

}  // namespace llmux::bench
