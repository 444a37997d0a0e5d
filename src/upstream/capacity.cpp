// SPDX-License-Identifier: Apache-2.0
#include "upstream/capacity.hpp"

#include <cmath>

namespace llmux::upstream {

double CapacityCurve::shape(int inflight) {
  constexpr double beta = (8.0 / 6.0 - 1.0) / 7.0;
  return 1.0 / (1.0 + beta * (clamp(inflight) - 1));
}

void CapacityCurve::add_sample(int inflight, double tokens_per_s) {
  if (!(tokens_per_s > 0) || !std::isfinite(tokens_per_s)) return;
  const auto level = static_cast<std::size_t>(clamp(inflight));
  const std::uint32_t previous_samples = samples_[level].fetch_add(1, std::memory_order_relaxed);
  if (previous_samples == 0) {
    rate_[level].store(static_cast<float>(tokens_per_s), std::memory_order_relaxed);
    levels_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Exponentially weighted: the latest ~10 samples count most (a machine's speed may change).
  const double alpha = previous_samples < 10 ? 1.0 / (previous_samples + 1) : 0.1;
  const double old = rate_[level].load(std::memory_order_relaxed);
  rate_[level].store(static_cast<float>(old + alpha * (tokens_per_s - old)),
                     std::memory_order_relaxed);
}

double CapacityCurve::rate(int inflight, double prior_single) const {
  inflight = clamp(inflight);
  if (samples_[static_cast<std::size_t>(inflight)].load(std::memory_order_relaxed) > 0)
    return rate_[static_cast<std::size_t>(inflight)].load(std::memory_order_relaxed);
  for (int d = 1; d < kMax; ++d) {
    for (int neighbour : {inflight - d, inflight + d}) {
      if (neighbour < 1 || neighbour > kMax) continue;
      if (samples_[static_cast<std::size_t>(neighbour)].load(std::memory_order_relaxed) == 0)
        continue;
      return rate_[static_cast<std::size_t>(neighbour)].load(std::memory_order_relaxed) *
             shape(inflight) / shape(neighbour);
    }
  }
  return prior_single * shape(inflight);
}

double CapacityCurve::single_rate() const {
  return empty() ? 0.0 : rate(1, 0.0);
}

std::vector<CapacityCurve::Level> CapacityCurve::levels() const {
  std::vector<Level> out;
  for (int n = 1; n <= kMax; ++n) {
    const auto bucket = static_cast<std::size_t>(n);
    const std::uint32_t samples = samples_[bucket].load(std::memory_order_relaxed);
    if (samples > 0) out.push_back({n, rate_[bucket].load(std::memory_order_relaxed), samples});
  }
  return out;
}

}  // namespace llmux::upstream
