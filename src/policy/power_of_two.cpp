// SPDX-License-Identifier: Apache-2.0
#include "policy/power_of_two.hpp"

#include "policy/least_inflight.hpp"
#include "policy/random.hpp"

namespace llmux::policy {

Backend* PowerOfTwo::select(const PickContext&, std::span<Backend* const> candidates,
                            FunctionRef<bool(const Backend&)> accept) {
  Backend* two[2] = {nullptr, nullptr};
  const std::size_t drawn = draw_available(candidates, accept, /*weighted=*/true, 2, two);
  if (drawn == 0) return nullptr;
  if (drawn == 1) return two[0];
  return compare_load(*two[1], *two[0]) < 0 ? two[1] : two[0];
}

}  // namespace llmux::policy
