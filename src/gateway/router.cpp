// SPDX-License-Identifier: Apache-2.0
#include "gateway/router.hpp"

#include <algorithm>

namespace llmux::gateway {

std::optional<std::size_t> match_route(std::span<const config::Route> routes,
                                       std::string_view method, std::string_view path,
                                       std::string_view model) {
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const auto& match = routes[i].match;
    if (!match.path.empty() && path != match.path) continue;
    if (!match.path_prefix.empty() && !path.starts_with(match.path_prefix)) continue;
    if (!match.methods.empty() &&
        std::find(match.methods.begin(), match.methods.end(), method) == match.methods.end())
      continue;
    if (!match.models.empty() &&
        std::find(match.models.begin(), match.models.end(), model) == match.models.end())
      continue;
    return i;
  }
  return std::nullopt;
}

}  // namespace llmux::gateway
