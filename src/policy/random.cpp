// SPDX-License-Identifier: Apache-2.0
#include "policy/random.hpp"

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace llmux::policy {

namespace {

std::minstd_rand& rng() {
  thread_local std::minstd_rand r{std::random_device{}()};
  return r;
}

/// The available candidates and their weights (1 each when `weighted` is false).
struct Available {
  std::array<Backend*, 64> local;
  std::vector<Backend*> spill;  // more than 64 candidates: never with a validated config
  Backend** b = local.data();
  std::array<std::int64_t, 64> wlocal;
  std::vector<std::int64_t> wspill;
  std::int64_t* w = wlocal.data();
  std::size_t n = 0;
  std::int64_t total = 0;

  Available(std::span<Backend* const> candidates, FunctionRef<bool(const Backend&)> accept,
            bool weighted) {
    if (candidates.size() > local.size()) {
      spill.resize(candidates.size());
      wspill.resize(candidates.size());
      b = spill.data();
      w = wspill.data();
    }
    for (auto* c : candidates) {
      if (!accept(*c)) continue;
      const int weight = weighted ? c->weight.load(std::memory_order_relaxed) : 1;
      b[n] = c;
      w[n] = weight > 0 ? weight : 1;
      total += w[n];
      ++n;
    }
  }
  /// Index drawn with probability w[i] / total, leaving out `skip` (its weight `skip_w`).
  std::size_t draw(std::size_t skip = SIZE_MAX) {
    const std::int64_t sum = skip == SIZE_MAX ? total : total - w[skip];
    std::int64_t r = std::uniform_int_distribution<std::int64_t>(0, sum - 1)(rng());
    for (std::size_t i = 0; i < n; ++i) {
      if (i == skip) continue;
      if (r < w[i]) return i;
      r -= w[i];
    }
    return n - 1;
  }
};

}  // namespace

std::size_t draw_available(std::span<Backend* const> candidates,
                           FunctionRef<bool(const Backend&)> accept, bool weighted, std::size_t k,
                           Backend** out) {
  Available a(candidates, accept, weighted);
  if (a.n == 0 || k == 0) return 0;
  const std::size_t i = a.draw();
  out[0] = a.b[i];
  if (k == 1 || a.n == 1) return 1;
  out[1] = a.b[a.draw(i)];
  return 2;
}

Backend* Random::select(const PickContext&, std::span<Backend* const> candidates,
                        FunctionRef<bool(const Backend&)> accept) {
  Backend* b = nullptr;
  return draw_available(candidates, accept, weighted_, 1, &b) == 1 ? b : nullptr;
}

}  // namespace llmux::policy
