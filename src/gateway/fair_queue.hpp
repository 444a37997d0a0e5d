// SPDX-License-Identifier: Apache-2.0
#pragma once
// The order of a route's admission queue (gateway/admission_queue.hpp), as plain state: no lock,
// no clock, no I/O. Times are given to it; tests/unit/fair_queue_test.cpp drives it so.
//
// Between priority classes (config `priorities.classes`, highest first): strict priority, a
// waiter of a higher class always goes first, except that a class whose oldest waiter has waited
// longer than the class's `promote_after` counts as one class higher (and one more after each
// further `promote_after` of the class it reached): a flood of interactive requests delays batch
// requests, it never starves them. The class is promoted, not the one request: within it the
// tenants still share by their counters (a tenant whose requests wait long because it sends many
// does not jump ahead of its class-mates). Promotion changes the order only: a waiter takes a
// slot by the capacity rules of the class it asked for (its `priority_class`), and a waiter
// whose class has no slot free is passed over (`admissible`), so it blocks nobody behind it.
//
// Within a class: weighted fair queuing between tenants by tokens, with a virtual token counter
// per tenant as in "Fairness in Serving Large Language Models" (Sheng et al., OSDI 2024). A
// tenant's counter is the service it was given, in tokens divided by its weight; the tenant with
// the lowest counter goes next, its oldest waiter of the class first. A waiter is charged its
// estimated tokens when it leaves the queue for a backend (dispatch), and the difference to its
// real tokens when its request ends (correct). A tenant that starts waiting after having had
// nobody waiting has its counter lifted to the lowest counter of the tenants waiting (or, when
// nobody waits, to the counter of the tenant served last): time spent idle banks no credit to
// spend later in a burst, while a tenant that keeps waiting keeps its place.
//
// What is kept is bounded by the waiters and the requests in flight: a tenant with neither is
// forgotten (with it, any service it had beyond the others'; it would be lifted again anyway).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmux::gateway {

struct FairQueueRules {
  /// Per class, highest first: how long a waiter of the class waits before it counts as one
  /// class higher (0: never; the highest class is never promoted).
  std::vector<std::int64_t> promote_after_ns{0};
  int size = 256;                 // waiters at most
  int max_queued_per_tenant = 0;  // waiters of one tenant at most; 0: only `size`
};

class FairQueue {
 public:
  struct Waiter {
    std::uint64_t id = 0;  // the caller's, unique among the waiters
    std::string tenant;
    double weight = 1;       // the tenant's (> 0)
    int priority_class = 0;  // as asked: an index into the rules' classes
    std::int64_t joined_ns = 0;
    double cost = 0;  // estimated tokens, charged at dispatch
  };
  enum class Joined { yes, queue_full, tenant_full };
  /// The waiter that goes next, and the class its class counts as now (promotion included).
  struct Next {
    std::uint64_t id = 0;
    int effective_class = 0;
  };

  explicit FairQueue(FairQueueRules rules);

  const FairQueueRules& rules() const { return rules_; }
  Joined join(Waiter waiter);
  /// A waiter that leaves without a slot (timed out, its client left); false if unknown.
  bool remove(std::uint64_t id);
  /// Bit c set: a waiter of class c could take a slot now.
  using ClassMask = std::uint32_t;
  static constexpr ClassMask kEveryClass = ~ClassMask{0};
  /// Who goes next at `now_ns` among the waiters whose class is in `admissible`; nullopt when
  /// none of them waits.
  std::optional<Next> next(std::int64_t now_ns, ClassMask admissible = kEveryClass) const;
  /// The classes someone waits in (as asked), as a mask.
  ClassMask waiting_classes() const;
  /// Waiter `id` leaves for a backend: its tenant is charged its cost. False if unknown.
  bool dispatch(std::uint64_t id);
  /// A request dispatched from here ended with `actual` tokens where `estimated` were charged
  /// (at dispatch, for `tenant` of `weight`): the tenant is charged the difference.
  void correct(std::string_view tenant, double weight, double estimated, double actual);

  /// The class a waiter asking `priority_class` counts as after waiting `waited_ns`.
  int effective_class(int priority_class, std::int64_t waited_ns) const;

  int waiting() const { return static_cast<int>(waiters_.size()); }
  int waiting(std::string_view tenant) const;
  /// A tenant's counter (tokens / weight); nullopt for a tenant it does not keep.
  std::optional<double> counter(std::string_view tenant) const;
  /// Tenants kept (waiting or in flight).
  std::size_t tenants_kept() const { return tenants_.size(); }
  /// Calls visit(waiter) for every waiter, in the order they joined.
  template <typename Visit>
  void each_waiter(Visit&& visit) const {
    for (const Waiter& waiter : waiters_) visit(waiter);
  }

 private:
  struct Tenant {
    double counter = 0;
    int waiting = 0;
    int in_flight = 0;  // dispatched from here, not yet corrected
  };
  void forget_if_idle(std::map<std::string, Tenant, std::less<>>::iterator tenant);

  FairQueueRules rules_;
  std::vector<Waiter> waiters_;  // in the order they joined
  std::map<std::string, Tenant, std::less<>> tenants_;
  double last_served_counter_ = 0;  // the counter of the tenant dispatched last, after its charge
};

}  // namespace llmux::gateway
