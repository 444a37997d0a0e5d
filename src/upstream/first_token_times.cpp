// SPDX-License-Identifier: Apache-2.0
#include "upstream/first_token_times.hpp"

#include <algorithm>
#include <cmath>

namespace llmux::upstream {

int FirstTokenTimes::bucket_of(std::chrono::nanoseconds time) {
  const double milliseconds = static_cast<double>(time.count()) / 1e6;
  if (milliseconds < 1.0) return 0;
  const int index = static_cast<int>(std::floor(std::log2(milliseconds) * kBucketsPerDoubling));
  return std::clamp(index, 0, kBuckets - 1);
}

std::chrono::nanoseconds FirstTokenTimes::bucket_bound(int index) {
  const double milliseconds = std::exp2(static_cast<double>(index + 1) / kBucketsPerDoubling);
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(milliseconds * 1e6)));
}

void FirstTokenTimes::record(std::chrono::nanoseconds time) {
  counts_[static_cast<std::size_t>(bucket_of(time))].fetch_add(1, std::memory_order_relaxed);
  if ((recorded_.fetch_add(1, std::memory_order_relaxed) + 1) % kHalveEvery != 0) return;
  for (auto& count : counts_)
    count.store(count.load(std::memory_order_relaxed) / 2, std::memory_order_relaxed);
}

std::optional<std::chrono::nanoseconds> FirstTokenTimes::quantile(double quantile) const {
  std::array<std::uint32_t, kBuckets> counts{};
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    counts[i] = counts_[i].load(std::memory_order_relaxed);
    total += counts[i];
  }
  if (total < kMinSamples) return std::nullopt;
  // The smallest bucket at which at least `quantile` of the samples are counted.
  const double wanted = std::clamp(quantile, 0.0, 1.0) * static_cast<double>(total);
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts[static_cast<std::size_t>(i)];
    if (static_cast<double>(seen) >= wanted && seen > 0) return bucket_bound(i);
  }
  return bucket_bound(kBuckets - 1);
}

}  // namespace llmux::upstream
