// The policy registry and what every policy shares (available, pick, pick_and_acquire).
#include <functional>

#include <fmt/format.h>

#include "policy/adaptive.hpp"
#include "policy/least_inflight.hpp"
#include "policy/policy.hpp"
#include "policy/power_of_two.hpp"
#include "policy/random.hpp"
#include "policy/round_robin.hpp"

namespace llmux::policy {

bool available(const Backend& b, const TriedSet& tried, std::int64_t now_ns) {
  return !tried.contains(b) && b.has_capacity() && b.usable(now_ns) &&
         !(b.on_trial() && b.trial_taken.load(std::memory_order_relaxed));
}

Backend* Policy::pick(const PickContext& ctx, std::span<Backend* const> candidates,
                      const TriedSet& tried, std::int64_t now_ns) {
  return select(ctx, candidates, [&](const Backend& b) { return available(b, tried, now_ns); });
}

namespace {

/// When every backend of the route is out: the least recently failed one that is not tried and
/// has room, so that requests are tried rather than refused by the gateway alone.
upstream::Slot last_resort(std::span<Backend* const> candidates, TriedSet& tried,
                           std::int64_t now_ns, std::int64_t tokens) {
  for (Backend* b : candidates)  // not every backend is out: no last resort
    if (b->usable(now_ns) && !(b->on_trial() && b->trial_taken.load(std::memory_order_relaxed)))
      return {};
  Backend* best = nullptr;
  for (Backend* b : candidates) {
    if (tried.contains(*b) || !b->has_capacity()) continue;
    if (!best || b->last_failure_ns.load(std::memory_order_relaxed) <
                     best->last_failure_ns.load(std::memory_order_relaxed))
      best = b;
  }
  if (!best || !best->try_acquire()) return {};
  return upstream::Slot{best, false, tokens};
}

}  // namespace

upstream::Slot pick_and_acquire(Policy& policy, const PickContext& ctx,
                                std::span<Backend* const> candidates, TriedSet& tried,
                                std::int64_t now_ns) {
  // Each round either returns or adds one backend to `tried`, so it ends.
  for (std::size_t round = 0; round <= candidates.size(); ++round) {
    Backend* b = policy.pick(ctx, candidates, tried, now_ns);
    if (!b) break;
    if (!b->try_acquire()) {
      tried.add(*b);  // full since select() looked: not this one, for this request
      continue;
    }
    if (!b->on_trial()) return upstream::Slot{b, false, ctx.tokens};
    bool taken = false;
    if (b->trial_taken.compare_exchange_strong(taken, true, std::memory_order_relaxed))
      return upstream::Slot{b, /*trial=*/true, ctx.tokens};
    b->release();  // another request holds its trial
    tried.add(*b);
  }
  return last_resort(candidates, tried, now_ns, ctx.tokens);
}

namespace {

using Factory = std::function<std::unique_ptr<Policy>(const Options&, std::string*)>;

/// A policy without options: any option is an error.
template <typename P>
Factory without_options(std::string_view name) {
  return [name](const Options& options, std::string* error) -> std::unique_ptr<Policy> {
    if (!options.empty()) {
      if (error)
        *error = fmt::format("policy '{}' has no options (got '{}')", name, options.begin()->first);
      return nullptr;
    }
    return std::make_unique<P>();
  };
}

struct RandomUniform : Random {
  RandomUniform() : Random(false) {}
};
struct RandomWeighted : Random {
  RandomWeighted() : Random(true) {}
};

struct Entry {
  std::string name;
  Factory make;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries{
      {"round_robin", without_options<RoundRobin>("round_robin")},
      {"first", without_options<First>("first")},
      {"least_inflight", without_options<LeastInflight>("least_inflight")},
      {"adaptive", without_options<Adaptive>("adaptive")},
      {"power_of_two", without_options<PowerOfTwo>("power_of_two")},
      {"random", without_options<RandomUniform>("random")},
      {"weighted", without_options<RandomWeighted>("weighted")},
  };
  return entries;
}

}  // namespace

std::unique_ptr<Policy> make_policy(std::string_view name, const Options& options,
                                    std::string* error) {
  for (const auto& e : registry())
    if (e.name == name) return e.make(options, error);
  if (error) *error = fmt::format("unknown policy '{}'", name);
  return nullptr;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : registry()) out.push_back(e.name);
    return out;
  }();
  return names;
}

}  // namespace llmux::policy
