// SPDX-License-Identifier: Apache-2.0
// `tenants` and `priorities`: loaded as written, defaults that hold, and every invalid weight,
// class or limit an error naming its field.
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "test_util.hpp"

namespace llmux::config {
namespace {

using testing::dump;
using testing::on;
using testing::validate_yaml;

std::string with_routes(const std::string& extra) {
  return std::string(testing::kBackends) + "routes:\n  - {backends: [server1, server2]}\n" + extra;
}

TEST(SharingConfig, DefaultsAreThreeClassesAndTheDefaultOneFillsEverySlot) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_yaml(with_routes(""), errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_TRUE(validate(cfg).empty());
  const Priorities& priorities = cfg.priorities;
  ASSERT_EQ(priorities.classes.size(), 3u);
  EXPECT_EQ(priorities.index_of("interactive"), 0);
  EXPECT_EQ(priorities.index_of(priorities.default_class), 1);
  // Requests that name no class keep every slot they had before classes existed.
  EXPECT_EQ(priorities.classes[1].max_share, 1.0);
  EXPECT_LT(priorities.classes[2].max_share, 1.0);
  // vLLM's priority: the default class 0 (vLLM refuses anything else unless it schedules by
  // priority), lower runs first.
  EXPECT_EQ(priorities.vllm_priority(1), 0);
  EXPECT_LT(priorities.vllm_priority(0), 0);
  EXPECT_GT(priorities.vllm_priority(2), 0);
  EXPECT_EQ(cfg.tenants.weight("nobody"), 1.0);
}

TEST(SharingConfig, LoadsTenantsClassesAndKeyCaps) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_yaml(with_routes(R"(
tenants: {header: X-Team, weights: {alice: 3, nightly: 0.5}, max_queued: 10}
priorities:
  header: X-Class
  default: normal
  refuse_above_key_cap: true
  classes:
    - {name: urgent, vllm_priority: -5}
    - {name: normal, max_share: 0.8, promote_after: 2s}
auth:
  keys:
    - {name: ci, key: sk-ci-1, priority: normal, max_priority: normal}
)"),
                                errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_TRUE(validate(cfg).empty()) << dump(validate(cfg));
  EXPECT_EQ(cfg.tenants.header, "X-Team");
  EXPECT_EQ(cfg.tenants.weight("alice"), 3.0);
  EXPECT_EQ(cfg.tenants.weight("nightly"), 0.5);
  EXPECT_EQ(cfg.tenants.max_queued, 10);
  EXPECT_EQ(cfg.priorities.header, "X-Class");
  EXPECT_TRUE(cfg.priorities.refuse_above_key_cap);
  ASSERT_EQ(cfg.priorities.classes.size(), 2u);
  EXPECT_EQ(cfg.priorities.vllm_priority(0), -5);
  EXPECT_EQ(cfg.priorities.vllm_priority(1), 0);
  EXPECT_EQ(cfg.priorities.classes[1].promote_after, std::chrono::seconds(2));
  EXPECT_DOUBLE_EQ(cfg.priorities.classes[1].max_share, 0.8);
  ASSERT_EQ(cfg.auth.keys.size(), 1u);
  EXPECT_EQ(cfg.auth.keys[0].priority, "normal");
  EXPECT_EQ(cfg.auth.keys[0].max_priority, "normal");
}

TEST(SharingConfig, EveryInvalidValueIsAnErrorNamingItsField) {
  std::vector<ConfigError> load_errors;
  load_yaml(with_routes("tenants: {weights: {alice: -1, \"bad name\": 2}}\n"), load_errors);
  EXPECT_EQ(on(load_errors, "tenants.weights.alice").size(), 1u) << dump(load_errors);
  EXPECT_EQ(on(load_errors, "tenants.weights.bad name").size(), 1u) << dump(load_errors);

  const auto errors = validate_yaml(with_routes(R"(
tenants: {header: "X Tenant", max_queued: -1}
priorities:
  default: normal
  classes:
    - {name: urgent, max_share: 0.5}
    - {name: urgent, max_share: 0.9}
    - {name: low, max_share: 0}
auth:
  keys:
    - {name: ci, key: sk-ci-1, priority: bacth, max_priority: nope}
)"));
  EXPECT_EQ(on(errors, "tenants.header").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "tenants.max_queued").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "priorities.classes[1].name").size(), 1u) << "duplicate: " << dump(errors);
  const auto above = on(errors, "priorities.classes[1].max_share");
  ASSERT_EQ(above.size(), 1u) << dump(errors);
  EXPECT_NE(above[0].reason.find("more than the class above"), std::string::npos);
  EXPECT_EQ(on(errors, "priorities.classes[2].max_share").size(), 1u) << dump(errors);
  const auto unknown_default = on(errors, "priorities.default");
  ASSERT_EQ(unknown_default.size(), 1u) << dump(errors);
  EXPECT_NE(unknown_default[0].reason.find("known: urgent, urgent, low"), std::string::npos)
      << unknown_default[0].reason;
  EXPECT_EQ(on(errors, "auth.keys[0].priority").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "auth.keys[0].max_priority").size(), 1u) << dump(errors);
}

TEST(SharingConfig, AnEmptyClassListIsAnError) {
  const auto errors = validate_yaml(with_routes("priorities: {classes: []}\n"));
  EXPECT_EQ(on(errors, "priorities.classes").size(), 1u) << dump(errors);
}

}  // namespace
}  // namespace llmux::config
