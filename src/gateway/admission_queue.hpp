// SPDX-License-Identifier: Apache-2.0
#pragma once
// Admission control: when every backend of a route is at its max_inflight (or at the share of it
// the request's priority class may fill), a request waits in the route's queue instead of being
// refused — at most `size` waiting (more: 429), at most `max_queued` of one tenant (more: 429),
// for at most `timeout` (then 503), all with Retry-After. While anyone waits, a newcomer queues
// too (no barging); only the head of the queue takes a slot. Who is the head is the fair queue's
// order (gateway/fair_queue.hpp): priority classes, promotion, then tenants by tokens. A request
// that ends on a backend wakes the head of each queue that backend serves (the waiter's own
// worker runs it); a waiter also looks again every 100 ms, which covers a slot freed by a
// request of an earlier configuration and a promotion that changed the head.
//
// Thread safety: the queue is shared by every worker under a mutex, taken only when a route is
// saturated (and for depth(), an atomic). A Ticket's timer and flags belong to its waiter's
// worker; other threads only post to it.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/fair_queue.hpp"

namespace llmux::gateway {

class AdmissionQueue {
 public:
  /// One waiting request. Owned by its waiter (shared with posted wake-ups).
  struct Ticket {
    explicit Ticket(const boost::asio::any_io_executor& executor) : timer(executor) {}
    boost::asio::steady_timer timer;
    bool woken = false;  // a wake-up arrived while the waiter was not waiting on the timer
    int depth = 0;       // requests waiting when it joined, itself included
    std::uint64_t id = 0;
  };

  AdmissionQueue(FairQueueRules rules, std::chrono::milliseconds timeout);
  /// A plain FIFO of `size` (one class, one tenant at a time).
  AdmissionQueue(int size, std::chrono::milliseconds timeout);

  /// Joins (`waiter`'s id is set here); nullptr when the queue is full (or off) or the tenant
  /// holds its max_queued places (`refused` says which).
  std::shared_ptr<Ticket> join(const boost::asio::any_io_executor& executor,
                               FairQueue::Waiter waiter, FairQueue::Joined& refused);
  std::shared_ptr<Ticket> join(const boost::asio::any_io_executor& executor);
  /// Leaves without a slot (timed out, the client left) and wakes the next head.
  void leave(const std::shared_ptr<Ticket>& ticket);
  /// Leaves with a slot: its tenant is charged its cost. Wakes the next head.
  void dispatched(const std::shared_ptr<Ticket>& ticket);
  /// True when `ticket` is first in line now among the waiters whose class could take a slot
  /// (`admissible`: bit c for class c, as the route's backends say).
  bool at_head(const Ticket& ticket,
               FairQueue::ClassMask admissible = FairQueue::kEveryClass) const;
  /// Wakes the first waiter of each class (any thread): a slot may have come free, and only the
  /// waiters' own routes can say which class it suits.
  void wake_head();
  /// A request dispatched from here ended: its tenant is charged `actual` tokens in place of
  /// `estimated`; `completion_tokens` (when known) teaches the mean output of a request.
  void settle(std::string_view tenant, double weight, double estimated, double actual,
              std::optional<std::int64_t> completion_tokens);
  /// The output tokens a request that names no max_tokens is estimated at (the mean of the
  /// requests settled here; 256 before the first).
  double learned_output() const;
  /// Requests waiting now.
  int depth() const { return depth_.load(std::memory_order_relaxed); }
  int size() const { return size_; }
  int max_queued_per_tenant() const { return max_queued_per_tenant_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  /// Calls visit(tenant, asked class, waiting) for every tenant and class with someone waiting.
  template <typename Visit>
  void each_waiting(Visit&& visit) const {
    std::lock_guard lock(mu_);
    std::unordered_map<std::string, std::array<int, 8>> counts;
    fair_.each_waiter([&](const FairQueue::Waiter& waiter) {
      auto& per_class = counts.try_emplace(waiter.tenant, std::array<int, 8>{}).first->second;
      ++per_class[static_cast<std::size_t>(std::clamp(waiter.priority_class, 0, 7))];
    });
    for (const auto& [tenant, per_class] : counts)
      for (int priority_class = 0; priority_class < 8; ++priority_class)
        if (per_class[static_cast<std::size_t>(priority_class)] > 0)
          visit(std::string_view(tenant), priority_class,
                per_class[static_cast<std::size_t>(priority_class)]);
  }

 private:
  const int size_;
  const int max_queued_per_tenant_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  FairQueue fair_;
  std::unordered_map<std::uint64_t, std::shared_ptr<Ticket>> tickets_;
  std::uint64_t next_id_ = 1;
  double output_sum_ = 0;
  double output_count_ = 0;
  std::atomic<int> depth_{0};
};

}  // namespace llmux::gateway
