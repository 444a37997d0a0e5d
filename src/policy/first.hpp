// SPDX-License-Identifier: Apache-2.0
#pragma once
// first: the first backend in route order that is available — a primary with failover to the
// next in line. Stateless.
#include "policy/policy.hpp"

namespace llmux::policy {

class First final : public Policy {
 public:
  std::string_view name() const override { return "first"; }
  Backend* select(const PickContext&, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;
};

}  // namespace llmux::policy
