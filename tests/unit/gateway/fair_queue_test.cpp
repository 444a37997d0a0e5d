// SPDX-License-Identifier: Apache-2.0
// FairQueue, the admission queue's order, with given times: strict priority between classes,
// promotion after promote_after, weighted fair queuing by tokens between tenants, no credit
// banked by an idle tenant, corrections by the real tokens, the per-tenant and total limits.
#include "gateway/fair_queue.hpp"

#include <gtest/gtest.h>

#include <map>

namespace llmux::gateway {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

FairQueueRules three_classes() {
  FairQueueRules rules;
  // interactive, default (promoted after 10 s), batch (promoted after 5 s)
  rules.promote_after_ns = {0, 10 * kSecond, 5 * kSecond};
  rules.size = 1000;
  return rules;
}

FairQueue::Waiter waiter(std::uint64_t id, std::string tenant, int priority_class,
                         std::int64_t joined_ns, double cost = 100, double weight = 1) {
  return {id, std::move(tenant), weight, priority_class, joined_ns, cost};
}

TEST(FairQueue, AHigherClassGoesFirstWhateverItsArrival) {
  FairQueue queue(three_classes());
  ASSERT_EQ(queue.join(waiter(1, "nightly", 2, 0)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(2, "team", 1, kSecond)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(3, "alice", 0, 2 * kSecond)), FairQueue::Joined::yes);
  auto next = queue.next(3 * kSecond);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, 3u);
  EXPECT_EQ(next->effective_class, 0);
  ASSERT_TRUE(queue.dispatch(3));
  EXPECT_EQ(queue.next(3 * kSecond)->id, 2u) << "default before batch";
  ASSERT_TRUE(queue.dispatch(2));
  EXPECT_EQ(queue.next(3 * kSecond)->id, 1u);
  ASSERT_TRUE(queue.dispatch(1));
  EXPECT_FALSE(queue.next(3 * kSecond));
}

TEST(FairQueue, AWaiterIsPromotedOneClassPerPromoteAfterOfTheClassItIsIn) {
  FairQueue queue(three_classes());
  EXPECT_EQ(queue.effective_class(2, 4 * kSecond), 2);
  EXPECT_EQ(queue.effective_class(2, 5 * kSecond), 1) << "batch's 5 s";
  EXPECT_EQ(queue.effective_class(2, 14 * kSecond), 1) << "then default's 10 s more";
  EXPECT_EQ(queue.effective_class(2, 15 * kSecond), 0);
  EXPECT_EQ(queue.effective_class(0, 1000 * kSecond), 0);
  EXPECT_EQ(queue.effective_class(1, 10 * kSecond), 0);

  // A batch request waits behind default-class requests only until it is promoted into their
  // class, where it is the oldest.
  ASSERT_EQ(queue.join(waiter(1, "nightly", 2, 0)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(2, "team", 1, kSecond)), FairQueue::Joined::yes);
  EXPECT_EQ(queue.next(4 * kSecond)->id, 2u);
  const auto promoted = queue.next(5 * kSecond);
  EXPECT_EQ(promoted->id, 1u);
  EXPECT_EQ(promoted->effective_class, 1);
  // An interactive request still goes before it.
  ASSERT_EQ(queue.join(waiter(3, "alice", 0, 5 * kSecond)), FairQueue::Joined::yes);
  EXPECT_EQ(queue.next(5 * kSecond)->id, 3u);
}

TEST(FairQueue, PromotionLiftsAClassNotATenantOverItsClassMates) {
  FairQueue queue(three_classes());
  // heavy has three default-class requests waiting since 0 s, light one since 12 s.
  for (std::uint64_t id : {1u, 2u, 3u})
    ASSERT_EQ(queue.join(waiter(id, "heavy", 1, 0)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(4, "light", 1, 12 * kSecond)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.next(12 * kSecond)->id, 1u) << "equal counters: the earlier waiter";
  ASSERT_TRUE(queue.dispatch(1));
  // At 13 s heavy's requests have waited past default's 10 s: the class counts as interactive,
  // and within it light, served less, goes before heavy's older requests.
  const auto next = queue.next(13 * kSecond);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, 4u);
  EXPECT_EQ(next->effective_class, 0);
}

