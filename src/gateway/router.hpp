// SPDX-License-Identifier: Apache-2.0
#pragma once
// The route table: which route takes a request, by path, method and the body's model. Pure:
// config in, index out; tested without sockets.
#include <optional>
#include <span>
#include <string_view>

#include "config/config.hpp"

namespace llmux::gateway {

/// The first route whose match holds for (method, path, model), by position; nullopt when none
/// does. `path` excludes the query string.
std::optional<std::size_t> match_route(std::span<const config::Route> routes,
                                       std::string_view method, std::string_view path,
                                       std::string_view model);

}  // namespace llmux::gateway
