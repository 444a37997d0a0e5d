// SPDX-License-Identifier: Apache-2.0
#include "gateway/admission_queue.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

namespace llmux::gateway {

std::shared_ptr<AdmissionQueue::Ticket> AdmissionQueue::join(
    const boost::asio::any_io_executor& executor) {
  std::lock_guard lock(mu_);
  if (static_cast<int>(q_.size()) >= size_) return nullptr;
  auto ticket = std::make_shared<Ticket>(executor);
  q_.push_back(ticket);
  ticket->depth = static_cast<int>(q_.size());
  depth_.store(static_cast<int>(q_.size()), std::memory_order_relaxed);
  return ticket;
}

void AdmissionQueue::leave(const std::shared_ptr<Ticket>& ticket) {
  {
    std::lock_guard lock(mu_);
    const auto it = std::find(q_.begin(), q_.end(), ticket);
    if (it == q_.end()) return;
    q_.erase(it);
    depth_.store(static_cast<int>(q_.size()), std::memory_order_relaxed);
  }
  wake_head();
}

bool AdmissionQueue::at_head(const Ticket& ticket) const {
  std::lock_guard lock(mu_);
  return !q_.empty() && q_.front().get() == &ticket;
}

void AdmissionQueue::wake_head() {
  std::shared_ptr<Ticket> head;
  {
    std::lock_guard lock(mu_);
    if (q_.empty()) return;
    head = q_.front();
  }
  // The timer is the waiter's: cancelled on its own worker.
  boost::asio::post(head->timer.get_executor(), [head] {
    head->woken = true;
    head->timer.cancel();
  });
}

}  // namespace llmux::gateway
