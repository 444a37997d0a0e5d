// SPDX-License-Identifier: Apache-2.0
#pragma once
// random and weighted: one available backend drawn at random — uniformly (`random`), or with
// probability proportional to its weight (`weighted`). Stateless apart from a per-thread
// generator; no allocation with up to 64 candidates.
#include <cstddef>

#include "policy/policy.hpp"

namespace llmux::policy {

class Random : public Policy {
 public:
  explicit Random(bool weighted) : weighted_(weighted) {}
  std::string_view name() const override { return weighted_ ? "weighted" : "random"; }
  Backend* select(const PickContext&, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;

 private:
  bool weighted_;
};

/// `random`, by the registry's name.
struct RandomUniform final : Random {
  RandomUniform() : Random(false) {}
};
/// `weighted`, by the registry's name.
struct RandomWeighted final : Random {
  RandomWeighted() : Random(true) {}
};

/// Up to `wanted` (1 or 2) distinct available candidates drawn at random, each with probability
/// proportional to its weight (`weighted`) or uniformly, into `out`; returns how many.
std::size_t draw_available(std::span<Backend* const> candidates,
                           FunctionRef<bool(const Backend&)> accept, bool weighted,
                           std::size_t wanted, Backend** out);

}  // namespace llmux::policy
