// SPDX-License-Identifier: Apache-2.0
#pragma once
// power_of_two: two available backends drawn at random (weighted by their weights), the less
// loaded of the two taken (least_inflight's comparison). Near least_inflight's balance while
// reading only two backends' counters per pick, and it never herds every gateway replica onto the
// same momentarily emptiest backend. Lock-free; no allocation with up to 64 candidates.
#include "policy/policy.hpp"

namespace llmux::policy {

class PowerOfTwo final : public Policy {
 public:
  std::string_view name() const override { return "power_of_two"; }
  Backend* select(const PickContext&, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;
};

}  // namespace llmux::policy