TEST(FairQueue, AWaiterWhoseClassHasNoSlotFreeBlocksNobodyBehindIt) {
  FairQueue queue(three_classes());
  // A batch request promoted to the top of the line keeps batch's share of the slots: when
  // batch has none free, the default-class request behind it goes.
  ASSERT_EQ(queue.join(waiter(1, "nightly", 2, 0)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(2, "team", 1, 14 * kSecond)), FairQueue::Joined::yes);
  EXPECT_EQ(queue.next(15 * kSecond)->id, 1u) << "promoted twice: first in line";
  const FairQueue::ClassMask no_batch = 0b011;
  const auto next = queue.next(15 * kSecond, no_batch);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, 2u);
  EXPECT_FALSE(queue.next(15 * kSecond, 0)) << "nobody admissible: nobody goes";
  EXPECT_EQ(queue.waiting_classes(), FairQueue::ClassMask{0b110});
}

/// Dispatches `rounds` times from a queue where each tenant always has `backlog` waiters,
/// correcting each request with its estimate; counts dispatches per tenant.
std::map<std::string, int> serve_backlogged(
    FairQueue& queue,
    const std::map<std::string, std::pair<double, double>>& tenants,  // name -> (cost, weight)
    int rounds, std::uint64_t& next_id) {
  const int backlog = 3;
  std::map<std::string, int> served;
  for (const auto& [name, cost_and_weight] : tenants)
    for (int i = 0; i < backlog; ++i)
      queue.join(waiter(next_id++, name, 1, 0, cost_and_weight.first, cost_and_weight.second));
  std::map<std::uint64_t, std::string> tenant_of;
  queue.each_waiter([&](const FairQueue::Waiter& w) { tenant_of[w.id] = w.tenant; });
  for (int round = 0; round < rounds; ++round) {
    const auto next = queue.next(0);
    if (!next) break;
    const std::string name = tenant_of.at(next->id);
    EXPECT_TRUE(queue.dispatch(next->id));
    ++served[name];
    const auto& [cost, weight] = tenants.at(name);
    queue.correct(name, weight, cost, cost);
    tenant_of[next_id] = name;
    queue.join(waiter(next_id++, name, 1, 0, cost, weight));
  }
  return served;
}

TEST(FairQueue, BackloggedTenantsShareByWeight) {
  FairQueue queue(three_classes());
  std::uint64_t id = 1;
  const auto served = serve_backlogged(queue, {{"heavy", {100, 3}}, {"light", {100, 1}}}, 400, id);
  // 3:1 to the request, give or take the one in progress.
  EXPECT_NEAR(served.at("heavy"), 300, 1);
  EXPECT_NEAR(served.at("light"), 100, 1);
}

TEST(FairQueue, FairnessIsByTokensNotByRequests) {
  FairQueue queue(three_classes());
  std::uint64_t id = 1;
  // Equal weights; one tenant's requests cost three times the other's.
  const auto served = serve_backlogged(queue, {{"short", {100, 1}}, {"long", {300, 1}}}, 400, id);
  EXPECT_NEAR(served.at("short"), 300, 1);
  EXPECT_NEAR(served.at("long"), 100, 1);
}

