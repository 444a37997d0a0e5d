#include "policy/adaptive.hpp"

#include "policy/least_inflight.hpp"

namespace llmux::policy {

double Adaptive::predicted_seconds(const Backend& b, std::int64_t output_tokens,
                                   double prior_single) {
  const int n = b.inflight.load(std::memory_order_relaxed) + 1;
  const double rate = b.curve.rate(n, prior_single);
  return static_cast<double>(output_tokens > 0 ? output_tokens : 1) / (rate > 0 ? rate : 1e-9);
}

Backend* Adaptive::select(const PickContext& ctx, std::span<Backend* const> candidates,
                          FunctionRef<bool(const Backend&)> accept) {
  const std::size_t n = candidates.size();
  if (n == 0) return nullptr;
  // The prior for backends without samples: the others' mean single-stream rate.
  double sum = 0;
  int with = 0;
  for (auto* b : candidates) {
    const double r = b->curve.single_rate();
    if (r > 0) {
      sum += r;
      ++with;
    }
  }
  const double prior = with > 0 ? sum / with : 50.0;
  const std::int64_t out = ctx.output_tokens > 0 ? ctx.output_tokens : 256;
  const std::size_t start = rotate_.fetch_add(1, std::memory_order_relaxed) % n;
  Backend* best = nullptr;
  double best_s = 0;
  for (std::size_t k = 0; k < n; ++k) {
    Backend* b = candidates[(start + k) % n];
    if (!accept(*b)) continue;
    const double s = predicted_seconds(*b, out, prior);
    // Within 1% counts as a tie (samples are noisy): then the less loaded.
    if (!best || s < best_s * 0.99 || (s <= best_s * 1.01 && compare_load(*b, *best) < 0)) {
      best = b;
      best_s = s;
    }
  }
  return best;
}

}  // namespace llmux::policy
