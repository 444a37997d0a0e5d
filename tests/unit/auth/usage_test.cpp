// SPDX-License-Identifier: Apache-2.0
// UsageLedger: aggregation by hour, filtering by key and time, retention, CSV and JSON output,
// and the admin query's times.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <thread>
#include <vector>

#include "auth/usage.hpp"

namespace llmux::auth {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kH10 = 1'796'292'000;  // 2026-12-03T10:00:00Z
constexpr std::int64_t kHour = 3600;

std::unique_ptr<MemoryUsageLedger> sample() {
  auto ledger = std::make_unique<MemoryUsageLedger>();
  MemoryUsageLedger& l = *ledger;
  l.add("alice", "qwen", "server1", kH10 + 5, {100, 40, 10});
  l.add("alice", "qwen", "server1", kH10 + 3599, {200, 0, 20});
  l.add("alice", "qwen", "server2", kH10 + 60, {1, 0, 1});
  l.add("bob", "qwen", "server1", kH10 + 61, {7, 7, 3});
  l.add("alice", "qwen", "server1", kH10 + kHour, {5, 0, 5});  // the next hour
  return ledger;
}

TEST(UsageLedger, AggregatesPerKeyModelBackendAndHour) {
  const auto rows = sample()->query({});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], (UsageRow{kH10, "alice", "qwen", "server1", 2, 300, 40, 30}));
  EXPECT_EQ(rows[1], (UsageRow{kH10, "alice", "qwen", "server2", 1, 1, 0, 1}));
  EXPECT_EQ(rows[2], (UsageRow{kH10, "bob", "qwen", "server1", 1, 7, 7, 3}));
  EXPECT_EQ(rows[3], (UsageRow{kH10 + kHour, "alice", "qwen", "server1", 1, 5, 0, 5}));
}

TEST(UsageLedger, FiltersByKey) {
  const auto rows = sample()->query({"bob"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].key, "bob");
  EXPECT_TRUE(sample()->query({"carol"}).empty());
}

TEST(UsageLedger, FiltersByTimeRangeOfOverlappingHours) {
  const auto ledger = sample();
  const MemoryUsageLedger& l = *ledger;
  // [10:30, 11:00): only the 10:00 hour overlaps.
  auto rows = l.query({"", kH10 + 1800, kH10 + kHour});
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& r : rows) EXPECT_EQ(r.hour, kH10);
  // [11:00, 11:00:01): only the 11:00 hour.
  rows = l.query({"alice", kH10 + kHour, kH10 + kHour + 1});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].hour, kH10 + kHour);
  EXPECT_TRUE(l.query({"", kH10 - kHour, kH10}).empty());
  EXPECT_TRUE(l.query({"", kH10 + 2 * kHour, kH10 + 3 * kHour}).empty());
}

TEST(UsageLedger, RetentionDropsOldHours) {
  MemoryUsageLedger l(std::chrono::hours(2));
  l.add("a", "m", "b", kH10, {1, 0, 1});
  l.add("a", "m", "b", kH10 + kHour, {1, 0, 1});
  EXPECT_EQ(l.rows(), 2u);
  l.add("a", "m", "b", kH10 + 2 * kHour, {1, 0, 1});  // 10:00 falls out of the last 2 hours
  EXPECT_EQ(l.rows(), 2u);
  const auto rows = l.query({});
  EXPECT_EQ(rows.front().hour, kH10 + kHour);
  l.add("a", "m", "b", kH10, {1, 0, 1});  // too old to keep
  EXPECT_EQ(l.rows(), 2u);
}

TEST(UsageLedger, RowsAreBounded) {
  MemoryUsageLedger l(std::chrono::hours(24), 2);
  l.add("a", "m1", "b", kH10, {1, 0, 1});
  l.add("a", "m2", "b", kH10, {1, 0, 1});
  l.add("a", "m3", "b", kH10, {1, 0, 1});
  l.add("a", "m4", "b", kH10, {2, 0, 2});
  const auto rows = l.query({});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].model, "(other)");
  EXPECT_EQ(rows[0].requests, 2);
  EXPECT_EQ(rows[0].prompt_tokens, 3);
}

TEST(UsageCsv, ExactFormat) {
  const std::string csv = usage_csv(sample()->query({}));
  EXPECT_EQ(csv,
            "hour,key,model,backend,requests,prompt_tokens,cached_tokens,completion_tokens,"
            "total_tokens\n"
            "2026-12-03T10:00:00Z,alice,qwen,server1,2,300,40,30,330\n"
            "2026-12-03T10:00:00Z,alice,qwen,server2,1,1,0,1,2\n"
            "2026-12-03T10:00:00Z,bob,qwen,server1,1,7,7,3,10\n"
            "2026-12-03T11:00:00Z,alice,qwen,server1,1,5,0,5,10\n");
}

TEST(UsageCsv, QuotesFieldsThatNeedIt) {
  MemoryUsageLedger l;
  l.add("a", "org/model,v2", "say \"hi\"", kH10, {1, 0, 1});
  EXPECT_THAT(
      usage_csv(l.query({})),
      HasSubstr("\n2026-12-03T10:00:00Z,a,\"org/model,v2\",\"say \"\"hi\"\"\",1,1,0,1,2\n"));
  EXPECT_EQ(usage_csv({}),
            "hour,key,model,backend,requests,prompt_tokens,cached_tokens,"
            "completion_tokens,total_tokens\n");
}

