// QuotaLimiter on an injected clock: rpm accuracy at 3x the rate, tpm charged after the fact,
// concurrency permits, Retry-After, and the local share while the shared counters are away.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <thread>
#include <vector>

#include "auth/quota.hpp"

namespace llmux::auth {
namespace {

using ::testing::HasSubstr;

// 2026-12-03T10:00:00Z plus 12.345 s: windows are aligned to the epoch, the test's start is not.
constexpr std::int64_t kT0 = 1'796'292'000'000 + 12'345;
constexpr std::int64_t kMinute = 60'000;

KeyEntry key(std::int64_t rpm, std::int64_t tpm = 0, std::int64_t concurrent = 0) {
  KeyEntry k;
  k.name = "alice";
  k.limits.requests_per_minute = rpm;
  k.limits.tokens_per_minute = tpm;
  k.limits.concurrent = concurrent;
  return k;
}

/// Drives `key` at `per_minute` requests from `start` for `minutes`; returns the admitted count
/// of requests sent at or after `count_from`.
int drive(QuotaLimiter& q, const KeyEntry& k, int per_minute, int minutes, std::int64_t start,
          std::int64_t count_from) {
  int admitted = 0;
  const int n = per_minute * minutes;
  for (int i = 0; i < n; ++i) {
    const std::int64_t now = start + static_cast<std::int64_t>(i) * kMinute / per_minute;
    const auto a = q.admit(k, now);
    if (a.decision.ok() && now >= count_from) ++admitted;
  }
  return admitted;
}

/// Counters that can be switched off, counting in memory while on.
class FlakyCounters final : public QuotaCounters {
 public:
  bool up = true;
  int calls = 0;
  std::optional<std::int64_t> incr(std::string_view key, std::int64_t w,
                                   std::int64_t amount) override {
    ++calls;
    if (!up) return std::nullopt;
    return store_.incr(key, w, amount);
  }

