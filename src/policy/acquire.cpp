// SPDX-License-Identifier: Apache-2.0
// Taking a backend for a request: the policy's choice among the available backends, with one of
// its in-flight slots (or a trial slot, or the last resort when every backend is out).
#include "policy/policy.hpp"

namespace llmux::policy {

bool available(const Backend& backend, const TriedSet& tried, std::int64_t now_ns,
               const upstream::ClassCap& cap) {
  return !tried.contains(backend) && backend.has_capacity(cap) && backend.usable(now_ns) &&
         !(backend.on_trial() && backend.trial_taken.load(std::memory_order_relaxed));
}

Backend* Policy::pick(const PickContext& ctx, std::span<Backend* const> candidates,
                      const TriedSet& tried, std::int64_t now_ns) {
  return select(ctx, candidates, [&](const Backend& backend) {
    return available(backend, tried, now_ns, ctx.class_cap) &&
           (ctx.pinned || !backend.draining.load(std::memory_order_relaxed));
  });
}

namespace {

/// When every backend of the route is out: the least recently failed one that is not tried and
/// has room, so that requests are tried rather than refused by the gateway alone.
upstream::Slot last_resort(std::span<Backend* const> candidates, TriedSet& tried,
                           std::int64_t now_ns, const PickContext& ctx) {
  for (Backend* backend : candidates)  // not every backend is out: no last resort
    if (backend->usable(now_ns) &&
        !(backend->on_trial() && backend->trial_taken.load(std::memory_order_relaxed)))
      return {};
  Backend* best = nullptr;
  for (Backend* backend : candidates) {
    if (tried.contains(*backend) || !backend->has_capacity(ctx.class_cap) ||
        (!ctx.pinned && backend->draining.load(std::memory_order_relaxed)))
      continue;
    if (!best || backend->last_failure_ns.load(std::memory_order_relaxed) <
                     best->last_failure_ns.load(std::memory_order_relaxed))
      best = backend;
  }
  if (!best || !best->try_acquire(ctx.class_cap)) return {};
  return upstream::Slot{best, false, ctx.tokens, best->held_class(ctx.class_cap)};
}

}  // namespace

upstream::Slot pick_and_acquire(Policy& policy, const PickContext& ctx,
                                std::span<Backend* const> candidates, TriedSet& tried,
                                std::int64_t now_ns) {
  // Each round either returns or adds one backend to `tried`, so it ends.
  for (std::size_t round = 0; round <= candidates.size(); ++round) {
    Backend* backend = policy.pick(ctx, candidates, tried, now_ns);
    if (!backend) break;
    if (!backend->try_acquire(ctx.class_cap)) {
      tried.add(*backend);  // full since select() looked: not this one, for this request
      continue;
    }
    const int held_class = backend->held_class(ctx.class_cap);
    if (!backend->on_trial()) return upstream::Slot{backend, false, ctx.tokens, held_class};
    bool taken = false;
    if (backend->trial_taken.compare_exchange_strong(taken, true, std::memory_order_relaxed))
      return upstream::Slot{backend, /*trial=*/true, ctx.tokens, held_class};
    backend->release(held_class);  // another request holds its trial
    tried.add(*backend);
  }
  return last_resort(candidates, tried, now_ns, ctx);
}

}  // namespace llmux::policy
