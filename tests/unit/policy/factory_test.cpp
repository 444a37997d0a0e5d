// SPDX-License-Identifier: Apache-2.0
// make_policy / policy_names / available.
#include <gtest/gtest.h>

#include "policy/policy.hpp"
#include "test_util.hpp"

namespace llmux::policy {
namespace {

TEST(Factory, EveryListedNameMakesThatPolicy) {
  ASSERT_FALSE(policy_names().empty());
  for (const auto& name : policy_names()) {
    auto p = make_policy(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->name(), name);
  }
}

TEST(Factory, KnowsRoundRobinAndFirst) {
  EXPECT_NE(make_policy("round_robin"), nullptr);
  EXPECT_NE(make_policy("first"), nullptr);
}

TEST(Factory, UnknownNameGivesNullptr) {
  EXPECT_EQ(make_policy("round-robin"), nullptr);
  EXPECT_EQ(make_policy(""), nullptr);
  EXPECT_EQ(make_policy("ROUND_ROBIN"), nullptr);
}

TEST(Factory, OptionsAreCheckedAndErrorsSayWhy) {
  std::string why;
  EXPECT_EQ(make_policy("first", {{"bogus", "1"}}, &why), nullptr);
  EXPECT_NE(why.find("bogus"), std::string::npos) << why;
  EXPECT_EQ(make_policy("nope", {}, &why), nullptr);
  EXPECT_NE(why.find("unknown policy 'nope'"), std::string::npos) << why;
  EXPECT_NE(make_policy("round_robin", {}, &why), nullptr);
}

TEST(Available, TriedAndSaturation) {
  testing::Pool pool({1, 1});
  TriedSet tried;
  EXPECT_TRUE(tried.empty());
  EXPECT_TRUE(available(pool[0], tried));
  tried.add(pool[0]);
  EXPECT_FALSE(tried.empty());
  EXPECT_FALSE(available(pool[0], tried));
  EXPECT_TRUE(available(pool[1], tried));
  pool[1].max_inflight = 3;
  pool[1].inflight = 2;
  EXPECT_TRUE(available(pool[1], tried));
  pool[1].inflight = 3;
  EXPECT_FALSE(available(pool[1], tried));
}

}  // namespace
}  // namespace llmux::policy
