// SPDX-License-Identifier: Apache-2.0
// The route table: first match on path, prefix, method and the body's model.
#include <gtest/gtest.h>

#include <vector>

#include "gateway/router.hpp"

namespace llmux::gateway {
namespace {

config::Route route(std::string path, std::string prefix, std::vector<std::string> methods = {},
                    std::vector<std::string> models = {}) {
  config::Route r;
  r.match.path = std::move(path);
  r.match.path_prefix = std::move(prefix);
  r.match.methods = std::move(methods);
  r.match.models = std::move(models);
  return r;
}

// The seed's table: responses pinned, chat round-robined, the rest to server1.
const std::vector<config::Route> kSeed = {
    route("", "/v1/responses"), route("/v1/chat/completions", "", {"POST"}), route("", "")};

TEST(Router, SeedTableInOrder) {
  EXPECT_EQ(match_route(kSeed, "POST", "/v1/responses", ""), 0u);
  EXPECT_EQ(match_route(kSeed, "GET", "/v1/responses/resp_1", ""), 0u);
  EXPECT_EQ(match_route(kSeed, "POST", "/v1/responses/resp_1/cancel", ""), 0u);
  EXPECT_EQ(match_route(kSeed, "POST", "/v1/chat/completions", "m"), 1u);
  EXPECT_EQ(match_route(kSeed, "GET", "/v1/chat/completions", ""), 2u) << "method must match";
  EXPECT_EQ(match_route(kSeed, "POST", "/v1/chat/completions/x", ""), 2u) << "path is exact";
  EXPECT_EQ(match_route(kSeed, "POST", "/v1/completions", ""), 2u);
}

TEST(Router, ModelsAndNoMatch) {
  const std::vector<config::Route> routes = {route("", "/v1", {}, {"big", "small"}),
                                             route("", "/v1/embeddings")};
  EXPECT_EQ(match_route(routes, "POST", "/v1/chat/completions", "big"), 0u);
  EXPECT_EQ(match_route(routes, "POST", "/v1/chat/completions", "small"), 0u);
  EXPECT_EQ(match_route(routes, "POST", "/v1/chat/completions", "other"), std::nullopt);
  EXPECT_EQ(match_route(routes, "POST", "/v1/embeddings", "other"), 1u);
  EXPECT_EQ(match_route(routes, "POST", "/health", "big"), std::nullopt);
  EXPECT_EQ(match_route({}, "GET", "/", ""), std::nullopt);
}

}  // namespace
}  // namespace llmux::gateway
