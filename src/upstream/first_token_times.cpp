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

void FirstTokenTimes::record(std::chrono::nanoseconds time, std::int64_t now_ns) {
  counts_[static_cast<std::size_t>(bucket_of(time))].fetch_add(1, std::memory_order_relaxed);
  bool halve = (recorded_.fetch_add(1, std::memory_order_relaxed) + 1) % kHalveEvery == 0;
  std::int64_t halved = halved_ns_.load(std::memory_order_relaxed);
  if (halved == 0) {
    halved_ns_.compare_exchange_strong(halved, now_ns, std::memory_order_relaxed);
  } else if (now_ns - halved >= std::chrono::nanoseconds(kHalveAfter).count() &&
             halved_ns_.compare_exchange_strong(halved, now_ns, std::memory_order_relaxed)) {
    // One worker halves for the time that passed (the others see the new time), unless that
    // would leave too few samples for an estimate: a route with few requests keeps what it has.
    std::uint64_t total = 0;
    for (const auto& count : counts_) total += count.load(std::memory_order_relaxed);
    halve = halve || total >= 4 * kMinSamples;
  }
  if (!halve) return;
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
