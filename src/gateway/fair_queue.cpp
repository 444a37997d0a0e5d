// SPDX-License-Identifier: Apache-2.0
#include "gateway/fair_queue.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace llmux::gateway {

FairQueue::FairQueue(FairQueueRules rules) : rules_(std::move(rules)) {
  if (rules_.promote_after_ns.empty()) rules_.promote_after_ns.push_back(0);
}

FairQueue::Joined FairQueue::join(Waiter waiter) {
  if (static_cast<int>(waiters_.size()) >= rules_.size) return Joined::queue_full;
  auto found = tenants_.find(waiter.tenant);
  if (rules_.max_queued_per_tenant > 0 && found != tenants_.end() &&
      found->second.waiting >= rules_.max_queued_per_tenant)
    return Joined::tenant_full;
  waiter.priority_class =
      std::clamp(waiter.priority_class, 0, static_cast<int>(rules_.promote_after_ns.size()) - 1);
  if (found == tenants_.end() || found->second.waiting == 0) {
    // Starts waiting: no credit from the time it had nobody waiting.
    double floor = std::numeric_limits<double>::infinity();
    for (const auto& [name, tenant] : tenants_)
      if (tenant.waiting > 0) floor = std::min(floor, tenant.counter);
    if (floor == std::numeric_limits<double>::infinity()) floor = last_served_counter_;
    if (found == tenants_.end()) found = tenants_.emplace(waiter.tenant, Tenant{floor}).first;
    found->second.counter = std::max(found->second.counter, floor);
  }
  ++found->second.waiting;
  waiters_.push_back(std::move(waiter));
  return Joined::yes;
}

bool FairQueue::remove(std::uint64_t id) {
  const auto it = std::find_if(waiters_.begin(), waiters_.end(),
                               [id](const Waiter& waiter) { return waiter.id == id; });
  if (it == waiters_.end()) return false;
  const auto tenant = tenants_.find(it->tenant);
  waiters_.erase(it);
  if (tenant != tenants_.end()) {
    --tenant->second.waiting;
    forget_if_idle(tenant);
  }
  return true;
}

int FairQueue::effective_class(int priority_class, std::int64_t waited_ns) const {
  int current = priority_class;
  std::int64_t left = waited_ns;
  while (current > 0) {
    const std::int64_t after = rules_.promote_after_ns[static_cast<std::size_t>(current)];
    if (after <= 0 || left < after) break;
    left -= after;
    --current;
  }
  return current;
}

std::optional<FairQueue::Next> FairQueue::next(std::int64_t now_ns, ClassMask admissible) const {
  const auto allowed = [admissible](int priority_class) {
    return ((admissible >> std::min(priority_class, 31)) & 1u) != 0;
  };
  // Each class counts as the class its oldest waiter was promoted to: the class whose count is
  // highest goes (ties: the one whose oldest waiter came first). A promotion lifts the class of
  // a starved request, its class-mates with it, so that within a class the tenants still share
  // by their counters.
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  std::array<std::int64_t, 32> oldest;
  oldest.fill(kNone);
  for (const Waiter& waiter : waiters_) {
    const auto index = static_cast<std::size_t>(std::min(waiter.priority_class, 31));
    if (allowed(waiter.priority_class)) oldest[index] = std::min(oldest[index], waiter.joined_ns);
  }
  int chosen_class = -1, chosen_effective = 0;
  for (int priority_class = 0; priority_class < 32; ++priority_class) {
    const std::int64_t joined = oldest[static_cast<std::size_t>(priority_class)];
    if (joined == kNone) continue;
    const int effective = effective_class(priority_class, now_ns - joined);
    if (chosen_class < 0 || effective < chosen_effective ||
        (effective == chosen_effective &&
         joined < oldest[static_cast<std::size_t>(chosen_class)])) {
      chosen_class = priority_class;
      chosen_effective = effective;
    }
  }
  if (chosen_class < 0) return std::nullopt;
  // In it: the tenant with the lowest counter (ties: the earlier waiter), its earliest waiter.
  const Waiter* chosen = nullptr;
  double chosen_counter = 0;
  for (const Waiter& waiter : waiters_) {  // in join order: the first of each tenant is its oldest
    if (std::min(waiter.priority_class, 31) != chosen_class) continue;
    const auto tenant = tenants_.find(waiter.tenant);
    const double counter = tenant == tenants_.end() ? 0 : tenant->second.counter;
    if (!chosen || counter < chosen_counter) {
      chosen = &waiter;
      chosen_counter = counter;
    }
  }
  return Next{chosen->id, chosen_effective};
}

FairQueue::ClassMask FairQueue::waiting_classes() const {
  ClassMask mask = 0;
  for (const Waiter& waiter : waiters_) mask |= ClassMask{1} << std::min(waiter.priority_class, 31);
  return mask;
}

bool FairQueue::dispatch(std::uint64_t id) {
  const auto it = std::find_if(waiters_.begin(), waiters_.end(),
                               [id](const Waiter& waiter) { return waiter.id == id; });
  if (it == waiters_.end()) return false;
  auto tenant = tenants_.find(it->tenant);
  if (tenant != tenants_.end()) {
    tenant->second.counter += it->cost / std::max(it->weight, 1e-9);
    last_served_counter_ = tenant->second.counter;
    --tenant->second.waiting;
    ++tenant->second.in_flight;
  }
  waiters_.erase(it);
  return true;
}

void FairQueue::correct(std::string_view tenant_name, double weight, double estimated,
                        double actual) {
  const auto tenant = tenants_.find(tenant_name);
  if (tenant == tenants_.end()) return;  // forgotten since (a reload's queue is new)
  tenant->second.counter += (actual - estimated) / std::max(weight, 1e-9);
  if (tenant->second.in_flight > 0) --tenant->second.in_flight;
  forget_if_idle(tenant);
}

int FairQueue::waiting(std::string_view tenant_name) const {
  const auto tenant = tenants_.find(tenant_name);
  return tenant == tenants_.end() ? 0 : tenant->second.waiting;
}

std::optional<double> FairQueue::counter(std::string_view tenant_name) const {
  const auto tenant = tenants_.find(tenant_name);
  if (tenant == tenants_.end()) return std::nullopt;
  return tenant->second.counter;
}

void FairQueue::forget_if_idle(std::map<std::string, Tenant, std::less<>>::iterator tenant) {
  if (tenant->second.waiting == 0 && tenant->second.in_flight == 0) tenants_.erase(tenant);
}

}  // namespace llmux::gateway
