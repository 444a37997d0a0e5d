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
  for (Backend* backend : candidates) {
    if (!accept(*backend)) continue;
    const auto report = upstream::fresh_report(*backend, now);
    if (!report) continue;  // stale or never read: after every fresh one
    const int weight = weight_of(*backend);
    const double own = backend->inflight.load(std::memory_order_relaxed);
    const double load =
        (std::max(own, report->running + report->waiting) + report->waiting) / weight;
    const bool better =
        !best || load < best_load ||
        (load == best_load && (report->kv_usage < best_kv ||
                               (report->kv_usage == best_kv && compare_load(*backend, *best) < 0)));
    if (better) {
      best = backend;
      best_load = load;
      best_kv = report->kv_usage;
    }
  }
  if (best) return best;
  return fallback_.select(ctx, candidates, accept);
}

}  // namespace llmux::policy
