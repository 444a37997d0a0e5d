// SPDX-License-Identifier: Apache-2.0
// ReplicaPresence: a sorted set of replica ids scored by their last beat.
#include "state/replicas.hpp"

#include <algorithm>
#include <vector>

#include "core/clock.hpp"

namespace llmux::state {

namespace {

// ZADD this replica, drop those older than the cut, keep the set a while past the last beat, and
// count.
constexpr const char* kBeat =
    "redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[4])\n"
    "return redis.call('ZCARD', KEYS[1])\n";

}  // namespace

ReplicaPresence::ReplicaPresence(std::shared_ptr<RedisClient> redis, std::string prefix,
                                 std::string id, std::chrono::milliseconds stale_after,
                                 std::function<void(int)> on_count)
    : redis_(std::move(redis)),
      key_(std::move(prefix) + "replicas"),
      id_(std::move(id)),
      stale_after_(stale_after) {
  state_->on_count = std::move(on_count);
  // Also as soon as the connection is up (at start-up it is not yet when the first beat comes).
  listener_ = redis_->on_up([this] { beat(unix_ms()); });
}

ReplicaPresence::~ReplicaPresence() {
  redis_->remove_on_up(listener_);
}

void ReplicaPresence::beat(std::int64_t now_ms) {
  if (!redis_->up()) return;
  const std::int64_t stale = std::max<std::int64_t>(1, stale_after_.count());
  redis_->fire({"EVAL", kBeat, "1", key_, std::to_string(now_ms), id_,
                std::to_string(now_ms - stale), std::to_string(stale * 4)},
               [state = state_](const RedisReply& reply) {
                 if (reply.kind != RedisReply::Kind::integer || reply.integer < 1) return;
                 const int replicas =
                     static_cast<int>(std::min<std::int64_t>(reply.integer, 1 << 20));
                 if (state->count.exchange(replicas, std::memory_order_relaxed) != replicas &&
                     state->on_count)
                   state->on_count(replicas);
               });
}

}  // namespace llmux::state
