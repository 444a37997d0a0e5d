// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fixture of the Redis counters' tests: a redis-server of the test's own on a free loopback
// port (support/redis_server), clients of it, and an injected millisecond clock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "state/redis_client.hpp"
#include "support/redis_server.hpp"
#include "support/test_util.hpp"

namespace llmux::state_test {

using namespace std::chrono_literals;

/// Runs a coroutine to completion on an io_context of its own (as a gateway worker's loop would)
/// and returns its result; the loop outlives the clients.
template <typename T>
T await(boost::asio::awaitable<T> a) {
  thread_local boost::asio::io_context io;
  io.restart();
  auto f = boost::asio::co_spawn(io, std::move(a), boost::asio::use_future);
  io.run();
  return f.get();
}

class RedisFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = test::RedisServer::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    server = std::make_unique<test::RedisServer>();
  }

  /// A client of the test's server ("a replica's"); connected unless `wait_up` is false.
  std::shared_ptr<state::RedisClient> client(bool wait_up = true,
                                             std::size_t max_inflight = 100000) {
    state::RedisOptions o;
    o.max_inflight = max_inflight;
    o.url = *state::RedisUrl::parse(server->url());
    o.backoff_min = 50ms;
    o.backoff_max = 200ms;
    auto c = std::make_shared<state::RedisClient>(o);
    if (wait_up) {
      EXPECT_TRUE(test::poll_until([&] { return c->up(); }, 5s)) << "never connected";
    }
    return c;
  }

  state::RedisReply raw(const std::vector<std::string>& args) { return server->command(args); }

  /// The injected clock (ms).
  std::function<std::int64_t()> clock() {
    return [this] { return now.load(); };
  }

  std::unique_ptr<test::RedisServer> server;
  std::atomic<std::int64_t> now{1'000'000};
};

}  // namespace llmux::state_test
