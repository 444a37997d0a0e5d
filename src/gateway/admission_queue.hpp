// SPDX-License-Identifier: Apache-2.0
#pragma once
// Admission control: when every backend of a route is at its max_inflight, a request waits in the
// route's FIFO queue instead of being refused — at most `size` waiting (more: 429) for at most
// `timeout` (then 503), both with Retry-After. While anyone waits, a newcomer queues behind them
// (no barging); only the head of the queue takes a slot. A request that ends on a backend wakes
// the head of each queue that backend serves (the waiter's own worker runs it); a waiter also
// looks again every 100 ms, which covers a slot freed by a request of an earlier configuration.
//
// Thread safety: the queue is shared by every worker under a mutex, taken only when a route is
// saturated (and for depth(), an atomic). A Ticket's timer and flags belong to its waiter's
// worker; other threads only post to it.
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace llmux::gateway {

class AdmissionQueue {
 public:
  /// One waiting request. Owned by its waiter (shared with posted wake-ups).
  struct Ticket {
    explicit Ticket(const boost::asio::any_io_executor& executor) : timer(executor) {}
    boost::asio::steady_timer timer;
    bool woken = false;  // a wake-up arrived while the waiter was not waiting on the timer
    int depth = 0;       // requests waiting when it joined, itself included
  };

  AdmissionQueue(int size, std::chrono::milliseconds timeout) : size_(size), timeout_(timeout) {}

  /// Joins at the back; nullptr when `size` are waiting already (or the queue is off).
  std::shared_ptr<Ticket> join(const boost::asio::any_io_executor& executor);
  /// Leaves (served, timed out, or the client left) and wakes the next head.
  void leave(const std::shared_ptr<Ticket>& ticket);
  /// Whether `ticket` is first in line.
  bool at_head(const Ticket& ticket) const;
  /// Wakes the head (any thread): a slot may have come free.
  void wake_head();
  /// Requests waiting now.
  int depth() const { return depth_.load(std::memory_order_relaxed); }
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  const int size_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<Ticket>> q_;
  std::atomic<int> depth_{0};
};

}  // namespace llmux::gateway
