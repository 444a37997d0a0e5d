// SPDX-License-Identifier: Apache-2.0
#include "policy/first.hpp"

namespace llmux::policy {

Backend* First::select(const PickContext&, std::span<Backend* const> candidates,
                       FunctionRef<bool(const Backend&)> accept) {
  for (auto* backend : candidates)
    if (accept(*backend)) return backend;
  return nullptr;
}

}  // namespace llmux::policy
