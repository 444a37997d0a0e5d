// SPDX-License-Identifier: Apache-2.0
#include "bench/knee.hpp"

#include <algorithm>

namespace llmux::bench {

double step_efficiency(const SweepPoint& a, const SweepPoint& b) {
  const double gain = b.tok_s - a.tok_s;
  if (a.tok_s <= 0 || a.concurrency <= 0) return gain > 0 ? 1.0 : 0.0;
  const double ideal = a.tok_s * (b.concurrency / a.concurrency - 1.0);
  if (ideal <= 0) return gain > 0 ? 1.0 : 0.0;  // load did not increase: nothing to judge
  return gain / ideal;
}

KneeResult detect_knee(std::span<const SweepPoint> points, const KneeOptions& opt) {
  KneeResult r;
  if (points.empty()) return r;
  r.peak_index = static_cast<std::size_t>(
      std::max_element(points.begin(), points.end(),
                       [](const SweepPoint& x, const SweepPoint& y) { return x.tok_s < y.tok_s; }) -
      points.begin());
  const std::size_t patience = std::max<std::size_t>(1, opt.patience);
  std::size_t flat_run = 0;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const double e = step_efficiency(points[i - 1], points[i]);
    r.efficiency.push_back(e);
    if (r.saturated) continue;
    if (e < opt.min_efficiency) {
      ++flat_run;
      if (flat_run >= patience) {
        r.saturated = true;
        r.knee_index = i - flat_run;  // the point before the first flat step of the run
      }
    } else {
      flat_run = 0;
    }
  }
  if (r.knee_index) {
    r.knee_concurrency = points[*r.knee_index].concurrency;
    r.knee_tok_s = points[*r.knee_index].tok_s;
  }
  return r;
}

}  // namespace llmux::bench
