#include "policy/policy.hpp"
#include "policy/round_robin.hpp"

namespace llmux::policy {

bool available(const BackendState& b, const TriedSet& tried) {
  if (tried.contains(b)) return false;
  if (b.max_inflight > 0 && b.inflight.load(std::memory_order_relaxed) >= b.max_inflight)
    return false;
  return true;
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
