// SPDX-License-Identifier: Apache-2.0
#include "policy/least_load.hpp"

#include <algorithm>

#include "core/clock.hpp"
#include "upstream/load_report.hpp"

namespace llmux::policy {

Backend* LeastLoad::select(const PickContext& ctx, std::span<Backend* const> candidates,
                           FunctionRef<bool(const Backend&)> accept) {
  const std::int64_t now = mono_ns();
  Backend* best = nullptr;
  double best_load = 0, best_kv = 0;
  for (Backend* b : candidates) {
    if (!accept(*b)) continue;
    const auto r = upstream::fresh_report(*b, now);
    if (!r) continue;  // stale or never read: after every fresh one
    const int w = weight_of(*b);
    const double own = b->inflight.load(std::memory_order_relaxed);
    const double load = (std::max(own, r->running + r->waiting) + r->waiting) / w;
    const bool better =
        !best || load < best_load ||
        (load == best_load &&
         (r->kv_usage < best_kv || (r->kv_usage == best_kv && compare_load(*b, *best) < 0)));
    if (better) {
      best = b;
      best_load = load;
      best_kv = r->kv_usage;
    }
  }
  if (best) return best;
  return fallback_.select(ctx, candidates, accept);
}

}  // namespace llmux::policy
