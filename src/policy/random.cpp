// SPDX-License-Identifier: Apache-2.0
#include "policy/random.hpp"

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace llmux::policy {

namespace {

std::minstd_rand& rng() {
  thread_local std::minstd_rand engine{std::random_device{}()};
  return engine;
}

/// The available candidates and their weights (1 each when `weighted` is false).
struct Available {
  std::array<Backend*, 64> local;
  std::vector<Backend*> spill;  // more than 64 candidates: never with a validated config
  Backend** backends = local.data();
  std::array<std::int64_t, 64> wlocal;
  std::vector<std::int64_t> wspill;
  std::int64_t* weights = wlocal.data();
  std::size_t n = 0;
  std::int64_t total = 0;

  Available(std::span<Backend* const> candidates, FunctionRef<bool(const Backend&)> accept,
            bool weighted) {
    if (candidates.size() > local.size()) {
      spill.resize(candidates.size());
      wspill.resize(candidates.size());
      backends = spill.data();
      weights = wspill.data();
    }
    for (auto* candidate : candidates) {
      if (!accept(*candidate)) continue;
      backends[n] = candidate;
      weights[n] = weighted ? weight_of(*candidate) : 1;
      total += weights[n];
      ++n;
    }
  }
  /// Index drawn with probability weights[i] / total, leaving out `skip` (and its weight).
  std::size_t draw(std::size_t skip = SIZE_MAX) {
    const std::int64_t sum = skip == SIZE_MAX ? total : total - weights[skip];
    std::int64_t point = std::uniform_int_distribution<std::int64_t>(0, sum - 1)(rng());
    for (std::size_t i = 0; i < n; ++i) {
      if (i == skip) continue;
      if (point < weights[i]) return i;
      point -= weights[i];
    }
    return n - 1;
  }
};

}  // namespace

std::size_t draw_available(std::span<Backend* const> candidates,
                           FunctionRef<bool(const Backend&)> accept, bool weighted,
                           std::size_t wanted, Backend** out) {
  Available usable(candidates, accept, weighted);
  if (usable.n == 0 || wanted == 0) return 0;
  const std::size_t first = usable.draw();
  out[0] = usable.backends[first];
  if (wanted == 1 || usable.n == 1) return 1;
  out[1] = usable.backends[usable.draw(first)];
  return 2;
}

Backend* Random::select(const PickContext&, std::span<Backend* const> candidates,
                        FunctionRef<bool(const Backend&)> accept) {
  Backend* backend = nullptr;
  return draw_available(candidates, accept, weighted_, 1, &backend) == 1 ? backend : nullptr;
}

}  // namespace llmux::policy
