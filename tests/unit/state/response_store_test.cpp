// SPDX-License-Identifier: Apache-2.0
// The embedded response-id table: bounded by entries (least recently used out first) and by time
// (an id unused for ttl is forgotten), refreshed by use, shared by threads.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <string>
#include <thread>
#include <vector>

#include "state/response_store.hpp"

namespace llmux::state {
namespace {

using namespace std::chrono_literals;
using Clock = MemoryResponseStore::Clock;

TEST(ResponseStore, RemembersTheBackendOfAnId) {
  MemoryResponseStore s(100, 1h);
  s.record_owner("resp_a", "server1");
  s.record_owner("resp_b", "server2");
  EXPECT_EQ(s.find("resp_a"), "server1");
  EXPECT_EQ(s.find("resp_b"), "server2");
  EXPECT_EQ(s.find("resp_c"), std::nullopt);
  s.record_owner("resp_a", "server2");  // learned again: the latest backend
  EXPECT_EQ(s.find("resp_a"), "server2");
  EXPECT_EQ(s.size(), 2u);
  s.forget("resp_a");
  EXPECT_EQ(s.find("resp_a"), std::nullopt);
  EXPECT_EQ(s.size(), 1u);
}

TEST(ResponseStore, EvictsTheLeastRecentlyUsedOverItsSize) {
  MemoryResponseStore s(3, 1h);
  s.record_owner("r1", "a");
  s.record_owner("r2", "a");
  s.record_owner("r3", "a");
  EXPECT_TRUE(s.find("r1"));  // r1 used: r2 is now the least recent
  s.record_owner("r4", "b");
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.find("r2"), std::nullopt);
  EXPECT_TRUE(s.find("r1"));
  EXPECT_TRUE(s.find("r3"));
  EXPECT_TRUE(s.find("r4"));
}

TEST(ResponseStore, ForgetsAnIdUnusedForItsTtlAndUseRefreshesIt) {
  MemoryResponseStore s(100, 10s);
  const auto t0 = Clock::now();
  s.put("old", "a", t0);
  s.put("kept", "a", t0);
  EXPECT_TRUE(s.find("kept", t0 + 8s));              // used at 8 s: good until 18 s
  EXPECT_EQ(s.find("old", t0 + 11s), std::nullopt);  // unused past its 10 s
  EXPECT_EQ(s.find("kept", t0 + 15s), "a");
  EXPECT_EQ(s.find("kept", t0 + 26s), std::nullopt);
}

TEST(ResponseStore, SmallerLimitsTrimAtOnce) {
  MemoryResponseStore s(10, 1h);
  for (int i = 0; i < 10; ++i) s.record_owner("r" + std::to_string(i), "a");
  s.set_limits(4, 1h);
  EXPECT_EQ(s.size(), 4u);
  EXPECT_TRUE(s.find("r9"));
  EXPECT_EQ(s.find("r0"), std::nullopt);
}

TEST(ResponseStore, ALargeTableKeepsAboutItsSizeOverItsShards) {
  MemoryResponseStore s(8192, 1h);
  for (int i = 0; i < 20000; ++i) s.record_owner("resp_" + std::to_string(i), "a");
  EXPECT_LE(s.size(), 8192u);
  EXPECT_GE(s.size(), 8000u);
  EXPECT_TRUE(s.find("resp_19999"));  // the newest are all there
  EXPECT_EQ(s.find("resp_0"), std::nullopt);
}

TEST(ResponseStore, OwnerIsTheLookupAsACoroutine) {
  MemoryResponseStore s(10, 1h);
  s.record_owner("resp_x", "server2");
  boost::asio::io_context ioc;
  ResponseStore& store = s;
  auto f = boost::asio::co_spawn(ioc, store.owner("resp_x"), boost::asio::use_future);
  auto g = boost::asio::co_spawn(ioc, store.owner("resp_y"), boost::asio::use_future);
  ioc.run();
  EXPECT_EQ(f.get(), "server2");
  EXPECT_EQ(g.get(), std::nullopt);
}

TEST(ResponseStore, ThreadsLearnAndFindTogether) {
  MemoryResponseStore s(100000, 1h);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string id = "r" + std::to_string(t) + "_" + std::to_string(i);
        s.record_owner(id, "b" + std::to_string(t));
        EXPECT_EQ(s.find(id), "b" + std::to_string(t));
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(s.size(), 8000u);
}

}  // namespace
}  // namespace llmux::state
