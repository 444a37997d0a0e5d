// SPDX-License-Identifier: Apache-2.0
// core/spawn.hpp: a Detached task starts at once in the spawning thread and runs to its first
// wait there; it resumes from its waits and ends; one still suspended when its io_context is
// destroyed is destroyed with it (its locals' destructors run: no frame leaks, LeakSanitizer in
// the asan-test job); each task is its own thread of execution.
#include "core/spawn.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace net = boost::asio;
using llmux::core::Detached;
using llmux::core::spawn;
using namespace std::chrono_literals;

struct Trace {
  std::vector<int> steps;
  int destroyed = 0;
};

// Sets `destroyed` when the frame holding it goes.
struct Sentinel {
  Trace& t;
  ~Sentinel() { ++t.destroyed; }
};

Detached waits_once(net::io_context& ioc, Trace& t, int id, std::chrono::milliseconds d) {
  Sentinel s{t};
  t.steps.push_back(id);
  net::steady_timer timer(ioc, d);
  co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  t.steps.push_back(-id);
}

TEST(Spawn, RunsAtOnceToItsFirstWaitThenResumesAndEnds) {
  net::io_context ioc;
  Trace t;
  net::post(ioc, [&] {
    spawn(ioc, waits_once(ioc, t, 1, 20ms));
    // Started here and then, and suspended at its timer.
    EXPECT_EQ(t.steps, std::vector<int>({1}));
    EXPECT_EQ(t.destroyed, 0);
    spawn(ioc, waits_once(ioc, t, 2, 1ms));
    EXPECT_EQ(t.steps, std::vector<int>({1, 2}));
  });
  ioc.run_for(5s);
  // Each resumed on its own: the shorter wait ended first.
  EXPECT_EQ(t.steps, std::vector<int>({1, 2, -2, -1}));
  EXPECT_EQ(t.destroyed, 2);
}

TEST(Spawn, ATaskStillWaitingIsDestroyedWithItsContext) {
  Trace t;
  {
    net::io_context ioc;
    net::post(ioc, [&] { spawn(ioc, waits_once(ioc, t, 1, 1h)); });
    ioc.run_for(50ms);
    EXPECT_EQ(t.steps, std::vector<int>({1}));
    EXPECT_EQ(t.destroyed, 0);
  }
  EXPECT_EQ(t.steps, std::vector<int>({1})) << "it never resumed";
  EXPECT_EQ(t.destroyed, 1) << "its frame was not destroyed with the io_context";
}

Detached ends_at_once(Trace& t) {
  Sentinel s{t};
  t.steps.push_back(7);
  co_return;
}

TEST(Spawn, ATaskThatNeverWaitsEndsWithinSpawn) {
  net::io_context ioc;
  Trace t;
  net::post(ioc, [&] {
    spawn(ioc, ends_at_once(t));
    EXPECT_EQ(t.steps, std::vector<int>({7}));
    EXPECT_EQ(t.destroyed, 1) << "its frame outlived it";
  });
  ioc.run_for(5s);
  EXPECT_EQ(t.destroyed, 1);
}

}  // namespace
