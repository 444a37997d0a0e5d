// SPDX-License-Identifier: Apache-2.0
// The policies by name: each reads its own options (from_options, beside its code).
#include <fmt/format.h>

#include "policy/adaptive.hpp"
#include "policy/consistent_hash.hpp"
#include "policy/first.hpp"
#include "policy/least_inflight.hpp"
#include "policy/least_load.hpp"
#include "policy/options.hpp"
#include "policy/policy.hpp"
#include "policy/power_of_two.hpp"
#include "policy/prefix_aware.hpp"
#include "policy/random.hpp"
#include "policy/round_robin.hpp"

namespace llmux::policy {

namespace {

using MakeFromOptions = std::unique_ptr<Policy> (*)(const Options&, std::string*);

/// The maker of a policy that takes no options: any option is an error.
template <typename PolicyType>
std::unique_ptr<Policy> without_options(const Options& options, std::string* error) {
  auto policy = std::make_unique<PolicyType>();
  if (!no_options(policy->name(), options, error)) return nullptr;
  return policy;
}

struct Registered {
  std::string_view name;
  MakeFromOptions make;
};

constexpr Registered kPolicies[] = {
    {"round_robin", without_options<RoundRobin>},
    {"first", without_options<First>},
    {"least_inflight", without_options<LeastInflight>},
    {"adaptive", without_options<Adaptive>},
    {"power_of_two", without_options<PowerOfTwo>},
    {"random", without_options<RandomUniform>},
    {"weighted", without_options<RandomWeighted>},
    {"consistent_hash", ConsistentHash::from_options},
    {"prefix_aware", PrefixAware::from_options},
    {"least_load", without_options<LeastLoad>},
};

}  // namespace

std::unique_ptr<Policy> make_policy(std::string_view name, const Options& options,
                                    std::string* error) {
  for (const auto& policy : kPolicies)
    if (policy.name == name) return policy.make(options, error);
  if (error) *error = fmt::format("unknown policy '{}'", name);
  return nullptr;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& policy : kPolicies) out.emplace_back(policy.name);
    return out;
  }();
  return names;
}

}  // namespace llmux::policy
