// SPDX-License-Identifier: Apache-2.0
#pragma once
// Saturation-knee detection for a concurrency (or request-rate) sweep.
//
// A sweep measures aggregate tok/s at increasing concurrency N. A step from point i-1 to i is
// judged against ideal linear scaling from the previous point: ideal gain = y[i-1] * (N[i] /
// N[i-1] - 1), actual gain = y[i] - y[i-1], and the step's efficiency = actual / ideal (1.0 for
// perfect scaling, 0 for a flat curve, negative when throughput fell). A step with efficiency
// below `min_efficiency` (default 10%) is flat. After `patience` consecutive flat steps the
// curve has saturated, and the knee is the point just before the first of them — the smallest
// concurrency past which more load bought (almost) nothing. `peak_index` is the point with the
// highest throughput, which is what one would quote as the machine's capacity.
//
// For example min(50 N, 350) sampled at N = 1, 2, 4, 8, 16 has efficiencies 1, 1, 0.75, 0 and
// its knee is N = 8.
//
// Thread safety: pure functions over caller-owned data.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace llmux::bench {

struct SweepPoint {
  double concurrency = 0;  ///< or request rate: any load level, strictly increasing
  double tok_s = 0;        ///< aggregate output tok/s measured at that level
};

struct KneeOptions {
  double min_efficiency = 0.10;  ///< a step whose gain is below this fraction of ideal is flat
  std::size_t patience = 1;      ///< consecutive flat steps needed to call saturation
};

struct KneeResult {
  bool saturated = false;
  std::optional<std::size_t> knee_index;  ///< index of the knee point, when saturated
  double knee_concurrency = 0;
  double knee_tok_s = 0;
  std::optional<std::size_t> peak_index;  ///< highest tok/s (empty only for no points)
  /// efficiency[i] is the step from point i to point i+1 (size = points - 1).
  std::vector<double> efficiency;
};

/// Efficiency of the step from `before` to `after` (see above). When `before` has no throughput,
/// any gain counts as fully efficient (1) and none as flat (0).
double step_efficiency(const SweepPoint& before, const SweepPoint& after);

/// Analyses the whole curve. Points must be in increasing load order.
KneeResult detect_knee(std::span<const SweepPoint> points, const KneeOptions& opt = {});

/// For a sweep in progress: true when the points so far show saturation, so further levels
/// would only measure the plateau (or overload).
inline bool sweep_should_stop(std::span<const SweepPoint> points, const KneeOptions& opt = {}) {
  return detect_knee(points, opt).saturated;
}

}  // namespace llmux::bench
