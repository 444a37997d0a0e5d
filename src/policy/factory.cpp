#include "policy/policy.hpp"
#include "policy/round_robin.hpp"

namespace llmux::policy {

bool available(const BackendState& b, const TriedSet& tried) {
  if (tried.contains(b)) return false;
  if (b.max_inflight > 0 && b.inflight.load(std::memory_order_relaxed) >= b.max_inflight)
    return false;
  return true;
}

Slot pick_and_acquire(Policy& policy, const RequestView& req,
                      std::span<BackendState* const> candidates, TriedSet& tried) {
  // Each round either returns or adds one backend to `tried`, so it ends.
  for (std::size_t round = 0; round <= candidates.size(); ++round) {
    BackendState* b = policy.pick(req, candidates, tried);
    if (!b) return Slot{};
    if (b->try_acquire()) return Slot{b};
    tried.add(*b);  // full since pick() looked: not this one, for this request
  }
  return Slot{};
}

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "round_robin") return std::make_unique<RoundRobin>();
  if (name == "first") return std::make_unique<First>();
  return nullptr;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names{"round_robin", "first"};
  return names;
}

}  // namespace llmux::policy
