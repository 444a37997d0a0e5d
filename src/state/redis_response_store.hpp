// SPDX-License-Identifier: Apache-2.0
#pragma once
// The response-id -> backend table shared by gateway replicas through Redis (issue 15), with a
// local MemoryResponseStore in front, so that the common path (a conversation that stays on one
// replica) costs no round trip.
//
// Keys: `<prefix>resp:<id>` = backend name, with a TTL (PX). owner(): the local cache, else one
// GET bounded by `lookup_timeout` (a hit is cached locally); Redis slow, down or failing: nullopt
// (the gateway falls back to its local means). record_owner()/forget(): the local cache, and a
// SET/DEL fired in the background (never waits). What Redis could not take (down, or the connection
// lost before the write) is kept in a bounded pending list, oldest dropped first, and written back
// in order when the connection returns: affinity learned while Redis was away is not lost.
//
// Limits: forget() on one replica does not reach the other replicas' local caches (they keep the
// id until their own TTL or LRU drops it, or they forget it themselves); a written-back write
// may overwrite a newer one of the same id made meanwhile (ids are new per response, so this
// needs the same id learned twice).
//
// Thread safety: as ResponseStore (every call from any thread).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "state/redis_client.hpp"
#include "state/response_store.hpp"

namespace llmux::state {

struct RedisResponseStoreOptions {
  std::string prefix;  // namespaces the keys per deployment, e.g. "llmux:prod:"
  std::chrono::milliseconds ttl{std::chrono::hours(24)};  // in Redis and in the local cache
  std::size_t cache_entries = 100000;                     // the local cache's bound
  std::chrono::milliseconds lookup_timeout{50};           // owner()'s wait for Redis
  std::size_t max_pending = 100000;                       // writes kept while Redis is away
};

class RedisResponseStore final : public ResponseStore {
 public:
  /// `redis` is shared: the same client may serve other stores and counters.
  RedisResponseStore(std::shared_ptr<RedisClient> redis, RedisResponseStoreOptions opts);
  ~RedisResponseStore() override;
  RedisResponseStore(const RedisResponseStore&) = delete;
  RedisResponseStore& operator=(const RedisResponseStore&) = delete;

  boost::asio::awaitable<std::optional<std::string>> owner(std::string_view id) override;
  void record_owner(std::string_view id, std::string_view backend) override;
  void forget(std::string_view id) override;
  /// Ids in the local cache.
  std::size_t size() const override;

  /// Writes waiting for Redis to return.
  std::size_t pending() const;
  /// Pending writes dropped (the list full while Redis was away).
  std::uint64_t pending_dropped() const;
  /// The Redis key of `id`.
  std::string key(std::string_view id) const;
  MemoryResponseStore& cache() { return cache_; }
  RedisClient& redis() { return *redis_; }

 private:
  // A write Redis has not taken yet: SET (backend) or DEL (nullopt).
  struct Write {
    std::string id;
    std::optional<std::string> backend;
  };
  // What the Redis thread's callbacks share with the store; outlives it while callbacks run.
  struct Pending {
    mutable std::mutex mu;
    std::deque<Write> writes;
    std::size_t max = 0;
    std::uint64_t dropped = 0;
    void push(Write write);
  };

  static void send(RedisClient* redis, const std::shared_ptr<Pending>& pending_list,
                   const std::string& key, Write write, std::chrono::milliseconds ttl,
                   bool last_of_flush, const std::string& prefix);
  static void flush(RedisClient* redis, const std::shared_ptr<Pending>& pending_list,
                    const std::string& prefix, std::chrono::milliseconds ttl);

  std::shared_ptr<RedisClient> redis_;
  RedisResponseStoreOptions opts_;
  MemoryResponseStore cache_;
  std::shared_ptr<Pending> pending_;
  std::size_t listener_ = 0;
};

/// Counters shared by replicas, for quotas and usage accounting: `<prefix><key>`. Every call
/// is bounded; nullopt / false means Redis was away, and the caller counts locally instead.
class RedisCounters {
 public:
  RedisCounters(std::shared_ptr<RedisClient> redis, std::string prefix,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(50));

  /// Adds `amount` to the counter `key` and returns its new value. The key expires `window`
  /// after its first increment (the expiry is set once per window, atomically with the
  /// increment): a fixed window; put the window's start in `key` to align windows on the clock.
  boost::asio::awaitable<std::optional<std::int64_t>> incr_window(std::string_view key,
                                                                  std::int64_t amount,
                                                                  std::chrono::milliseconds window);
  /// HINCRBY `hash_key` `field` `amount`, the hash expiring `ttl` after its creation; fired, not
  /// waited for. False when Redis is down (nothing sent: count it locally).
  bool fire_hincrby(std::string_view hash_key, std::string_view field, std::int64_t amount,
                    std::chrono::milliseconds ttl);

  const std::string& prefix() const { return prefix_; }

 private:
  std::shared_ptr<RedisClient> redis_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace llmux::state