 private:
  MemoryQuotaCounters store_;
};

TEST(QuotaWindow, Estimate) {
  EXPECT_DOUBLE_EQ(window::estimate(100, 10, 0), 110);
  EXPECT_DOUBLE_EQ(window::estimate(100, 10, 30'000), 60);
  EXPECT_DOUBLE_EQ(window::estimate(100, 10, 60'000), 10);
}

TEST(Quota, RequestsPerMinuteWithinFivePercentAtThreeTimesTheRate) {
  QuotaLimiter q;
  const KeyEntry k = key(600);
  const int admitted = drive(q, k, 2000, 3, kT0, kT0 + kMinute);
  // The last two minutes: 2 x 600.
  EXPECT_NEAR(admitted, 1200, 60) << admitted;
}

TEST(Quota, NoDoubleBurstAtAWindowBoundary) {
  // 60 requests at the very end of one window, 60 more at the start of the next: a fixed window
  // would admit all 120 within a second; the sliding window admits only the first 60.
  QuotaLimiter q;
  const KeyEntry k = key(60);
  const std::int64_t w = (kT0 / kMinute + 1) * kMinute;
  int admitted = 0;
  for (int i = 0; i < 60; ++i) admitted += q.admit(k, w - 500).decision.ok();
  for (int i = 0; i < 60; ++i) admitted += q.admit(k, w + 100).decision.ok();
  EXPECT_EQ(admitted, 60);
}

TEST(Quota, RetryAfterIsWhenTheWindowAdmitsAgain) {
  QuotaLimiter q;
  const KeyEntry k = key(60);
  const std::int64_t w = (kT0 / kMinute + 1) * kMinute;  // the start of a window
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(q.admit(k, w).decision.ok()) << i;
  const auto refused = q.admit(k, w);
  ASSERT_EQ(refused.decision.status, 429);
  // 60 in this window: the next one starts at +60 s with an estimate of 60, which falls to 59
  // (room for one) after another 1 s.
  EXPECT_EQ(refused.decision.retry_after_s, 61);
  const auto err = boost::json::parse(refused.decision.body).as_object().at("error").as_object();
  EXPECT_EQ(err.at("code").as_string(), "rate_limit_exceeded");
  EXPECT_EQ(err.at("type").as_string(), "requests");
  EXPECT_THAT(std::string(err.at("message").as_string()), HasSubstr("try again in 61s"));
  EXPECT_FALSE(q.admit(k, w + 60'500).decision.ok());
  EXPECT_TRUE(q.admit(k, w + 61'000).decision.ok());

  // Half way through the next window: 30 of the previous 60 still count, so 29 more fit now
  // (one was admitted at +61 s), and the next room comes within the second.
  const std::int64_t mid = w + kMinute + 30'000;
  int admitted = 0;
  while (q.admit(k, mid).decision.ok()) ++admitted;
  EXPECT_EQ(admitted, 29);
  const auto again = q.admit(k, mid);
  EXPECT_EQ(again.decision.retry_after_s, 1);
  EXPECT_TRUE(q.admit(k, mid + 1'000).decision.ok());
}

TEST(Quota, TokensAreChargedAfterTheRequest) {
  QuotaLimiter q;
  const KeyEntry k = key(0, 1000);
  const std::int64_t w = (kT0 / kMinute + 1) * kMinute;
  // Under the budget: admitted, even if the request then uses more than the whole budget.
  auto a = q.admit(k, w + 1'000);
  ASSERT_TRUE(a.decision.ok());
  q.charge(k, 1200, w + 2'000);
  const auto refused = q.admit(k, w + 3'000);
  ASSERT_EQ(refused.decision.status, 429);
  const auto err = boost::json::parse(refused.decision.body).as_object().at("error").as_object();
  EXPECT_EQ(err.at("type").as_string(), "tokens");
  EXPECT_EQ(err.at("code").as_string(), "rate_limit_exceeded");
  // Next window: 1200 * (1 - g) <= 999 when g >= 0.1675, i.e. 10.05 s in: 57 s + 10.05 s.
  EXPECT_EQ(refused.decision.retry_after_s, 68);
  EXPECT_FALSE(q.admit(k, w + kMinute + 10'000).decision.ok());
  EXPECT_TRUE(q.admit(k, w + kMinute + 10'100).decision.ok());
}

TEST(Quota, TokensUnderTheBudgetAdmit) {
  QuotaLimiter q;
  const KeyEntry k = key(0, 1000);
  q.charge(k, 999, kT0);
  EXPECT_TRUE(q.admit(k, kT0).decision.ok());
  q.charge(k, 1, kT0);
  EXPECT_FALSE(q.admit(k, kT0).decision.ok());
  // No token limit: charging is free and admission unaffected.
  const KeyEntry free = key(0, 0);
  q.charge(free, 1'000'000, kT0);
  EXPECT_TRUE(q.admit(free, kT0).decision.ok());
}

TEST(Quota, ConcurrencyPermitsAreReleased) {
  QuotaLimiter q;
  const KeyEntry k = key(0, 0, 2);
  auto a = q.admit(k, kT0);
  auto b = q.admit(k, kT0);
  ASSERT_TRUE(a.decision.ok());
  ASSERT_TRUE(b.decision.ok());
  EXPECT_TRUE(a.permit.holds());
  EXPECT_EQ(q.concurrent("alice"), 2);
  const auto c = q.admit(k, kT0);
  EXPECT_EQ(c.decision.status, 429);
  EXPECT_EQ(c.decision.retry_after_s, 1);
  EXPECT_FALSE(c.permit.holds());
  EXPECT_EQ(q.concurrent("alice"), 2);  // the refused one took nothing
  {
    QuotaLimiter::Permit moved = std::move(a.permit);  // moving does not release twice
    EXPECT_EQ(q.concurrent("alice"), 2);
  }
  EXPECT_EQ(q.concurrent("alice"), 1);
  EXPECT_TRUE(q.admit(k, kT0).decision.ok());  // its permit is dropped at once
  b.permit.reset();
  EXPECT_EQ(q.concurrent("alice"), 0);
}

TEST(Quota, RefusedByRateReleasesTheConcurrencySlot) {
  QuotaLimiter q;
  const KeyEntry k = key(1, 0, 5);
  auto first = q.admit(k, kT0);
  ASSERT_TRUE(first.decision.ok());
  EXPECT_EQ(q.admit(k, kT0).decision.status, 429);
  EXPECT_EQ(q.concurrent("alice"), 1);
}

TEST(Quota, SharedCountersAreUsedWhileUp) {
  auto shared = std::make_shared<FlakyCounters>();
  QuotaLimiter q(shared, 0.25);
  const KeyEntry k = key(600);
  const int admitted = drive(q, k, 2000, 3, kT0, kT0 + kMinute);
  EXPECT_NEAR(admitted, 1200, 60);  // the full limit: the store counts every replica
  EXPECT_TRUE(q.shared_ok());
  EXPECT_GT(shared->calls, 0);
}

TEST(Quota, LocalShareWhileSharedCountersAreDown) {
  auto shared = std::make_shared<FlakyCounters>();
  shared->up = false;
  QuotaLimiter q(shared, 0.25);
  const KeyEntry k = key(600);
  const int admitted = drive(q, k, 2000, 3, kT0, kT0 + kMinute);
  EXPECT_NEAR(admitted, 300, 15) << admitted;  // 2 x 600 x 0.25
  EXPECT_FALSE(q.shared_ok());
  const auto refused = q.admit(k, kT0 + 3 * kMinute);
  EXPECT_THAT(refused.decision.body, HasSubstr("Limit 150"));
}

TEST(Quota, FallbackStartsFromWhatThisReplicaAdmitted) {
  auto shared = std::make_shared<FlakyCounters>();
  QuotaLimiter q(shared, 0.5);
  const KeyEntry k = key(100);
  const std::int64_t w = (kT0 / kMinute + 1) * kMinute;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(q.admit(k, w).decision.ok());
  shared->up = false;  // the store goes away: 50 admitted here already fill this replica's share
  EXPECT_FALSE(q.admit(k, w + 1).decision.ok());
  shared->up = true;  // back: the shared count (50 of 100) applies again
  EXPECT_TRUE(q.admit(k, w + 2).decision.ok());
  EXPECT_TRUE(q.shared_ok());
}

TEST(Quota, ThreadSafeUnderContention) {
  QuotaLimiter q;
  const KeyEntry k = key(500, 0, 1000);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto a = q.admit(k, kT0);
        if (a.decision.ok()) ++admitted;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_LE(admitted.load(), 500);
  EXPECT_GE(admitted.load(), 450);
  EXPECT_EQ(q.concurrent("alice"), 0);
}

TEST(Quota, LocalShareDefaultsToOnePerReplica) {
  config::Quotas q;
  EXPECT_DOUBLE_EQ(local_share(q, 3), 1.0 / 3);
  EXPECT_DOUBLE_EQ(local_share(q, 0), 1.0);
  q.local_share = 0.5;
  EXPECT_DOUBLE_EQ(local_share(q, 3), 0.5);
}

TEST(MemoryQuotaCounters, KeepsTheLastWindows) {
  MemoryQuotaCounters c;
  EXPECT_EQ(c.incr("a", 0, 0), 0);
  EXPECT_EQ(c.incr("a", 0, 5), 5);
  EXPECT_EQ(c.incr("a", 60'000, 2), 2);
  EXPECT_EQ(c.incr("a", 0, 0), 5);
  EXPECT_EQ(c.incr("b", 0, 0), 0);
  EXPECT_EQ(c.incr("a", 120'000, 1), 1);
  EXPECT_EQ(c.incr("a", 180'000, 1), 1);  // window 0 goes
  EXPECT_EQ(c.incr("a", 0, 0), 0);
  EXPECT_EQ(c.incr("a", 60'000, 0), 2);
}

}  // namespace
}  // namespace llmux::auth