TEST(UsageJson, Shape) {
  const UsageQuery q{"alice", kH10, kH10 + 2 * kHour};
  const auto body = boost::json::parse(usage_json(sample()->query(q), q)).as_object();
  EXPECT_EQ(body.at("object").as_string(), "usage");
  EXPECT_EQ(body.at("key").as_string(), "alice");
  EXPECT_EQ(body.at("from").as_string(), "2026-12-03T10:00:00Z");
  EXPECT_EQ(body.at("to").as_string(), "2026-12-03T12:00:00Z");
  const auto& data = body.at("data").as_array();
  ASSERT_EQ(data.size(), 3u);
  const auto& row = data[0].as_object();
  EXPECT_EQ(row.at("hour").as_string(), "2026-12-03T10:00:00Z");
  EXPECT_EQ(row.at("hour_unix").as_int64(), kH10);
  EXPECT_EQ(row.at("key").as_string(), "alice");
  EXPECT_EQ(row.at("model").as_string(), "qwen");
  EXPECT_EQ(row.at("backend").as_string(), "server1");
  EXPECT_EQ(row.at("requests").as_int64(), 2);
  EXPECT_EQ(row.at("prompt_tokens").as_int64(), 300);
  EXPECT_EQ(row.at("cached_tokens").as_int64(), 40);
  EXPECT_EQ(row.at("completion_tokens").as_int64(), 30);
  EXPECT_EQ(row.at("total_tokens").as_int64(), 330);
  const auto& totals = body.at("totals").as_object();
  EXPECT_EQ(totals.at("requests").as_int64(), 4);
  EXPECT_EQ(totals.at("prompt_tokens").as_int64(), 306);
  EXPECT_EQ(totals.at("cached_tokens").as_int64(), 40);
  EXPECT_EQ(totals.at("completion_tokens").as_int64(), 36);
  EXPECT_EQ(totals.at("total_tokens").as_int64(), 342);
  // No filter: nulls.
  const auto all = boost::json::parse(usage_json({}, UsageQuery{})).as_object();
  EXPECT_TRUE(all.at("key").is_null());
  EXPECT_TRUE(all.at("from").is_null());
  EXPECT_TRUE(all.at("to").is_null());
  EXPECT_TRUE(all.at("data").as_array().empty());
}

TEST(UsageTime, ParsesUnixSecondsRfc3339AndDates) {
  EXPECT_EQ(parse_time("1796292000"), kH10);
  EXPECT_EQ(parse_time("2026-12-03T10:00:00Z"), kH10);
  EXPECT_EQ(parse_time("2026-12-03t10:00:00z"), kH10);
  EXPECT_EQ(parse_time("2026-12-03 10:00:00Z"), kH10);
  EXPECT_EQ(parse_time("2026-12-03T10:00:00.999Z"), kH10);
  EXPECT_EQ(parse_time("2026-12-03T11:30:00+01:30"), kH10);
  EXPECT_EQ(parse_time("2026-12-03T08:00:00-02:00"), kH10);
  EXPECT_EQ(parse_time("2026-12-03"), kH10 - 10 * kHour);
  EXPECT_EQ(parse_time("1970-01-01T00:00:00Z"), 0);
  for (const char* bad : {"", "-5", "12abc", "2026-13-01", "2026-02-30", "2026-12-03T24:00:00Z",
                          "2026-12-03T10:00:00", "2026-12-03T10:00Z", "2026-12-03T10:00:00+0100",
                          "2026-12-03T10:00:00.Z", "yesterday"})
    EXPECT_EQ(parse_time(bad), std::nullopt) << bad;
  EXPECT_EQ(format_time(kH10), "2026-12-03T10:00:00Z");
  EXPECT_EQ(format_time(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(format_time(kH10 + 3599), "2026-12-03T10:59:59Z");
}

TEST(UsageQueryParams, FromTheAdminQuery) {
  std::string why;
  auto q = parse_usage_query("alice", "2026-12-03T10:00:00Z", "1796299200", why);
  ASSERT_TRUE(q) << why;
  EXPECT_EQ(q->key, "alice");
  EXPECT_EQ(q->from, kH10);
  EXPECT_EQ(q->to, kH10 + 2 * kHour);
  q = parse_usage_query("", "", "", why);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->from, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(q->to, std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(parse_usage_query("", "soon", "", why));
  EXPECT_THAT(why, HasSubstr("'soon' is not a time"));
  EXPECT_FALSE(parse_usage_query("", "1796299200", "1796292000", why));
  EXPECT_THAT(why, HasSubstr("must be before"));
}

TEST(UsageLedger, ThreadSafeAdds) {
  MemoryUsageLedger l;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) l.add("a", "m", "b", kH10 + i, {1, 0, 2});
    });
  for (auto& t : threads) t.join();
  const auto rows = l.query({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].requests, 4000);
  EXPECT_EQ(rows[0].completion_tokens, 8000);
}

}  // namespace
}  // namespace llmux::auth