TEST(FairQueue, AnIdleTenantBanksNoCredit) {
  FairQueue queue(three_classes());
  std::uint64_t id = 1;
  // "busy" is served alone for 100 requests while "idle" sends nothing.
  serve_backlogged(queue, {{"busy", {100, 1}}}, 100, id);
  const double busy_counter = *queue.counter("busy");
  EXPECT_GE(busy_counter, 100 * 100.0);
  // "idle" starts: lifted to busy's counter, not left at 0 with 100 requests of credit.
  ASSERT_EQ(queue.join(waiter(id++, "idle", 1, 0)), FairQueue::Joined::yes);
  EXPECT_GE(*queue.counter("idle"), busy_counter - 1e-9);
  // From now on they alternate: of the next 20 dispatches, idle takes about half, not all.
  std::map<std::uint64_t, std::string> tenant_of;
  queue.each_waiter([&](const FairQueue::Waiter& w) { tenant_of[w.id] = w.tenant; });
  int idle_served = 0;
  for (int round = 0; round < 20; ++round) {
    const auto next = queue.next(0);
    ASSERT_TRUE(next);
    const std::string name = tenant_of.at(next->id);
    queue.dispatch(next->id);
    queue.correct(name, 1, 100, 100);
    idle_served += name == "idle";
    tenant_of[id] = name;
    queue.join(waiter(id++, name, 1, 0));
  }
  EXPECT_GE(idle_served, 9);
  EXPECT_LE(idle_served, 11);
}

TEST(FairQueue, TheRealTokensCorrectTheEstimate) {
  FairQueue queue(three_classes());
  ASSERT_EQ(queue.join(waiter(1, "a", 1, 0, 1000)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(2, "b", 1, 0, 500)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(3, "a", 1, 0, 1000)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(4, "b", 1, 0, 500)), FairQueue::Joined::yes);
  ASSERT_TRUE(queue.dispatch(1));
  EXPECT_DOUBLE_EQ(*queue.counter("a"), 1000);
  // a's request was estimated at 1,000 tokens and used 100: a is charged 100 in all.
  queue.correct("a", 1, 1000, 100);
  EXPECT_DOUBLE_EQ(*queue.counter("a"), 100);
  EXPECT_EQ(queue.next(0)->id, 2u) << "b, at 0, still goes first";
  ASSERT_TRUE(queue.dispatch(2));  // b: 500
  EXPECT_EQ(queue.next(0)->id, 3u) << "a, at 100, before b at 500 (uncorrected, a had 1,000)";
}

TEST(FairQueue, ATenantMayHoldOnlyItsShareOfTheQueue) {
  FairQueueRules rules = three_classes();
  rules.size = 4;
  rules.max_queued_per_tenant = 2;
  FairQueue queue(rules);
  EXPECT_EQ(queue.join(waiter(1, "batch", 2, 0)), FairQueue::Joined::yes);
  EXPECT_EQ(queue.join(waiter(2, "batch", 2, 0)), FairQueue::Joined::yes);
  EXPECT_EQ(queue.join(waiter(3, "batch", 2, 0)), FairQueue::Joined::tenant_full);
  EXPECT_EQ(queue.waiting("batch"), 2);
  EXPECT_EQ(queue.join(waiter(4, "alice", 0, 0)), FairQueue::Joined::yes);
  EXPECT_EQ(queue.join(waiter(5, "bob", 0, 0)), FairQueue::Joined::yes);
  EXPECT_EQ(queue.join(waiter(6, "carol", 0, 0)), FairQueue::Joined::queue_full);
  EXPECT_TRUE(queue.remove(1));
  EXPECT_FALSE(queue.remove(1));
  EXPECT_EQ(queue.join(waiter(7, "batch", 2, 0)), FairQueue::Joined::yes);
}

TEST(FairQueue, ATenantWithNothingWaitingOrRunningIsForgotten) {
  FairQueue queue(three_classes());
  ASSERT_EQ(queue.join(waiter(1, "a", 1, 0)), FairQueue::Joined::yes);
  ASSERT_EQ(queue.join(waiter(2, "b", 1, 0)), FairQueue::Joined::yes);
  EXPECT_EQ(queue.tenants_kept(), 2u);
  ASSERT_TRUE(queue.remove(2));  // b's client left
  EXPECT_EQ(queue.tenants_kept(), 1u);
  ASSERT_TRUE(queue.dispatch(1));
  EXPECT_EQ(queue.tenants_kept(), 1u) << "a's request runs: its correction is to come";
  queue.correct("a", 1, 100, 80);
  EXPECT_EQ(queue.tenants_kept(), 0u);
  EXPECT_FALSE(queue.counter("a"));
}

}  // namespace
}  // namespace llmux::gateway
