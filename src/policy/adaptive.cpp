// SPDX-License-Identifier: Apache-2.0
#include "policy/adaptive.hpp"

#include <algorithm>
#include <cmath>

#include "policy/least_inflight.hpp"

namespace llmux::policy {

double Adaptive::marginal_gain(const Backend& backend, double prior_single) {
  const int inflight = backend.inflight.load(std::memory_order_relaxed);
  const double after =
      (inflight + 1) * backend.observations.capacity.rate(inflight + 1, prior_single);
  const double now =
      inflight > 0 ? inflight * backend.observations.capacity.rate(inflight, prior_single) : 0.0;
  return after - now;
}

Backend* Adaptive::select(const PickContext&, std::span<Backend* const> candidates,
                          FunctionRef<bool(const Backend&)> accept) {
  const std::size_t count = candidates.size();
  if (count == 0) return nullptr;
  // The prior for backends without samples: the others' mean single-stream rate.
  double sum = 0;
  int with = 0;
  for (auto* backend : candidates) {
    const double rate = backend->observations.capacity.single_rate();
    if (rate > 0) {
      sum += rate;
      ++with;
    }
  }
  const double prior = with > 0 ? sum / with : 50.0;
  const std::size_t start = rotate_.fetch_add(1, std::memory_order_relaxed) % count;
  Backend* best = nullptr;
  double best_gain = 0;
  for (std::size_t k = 0; k < count; ++k) {
    Backend* backend = candidates[(start + k) % count];
    if (!accept(*backend)) continue;
    const double gain = marginal_gain(*backend, prior);
    // Within 1% counts as a tie (samples are noisy): then the less loaded.
    const double tol = 0.01 * std::max(std::abs(gain), std::abs(best_gain));
    if (!best || gain > best_gain + tol ||
        (gain >= best_gain - tol && compare_load(*backend, *best) < 0)) {
      best = backend;
      best_gain = gain;
    }
  }
  return best;
}

std::unique_ptr<AttemptObserver> Adaptive::on_dispatch(Backend& backend) {
  return std::make_unique<DecodeRateSampler>(backend);
}

void DecodeRateSampler::start_window(std::uint64_t tokens, std::int64_t now_ns, int inflight) {
  started_ = true;
  start_ns_ = now_ns;
  start_tokens_ = tokens;
  start_inflight_ = inflight;
}

void DecodeRateSampler::on_first_token(std::uint64_t tokens, std::int64_t now_ns) {
  start_window(tokens, now_ns, backend_.inflight.load(std::memory_order_relaxed));
}

void DecodeRateSampler::on_tokens(std::uint64_t tokens, std::int64_t now_ns) {
  if (!started_) {
    if (tokens > 0) on_first_token(tokens, now_ns);
    return;
  }
  const std::int64_t elapsed = now_ns - start_ns_;
  if (elapsed < window_ns_) return;
  const int inflight = backend_.inflight.load(std::memory_order_relaxed);
  const double rate =
      static_cast<double>(tokens - start_tokens_) * 1e9 / static_cast<double>(elapsed);
  backend_.observations.capacity.add_sample((start_inflight_ + inflight + 1) / 2, rate);
  start_window(tokens, now_ns, inflight);
}

}  // namespace llmux::policy
