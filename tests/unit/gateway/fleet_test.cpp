// SPDX-License-Identifier: Apache-2.0
// build_fleet: what a reload keeps (the same backend object, so its health and in-flight count go
// on), what it replaces or retires, and that a failed build changes nothing.
#include "gateway/fleet.hpp"

#include <gtest/gtest.h>

#include "policy/prefix_aware.hpp"

namespace llmux::gateway {
namespace {

config::GatewayConfig make(const std::vector<std::pair<std::string, std::string>>& backends,
                           const std::string& policy = "round_robin") {
  config::GatewayConfig c;
  config::Route r;
  r.name = "all";
  r.policy = policy;
  for (const auto& [name, url] : backends) {
    config::Backend b;
    b.name = name;
    b.url = url;
    c.backends.push_back(b);
    r.backends.push_back(name);
  }
  c.routes.push_back(r);
  EXPECT_TRUE(config::validate(c).empty());
  return c;
}

const upstream::Backend* find(const Fleet& f, const std::string& name) {
  for (const auto& b : f.backends)
    if (b->name == name) return b.get();
  return nullptr;
}

TEST(Fleet, AReloadKeepsABackendWithTheSameAddressAndItsState) {
  auto slots = std::make_shared<BackendSlots>();
  auto first = build_fleet(make({{"a", "http://127.0.0.1:1001"}, {"b", "http://127.0.0.1:1002"}}),
                           nullptr, slots);
  ASSERT_TRUE(first.fleet) << first.errors.at(0);
  EXPECT_EQ(first.fleet->generation, 1u);
  auto& a = *first.fleet->backends[0];
  a.ejections_in_a_row = 2;
  a.inflight = 3;

  auto next = make({{"a", "http://127.0.0.1:1001"}, {"b", "http://127.0.0.1:2002"}});
  next.backends[0].weight = 5;
  auto second = build_fleet(next, first.fleet.get(), slots);
  ASSERT_TRUE(second.fleet);
  EXPECT_EQ(second.fleet->generation, 2u);
  // a: the same object, its state kept, its weight the new one.
  EXPECT_EQ(find(*second.fleet, "a"), &a);
  EXPECT_EQ(a.ejections_in_a_row.load(), 2);
  EXPECT_EQ(a.inflight.load(), 3);
  EXPECT_EQ(a.weight.load(), 5);
  EXPECT_FALSE(a.retired.load());
  // b moved: a new backend, the old one retired, and both alive at once on different slots.
  const auto* old_b = first.fleet->backends[1].get();
  const auto* new_b = find(*second.fleet, "b");
  ASSERT_NE(new_b, nullptr);
  EXPECT_NE(new_b, old_b);
  EXPECT_TRUE(old_b->retired.load());
  EXPECT_NE(new_b->index, old_b->index);
  EXPECT_NE(new_b->uid, old_b->uid);
  EXPECT_EQ(second.fleet->routes[0].backends.at(1), new_b);
  bool said = false;
  for (const auto& c : second.changes) said |= c.find("backend b replaced") != std::string::npos;
  EXPECT_TRUE(said);
}

// A route's policy is made anew by each build and built for its backends, taking over what the
// same route's policy (same name, same options) knew about the backends that stay.
TEST(Fleet, AReloadHandsTheRoutesPolicyStateToTheNextPolicy) {
  auto slots = std::make_shared<BackendSlots>();
  auto table = [](const Fleet& fleet, const std::string& name) {
    const auto& policy = dynamic_cast<const policy::PrefixAware&>(*fleet.routes.at(0).policy);
    return policy.table_of(*find(fleet, name));
  };
  auto first = build_fleet(
      make({{"a", "http://127.0.0.1:1001"}, {"b", "http://127.0.0.1:1002"}}, "prefix_aware"),
      nullptr, slots);
  ASSERT_TRUE(first.fleet) << first.errors.at(0);
  const policy::PrefixTable* kept = table(*first.fleet, "a");
  ASSERT_NE(kept, nullptr);

  auto second = build_fleet(
      make({{"a", "http://127.0.0.1:1001"}, {"b", "http://127.0.0.1:2002"}}, "prefix_aware"),
      first.fleet.get(), slots);
  ASSERT_TRUE(second.fleet);
  EXPECT_NE(second.fleet->routes[0].policy.get(), first.fleet->routes[0].policy.get());
  EXPECT_EQ(table(*second.fleet, "a"), kept) << "a stayed: its table with it";
  EXPECT_NE(table(*second.fleet, "b"), table(*first.fleet, "b")) << "b moved: a new backend";

  auto options_changed =
      make({{"a", "http://127.0.0.1:1001"}, {"b", "http://127.0.0.1:2002"}}, "prefix_aware");
  options_changed.routes[0].policy_options["block_chars"] = "32";
  auto third = build_fleet(options_changed, second.fleet.get(), slots);
  ASSERT_TRUE(third.fleet);
  EXPECT_NE(table(*third.fleet, "a"), kept) << "other options: nothing carried over";
}

TEST(Fleet, ASlotIsReusedOnlyAfterItsBackendIsGone) {
  auto slots = std::make_shared<BackendSlots>();
  auto first = build_fleet(make({{"a", "http://127.0.0.1:1001"}}), nullptr, slots);
  ASSERT_TRUE(first.fleet);
  const int a_slot = first.fleet->backends[0]->index;
  std::shared_ptr<upstream::Backend> running = first.fleet->backends[0];  // a request on it
  auto second = build_fleet(make({{"c", "http://127.0.0.1:1003"}}), first.fleet.get(), slots);
  ASSERT_TRUE(second.fleet);
  EXPECT_NE(second.fleet->backends[0]->index, a_slot);
  first = {};
  running.reset();  // a's last reference gone: its slot is free again
  auto third = build_fleet(make({{"c", "http://127.0.0.1:1003"}, {"d", "http://127.0.0.1:1004"}}),
                           second.fleet.get(), slots);
  ASSERT_TRUE(third.fleet);
  EXPECT_EQ(find(*third.fleet, "d")->index, a_slot);
}

TEST(Fleet, AFailedBuildChangesNothing) {
  auto slots = std::make_shared<BackendSlots>();
  auto first = build_fleet(make({{"a", "http://127.0.0.1:1001"}}), nullptr, slots);
  ASSERT_TRUE(first.fleet);
  auto next = make({{"a", "http://127.0.0.1:1001"}, {"x", "http://host.invalid:1"}});
  next.backends[0].weight = 9;
  auto failed = build_fleet(next, first.fleet.get(), slots);
  EXPECT_FALSE(failed.fleet);
  ASSERT_FALSE(failed.errors.empty());
  EXPECT_NE(failed.errors[0].find("cannot resolve 'host.invalid'"), std::string::npos)
      << failed.errors[0];
  EXPECT_EQ(first.fleet->backends[0]->weight.load(), 1);
  EXPECT_FALSE(first.fleet->backends[0]->retired.load());
}

TEST(Fleet, SettingsAReloadCannotChangeAreKeptWithAWarning) {
  auto running = make({{"a", "http://127.0.0.1:1001"}});
  auto next = running;
  next.threads = 7;
  next.access_log.target = "/tmp/elsewhere.log";
  next.timeouts.connect = std::chrono::milliseconds(123);
  const auto warnings = keep_restart_only(running, next);
  EXPECT_EQ(warnings.size(), 2u);
  EXPECT_EQ(next.threads, running.threads);
  EXPECT_EQ(next.access_log.target, running.access_log.target);
  EXPECT_EQ(next.timeouts.connect, std::chrono::milliseconds(123));  // reloadable: taken
}

}  // namespace
}  // namespace llmux::gateway
