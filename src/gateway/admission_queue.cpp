// SPDX-License-Identifier: Apache-2.0
#include "gateway/admission_queue.hpp"

#include <algorithm>
#include <vector>

#include <boost/asio/post.hpp>

#include "core/clock.hpp"

namespace llmux::gateway {

namespace {
FairQueueRules fifo_rules(int size) {
  FairQueueRules rules;
  rules.size = size;
  return rules;
}
}  // namespace

AdmissionQueue::AdmissionQueue(FairQueueRules rules, std::chrono::milliseconds timeout)
    : size_(rules.size),
      max_queued_per_tenant_(rules.max_queued_per_tenant),
      timeout_(timeout),
      fair_(std::move(rules)) {}

AdmissionQueue::AdmissionQueue(int size, std::chrono::milliseconds timeout)
    : AdmissionQueue(fifo_rules(size), timeout) {}

std::shared_ptr<AdmissionQueue::Ticket> AdmissionQueue::join(
    const boost::asio::any_io_executor& executor, FairQueue::Waiter waiter,
    FairQueue::Joined& refused) {
  std::lock_guard lock(mu_);
  waiter.id = next_id_++;
  if (waiter.joined_ns == 0) waiter.joined_ns = mono_ns();
  refused = fair_.join(std::move(waiter));
  if (refused != FairQueue::Joined::yes) return nullptr;
  auto ticket = std::make_shared<Ticket>(executor);
  ticket->id = next_id_ - 1;
  tickets_.emplace(ticket->id, ticket);
  ticket->depth = fair_.waiting();
  depth_.store(fair_.waiting(), std::memory_order_relaxed);
  return ticket;
}

std::shared_ptr<AdmissionQueue::Ticket> AdmissionQueue::join(
    const boost::asio::any_io_executor& executor) {
  FairQueue::Joined refused = FairQueue::Joined::yes;
  return join(executor, FairQueue::Waiter{0, "anonymous", 1, 0, 0, 1}, refused);
}

void AdmissionQueue::leave(const std::shared_ptr<Ticket>& ticket) {
  {
    std::lock_guard lock(mu_);
    if (!fair_.remove(ticket->id)) return;
    tickets_.erase(ticket->id);
    depth_.store(fair_.waiting(), std::memory_order_relaxed);
  }
  wake_head();
}

void AdmissionQueue::dispatched(const std::shared_ptr<Ticket>& ticket) {
  {
    std::lock_guard lock(mu_);
    if (!fair_.dispatch(ticket->id)) return;
    tickets_.erase(ticket->id);
    depth_.store(fair_.waiting(), std::memory_order_relaxed);
  }
  wake_head();
}

bool AdmissionQueue::at_head(const Ticket& ticket, FairQueue::ClassMask admissible) const {
  std::lock_guard lock(mu_);
  const auto next = fair_.next(mono_ns(), admissible);
  return next && next->id == ticket.id;
}

void AdmissionQueue::wake_head() {
  std::vector<std::shared_ptr<Ticket>> heads;
  {
    std::lock_guard lock(mu_);
    const std::int64_t now = mono_ns();
    const FairQueue::ClassMask classes = fair_.waiting_classes();
    for (int priority_class = 0; priority_class < 32; ++priority_class) {
      if (((classes >> priority_class) & 1u) == 0) continue;
      const auto next = fair_.next(now, FairQueue::ClassMask{1} << priority_class);
      if (!next) continue;
      if (const auto found = tickets_.find(next->id); found != tickets_.end())
        heads.push_back(found->second);
    }
  }
  // Each timer is its waiter's: cancelled on its own worker.
  for (auto& head : heads)
    boost::asio::post(head->timer.get_executor(), [head] {
      head->woken = true;
      head->timer.cancel();
    });
}

void AdmissionQueue::settle(std::string_view tenant, double weight, double estimated, double actual,
                            std::optional<std::int64_t> completion_tokens) {
  std::lock_guard lock(mu_);
  fair_.correct(tenant, weight, estimated, actual);
  if (completion_tokens && *completion_tokens >= 0) {
    // A running mean that forgets slowly: the last ~1,000 requests weigh most.
    output_sum_ = output_sum_ * 0.999 + static_cast<double>(*completion_tokens);
    output_count_ = output_count_ * 0.999 + 1;
  }
}

double AdmissionQueue::learned_output() const {
  std::lock_guard lock(mu_);
  return output_count_ > 0 ? output_sum_ / output_count_ : 256.0;
}

}  // namespace llmux::gateway
