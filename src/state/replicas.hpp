// SPDX-License-Identifier: Apache-2.0
#pragma once
// How many gateway replicas share the state store: each replica says it is alive every `period`
// (its id in a sorted set, scored with the time, under `prefix` + "replicas"); those not heard
// from for `stale_after` are dropped, and the set's size is the count. The quotas' local share
// while Redis is away (auth/quota.hpp, `quotas.local_share` unset) is 1 / the last count seen.
//
// Thread safety: beat() from any thread (the server's control thread; the Redis thread, each
// time the connection comes up, so a replica is counted at once and not a period later); count()
// from any thread. The reply arrives on the Redis thread.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "state/redis_client.hpp"

namespace llmux::state {

class ReplicaPresence {
 public:
  /// `id`: this replica, unique among them (e.g. host name and pid); `on_count`: called on the
  /// Redis thread with each new count.
  ReplicaPresence(std::shared_ptr<RedisClient> redis, std::string prefix, std::string id,
                  std::chrono::milliseconds stale_after = std::chrono::seconds(15),
                  std::function<void(int)> on_count = {});
  ~ReplicaPresence();
  ReplicaPresence(const ReplicaPresence&) = delete;
  ReplicaPresence& operator=(const ReplicaPresence&) = delete;
  /// Says this replica is alive (Unix ms `now_ms`) and asks for the count; nothing when Redis is
  /// down (the last count stays).
  void beat(std::int64_t now_ms);
  /// The replicas alive at the last answer (this one included); 1 before any.
  int count() const { return state_->count.load(std::memory_order_relaxed); }

 private:
  struct State {
    std::atomic<int> count{1};
    std::function<void(int)> on_count;
  };
  std::shared_ptr<RedisClient> redis_;
  std::string key_, id_;
  std::chrono::milliseconds stale_after_;
  std::shared_ptr<State> state_ = std::make_shared<State>();  // outlives replies in flight
  std::size_t listener_ = 0;                                  // RedisClient::on_up
};

}  // namespace llmux::state
