// SPDX-License-Identifier: Apache-2.0
#include "upstream/capacity.hpp"

#include <cmath>

namespace llmux::upstream {

double CapacityCurve::shape(int n) {
  constexpr double beta = (8.0 / 6.0 - 1.0) / 7.0;
  return 1.0 / (1.0 + beta * (clamp(n) - 1));
}

void CapacityCurve::add_sample(int n, double tokens_per_s) {
  if (!(tokens_per_s > 0) || !std::isfinite(tokens_per_s)) return;
  const auto i = static_cast<std::size_t>(clamp(n));
  const std::uint32_t k = samples_[i].fetch_add(1, std::memory_order_relaxed);
  if (k == 0) {
    rate_[i].store(static_cast<float>(tokens_per_s), std::memory_order_relaxed);
    levels_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Exponentially weighted: the latest ~10 samples count most (a machine's speed may change).
  const double alpha = k < 10 ? 1.0 / (k + 1) : 0.1;
  const double old = rate_[i].load(std::memory_order_relaxed);
  rate_[i].store(static_cast<float>(old + alpha * (tokens_per_s - old)), std::memory_order_relaxed);
}

double CapacityCurve::rate(int n, double prior_single) const {
  n = clamp(n);
  if (samples_[static_cast<std::size_t>(n)].load(std::memory_order_relaxed) > 0)
    return rate_[static_cast<std::size_t>(n)].load(std::memory_order_relaxed);
  for (int d = 1; d < kMax; ++d) {
    for (int k : {n - d, n + d}) {
      if (k < 1 || k > kMax) continue;
      if (samples_[static_cast<std::size_t>(k)].load(std::memory_order_relaxed) == 0) continue;
      return rate_[static_cast<std::size_t>(k)].load(std::memory_order_relaxed) * shape(n) /
             shape(k);
    }
  }
  return prior_single * shape(n);
}

double CapacityCurve::single_rate() const {
  return empty() ? 0.0 : rate(1, 0.0);
}

std::vector<CapacityCurve::Level> CapacityCurve::levels() const {
  std::vector<Level> out;
  for (int n = 1; n <= kMax; ++n) {
    const auto i = static_cast<std::size_t>(n);
    const std::uint32_t s = samples_[i].load(std::memory_order_relaxed);
    if (s > 0) out.push_back({n, rate_[i].load(std::memory_order_relaxed), s});
  }
  return out;
}

}  // namespace llmux::upstream
