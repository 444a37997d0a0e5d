// SPDX-License-Identifier: Apache-2.0
#include "upstream/decode_pace.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace llmux::upstream {

namespace {

/// The weight of `events` events together in the average: 1 - (7/8)^events (one event: 1/8).
constexpr int kMostEvents = 32;
const std::array<double, kMostEvents + 1>& event_weights() {
  static const std::array<double, kMostEvents + 1> weights = [] {
    std::array<double, kMostEvents + 1> computed{};
    for (int events = 0; events <= kMostEvents; ++events)
      computed[static_cast<std::size_t>(events)] = 1.0 - std::pow(7.0 / 8.0, events);
    return computed;
  }();
  return weights;
}

}  // namespace

void DecodePace::record(std::int64_t gap_ns, std::uint64_t events, std::int64_t now_ns) {
  if (events == 0 || gap_ns < 0) return;
  const std::int64_t previous = average_gap_ns_.load(std::memory_order_relaxed);
  const std::int64_t last = last_event_ns_.load(std::memory_order_relaxed);
  std::int64_t average = gap_ns;
  // An average gone stale starts again from this gap: what it said is no longer the backend's.
  if (last > 0 && now_ns - last < kFreshNs) {
    const double weight =
        event_weights()[std::min<std::uint64_t>(events, static_cast<std::uint64_t>(kMostEvents))];
    average = previous + static_cast<std::int64_t>(
                             std::llround(weight * static_cast<double>(gap_ns - previous)));
  }
  average_gap_ns_.store(average, std::memory_order_relaxed);
  last_event_ns_.store(now_ns, std::memory_order_relaxed);
}

std::optional<std::int64_t> DecodePace::gap(std::int64_t now_ns) const {
  const std::int64_t last = last_event_ns_.load(std::memory_order_relaxed);
  if (last <= 0 || now_ns - last >= kFreshNs) return std::nullopt;
  return average_gap_ns_.load(std::memory_order_relaxed);
}

}  // namespace llmux::upstream
