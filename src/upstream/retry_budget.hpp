// SPDX-License-Identifier: Apache-2.0
#pragma once
// A route's retry budget: in each one-second window, retries are allowed up to
// max(min_per_second, fraction × the route's requests in this or the previous window), so a
// failing fleet is not hammered with retries on top of its load (Envoy's retry budget, by rate).
//
// Thread safety: atomics only, shared by every worker. The window roll-over is approximate (two
// workers rolling at once may each reset the counts): a budget, not an accounting.
#include <algorithm>
#include <atomic>
#include <cstdint>

namespace llmux::upstream {

class RetryBudget {
 public:
  RetryBudget(double fraction, int min_per_second)
      : fraction_(fraction), min_per_second_(min_per_second) {}

  /// Counts one request of the route.
  void on_request(std::int64_t now_ns) {
    roll(now_ns);
    requests_.fetch_add(1, std::memory_order_relaxed);
  }

  /// Takes one retry when the budget allows it.
  bool try_retry(std::int64_t now_ns) {
    roll(now_ns);
    const int base = std::max(requests_.load(std::memory_order_relaxed),
                              previous_.load(std::memory_order_relaxed));
    const int allowed = std::max(min_per_second_, static_cast<int>(fraction_ * base));
    int used = retries_.load(std::memory_order_relaxed);
    while (used < allowed) {
      if (retries_.compare_exchange_weak(used, used + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }

 private:
  void roll(std::int64_t now_ns) {
    const std::int64_t second = now_ns / 1'000'000'000;
    std::int64_t seen = window_.load(std::memory_order_relaxed);
    if (seen == second) return;
    if (!window_.compare_exchange_strong(seen, second, std::memory_order_relaxed)) return;
    // Only the previous second's requests carry over; an older window carries nothing.
    previous_.store(seen == second - 1 ? requests_.load(std::memory_order_relaxed) : 0,
                    std::memory_order_relaxed);
    requests_.store(0, std::memory_order_relaxed);
    retries_.store(0, std::memory_order_relaxed);
  }

  const double fraction_;
  const int min_per_second_;
  std::atomic<std::int64_t> window_{0};
  std::atomic<int> requests_{0};
  std::atomic<int> previous_{0};
  std::atomic<int> retries_{0};
};

}  // namespace llmux::upstream
