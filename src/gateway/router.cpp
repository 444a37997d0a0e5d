// SPDX-License-Identifier: Apache-2.0
#include "gateway/router.hpp"

#include <algorithm>

namespace llmux::gateway {

std::optional<std::size_t> match_route(std::span<const config::Route> routes,
                                       std::string_view method, std::string_view path,
                                       std::string_view model) {
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const auto& m = routes[i].match;
    if (!m.path.empty() && path != m.path) continue;
    if (!m.path_prefix.empty() && !path.starts_with(m.path_prefix)) continue;
    if (!m.methods.empty() &&
        std::find(m.methods.begin(), m.methods.end(), method) == m.methods.end())
      continue;
    if (!m.models.empty() && std::find(m.models.begin(), m.models.end(), model) == m.models.end())
      continue;
    return i;
  }
  return std::nullopt;
}

}  // namespace llmux::gateway
