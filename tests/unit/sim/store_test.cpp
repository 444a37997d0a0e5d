// SPDX-License-Identifier: Apache-2.0
// The simulator's in-memory stores: the Responses API store and the /debug/requests timing log.
#include "sim/store.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "sim/timings.hpp"

namespace llmux::sim {
namespace {

StoredResponse stored(std::string text) {
  StoredResponse st;
  st.response["id"] = text;
  st.conversation.push_back(Message{"user", std::move(text)});
  return st;
}

TEST(SimResponseStore, FindsWhatItStores) {
  ResponseStore s(10);
  EXPECT_FALSE(s.contains("resp_a"));
  EXPECT_FALSE(s.conversation("resp_a"));
  s.put("resp_a", stored("a"));
  ASSERT_TRUE(s.find("resp_a"));
  EXPECT_EQ(s.find("resp_a")->response.at("id").as_string(), "a");
  ASSERT_TRUE(s.conversation("resp_a"));
  EXPECT_EQ(s.conversation("resp_a")->at(0).content, "a");
}

TEST(SimResponseStore, EvictsTheOldestPastTheCap) {
  ResponseStore s(2);
  s.put("r1", stored("1"));
  s.put("r2", stored("2"));
  s.put("r1", stored("1b"));  // a replacement keeps its place
  s.put("r3", stored("3"));
  EXPECT_FALSE(s.contains("r1"));
  EXPECT_TRUE(s.contains("r2"));
  EXPECT_TRUE(s.contains("r3"));
}

TEST(SimResponseStore, RunningResponses) {
  ResponseStore s(2);
  EXPECT_EQ(s.running("resp_x"), nullptr);
  s.erase_running("resp_x");  // unknown: nothing happens
  EXPECT_EQ(s.running("resp_x"), nullptr);
}

std::shared_ptr<Timing> timing(std::string id, std::string request_id = {}) {
  auto t = std::make_shared<Timing>();
  t->id = std::move(id);
  t->request_id = std::move(request_id);
  return t;
}

TEST(SimTimingLog, FindsByResponseIdAndRequestId) {
  TimingLog log(10);
  log.remember(timing("cmpl-1", "req-1"));
  log.remember(timing("cmpl-2"));
  ASSERT_TRUE(log.find("cmpl-1"));
  EXPECT_EQ(log.find("req-1"), log.find("cmpl-1"));
  EXPECT_TRUE(log.find("cmpl-2"));
  EXPECT_FALSE(log.find(""));
  EXPECT_FALSE(log.find("cmpl-3"));
}

TEST(SimTimingLog, EvictsTheOldestAndListsTheNewest) {
  TimingLog log(2);
  log.remember(timing("a", "shared"));
  log.remember(timing("b", "shared"));  // the X-Request-Id now names b
  log.remember(timing("c"));
  EXPECT_FALSE(log.find("a"));
  ASSERT_TRUE(log.find("shared"));
  EXPECT_EQ(log.find("shared")->id, "b");
  const auto v = boost::json::parse(log.list_json(1));
  ASSERT_EQ(v.at("data").as_array().size(), 1u);
  EXPECT_EQ(v.at("data").at(0).at("id").as_string(), "c");
  EXPECT_EQ(boost::json::parse(log.list_json(100)).at("data").as_array().size(), 2u);
}

}  // namespace
}  // namespace llmux::sim
