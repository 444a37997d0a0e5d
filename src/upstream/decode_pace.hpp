// SPDX-License-Identifier: Apache-2.0
#pragma once
// How fast a backend's streams produce tokens now: the gap between two content events of one
// stream, per event, averaged over the events of every stream the gateway relays from it (each
// event weighs 1/8, so a backend that turns slower or faster shows it within a step or two of
// its batch), and when the last event came. Learned only where a route that hedges reads it
// (gateway/hedge.hpp: a backend whose streams are several times slower than its peers' is
// avoided while they are); `watched` says so, and the relay records nothing otherwise.
//
// Thread-safe without locks: every worker records into the same atomics (relaxed; two events
// recorded at once may lose one, which only blurs the average).
#include <atomic>
#include <cstdint>
#include <optional>

namespace llmux::upstream {

class DecodePace {
 public:
  /// An average whose last event is older than this says nothing of the backend now.
  static constexpr std::int64_t kFreshNs = 2'000'000'000;

  /// `events` content events came `gap_ns` apart each (the time since the stream's previous
  /// event, divided among them), at `now_ns`.
  void record(std::int64_t gap_ns, std::uint64_t events, std::int64_t now_ns);

  /// The average gap between a stream's events, while an event came within kFreshNs of
  /// `now_ns`; none otherwise (no stream, or none that moved lately).
  std::optional<std::int64_t> gap(std::int64_t now_ns) const;

  /// Whether the relay records events here (set where a route that hedges names the backend).
  bool watched() const { return watched_.load(std::memory_order_relaxed); }
  void watch(bool on) { watched_.store(on, std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> average_gap_ns_{0};
  std::atomic<std::int64_t> last_event_ns_{0};
  std::atomic<bool> watched_{false};
};

}  // namespace llmux::upstream
