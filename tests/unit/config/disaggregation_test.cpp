// SPDX-License-Identifier: Apache-2.0
// `backends[].role` and `routes[].disaggregation` (config/disaggregation.cpp): loaded, defaulted,
// and each mistake named by its field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "config/summary.hpp"
#include "test_util.hpp"

namespace llmux::config {
namespace {

using testing::dump;
using ::testing::HasSubstr;
using testing::on;
using testing::validate_yaml;

std::string fleet(const std::string& role1, const std::string& role2, const std::string& route) {
  return "backends:\n"
         "  - {name: server1, url: \"http://192.0.2.101:30000\"" +
         (role1.empty() ? std::string() : ", role: " + role1) +
         "}\n"
         "  - {name: server2, url: \"http://192.0.2.102:30000\"" +
         (role2.empty() ? std::string() : ", role: " + role2) + "}\nroutes:\n  - {" + route + "}\n";
}

TEST(DisaggregationConfig, RolesAndModesLoad) {
  std::vector<ConfigError> errors;
  const GatewayConfig config = load_yaml(
      fleet("prefill", "decode",
            "backends: [server1, server2], disaggregation: {mode: auto, threshold_tokens: 4000, "
            "max_queued_prefill_tokens: 9000}"),
      errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(config.backends[0].role, BackendRole::prefill);
  EXPECT_EQ(config.backends[1].role, BackendRole::decode);
  const Disaggregation& split = config.routes[0].disaggregation;
  EXPECT_EQ(split.mode, Disaggregation::Mode::automatic);
  EXPECT_EQ(split.threshold_tokens, 4000);
  EXPECT_EQ(split.max_queued_prefill_tokens, 9000);
  EXPECT_TRUE(split.enabled());
  EXPECT_TRUE(validate_yaml(fleet("prefill", "decode",
                                  "backends: [server1, server2], disaggregation: {mode: always}"))
                  .empty());
  // Defaults: both roles, no disaggregation.
  const GatewayConfig plain = load_yaml(fleet("", "", "backends: [server1, server2]"), errors);
  EXPECT_EQ(plain.backends[0].role, BackendRole::both);
  EXPECT_FALSE(plain.routes[0].disaggregation.enabled());
  EXPECT_EQ(to_string(BackendRole::prefill), "prefill");
}

TEST(DisaggregationConfig, TheCheckSaysEachRoleAndHowARouteSplits) {
  std::vector<ConfigError> errors;
  GatewayConfig config = load_yaml(
      fleet("prefill", "decode",
            "backends: [server1, server2], disaggregation: {mode: auto, threshold_tokens: 4000}"),
      errors);
  ASSERT_TRUE(validate(config).empty());
  const std::string text = describe(config, 2);
  EXPECT_THAT(text, HasSubstr("role prefill"));
  EXPECT_THAT(text, HasSubstr("role decode"));
  EXPECT_THAT(text, HasSubstr("more than 4000 uncached prompt tokens (disaggregation: auto)"));
  config.routes[0].disaggregation.mode = Disaggregation::Mode::always;
  EXPECT_THAT(describe(config, 2), HasSubstr("(disaggregation: always)"));
}

TEST(DisaggregationConfig, MistakesNameTheirField) {
  std::vector<ConfigError> errors;
  load_yaml(fleet("prefiller", "", "backends: [server1, server2]"), errors);
  ASSERT_EQ(on(errors, "backends[0].role").size(), 1u) << dump(errors);
  errors.clear();
  load_yaml(fleet("", "", "backends: [server1, server2], disaggregation: {mode: sometimes, x: 1}"),
            errors);
  EXPECT_EQ(on(errors, "routes[0].disaggregation.mode").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "routes[0].disaggregation.x").size(), 1u) << dump(errors);
  // A disaggregated route needs a backend that prefills...
  auto no_prefill = validate_yaml(
      fleet("decode", "decode", "backends: [server1, server2], disaggregation: {mode: always}"));
  ASSERT_EQ(on(no_prefill, "routes[0].disaggregation").size(), 1u) << dump(no_prefill);
  // ... any route one that answers ...
  auto only_prefill = validate_yaml(fleet("prefill", "prefill",
                                          "backends: [server1, server2], "
                                          "disaggregation: {mode: always}"));
  ASSERT_EQ(on(only_prefill, "routes[0].backends").size(), 1u) << dump(only_prefill);
  // ... and a prefill-only backend a route that disaggregates.
  auto idle_prefill = validate_yaml(fleet("prefill", "", "backends: [server1, server2]"));
  ASSERT_EQ(on(idle_prefill, "backends[0].role").size(), 1u) << dump(idle_prefill);
  EXPECT_THAT(on(idle_prefill, "backends[0].role")[0].reason, HasSubstr("no route"));
  auto negative = validate_yaml(fleet(
      "", "", "backends: [server1, server2], disaggregation: {mode: auto, threshold_tokens: -1}"));
  EXPECT_EQ(on(negative, "routes[0].disaggregation.threshold_tokens").size(), 1u) << dump(negative);
}

}  // namespace
}  // namespace llmux::config
