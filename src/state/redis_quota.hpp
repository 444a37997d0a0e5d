// SPDX-License-Identifier: Apache-2.0
#pragma once
// Quota counters shared by gateway replicas through Redis (issue 15), for auth::QuotaLimiter.
//
// incr() runs on the request path, on worker threads, and never waits for Redis: it answers from
// a local mirror and sends its increment in the background. Per (counter, bucket) the mirror
// holds `known`, the total Redis last reported, and `unacked`, this replica's increments sent and
// not answered yet; incr() adds to `unacked`, fires `EVAL incr-window` (INCRBY, and an expiry of
// the buckets kept + a margin set on the key's first increment) and returns known + unacked. Each
// reply sets known to the total it carries and takes its amount out of `unacked`. One connection
// answers in the order it executed, so a reply's total includes exactly the increments of this
// replica answered so far: known + unacked never counts one twice nor loses one, whatever order
// worker threads sent them in. A read (amount 0) answers the mirror too and, when the mirror has
// not heard from Redis for `refresh` (`past_refresh` for a bucket older than the counter's newest:
// other replicas add to it only while it is current) and no refresh is in flight, fires a GET.
//
// Keys: `<prefix>quota:<counter>:<bucket start, Unix ms>`, e.g.
// `llmux:quota:r:alice:1764756000000`. Only the kQuotaBuckets + 2 newest buckets of each counter
// are mirrored (the limiter reads the newest seven); an older bucket reads as its amount and is
// not sent.
//
// What the mirror misses: other replicas' increments since this replica last heard from Redis
// (its last reply; at most `refresh` old for a counter it only reads). The limiter then admits
// over the limit by about what those are. redis_quota_test drives one key limited to 600/minute
// at 2,000/minute over three replicas (3 simulated minutes, admitted over the last 2): every
// reply back before the next request 600.5/minute; replies 300 ms late 602; 900 ms late 607.
// Past `max_lag` without answers the replicas count locally instead.
//
// Redis away: nullopt (the limiter counts locally, with its share of the limit) when the client is
// down, or when commands have waited more than `max_lag` without any answer (a slow Redis counts as
// away until it answers again). A command that gets no reply (disconnected, refused) leaves
// `unacked`; the next reply or refresh brings the total back.
//
// Memory: kQuotaBuckets + 2 slots per counter name ever used (names come from the configured
// keys).
//
// Thread safety: incr() and stats() from any thread (16 mutex-guarded shards; no lock is held
// while sending); replies arrive on the Redis thread. Callbacks in flight hold the mirror, not
// the counters: destroying the counters while they run is safe. The counters hold the client.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "auth/quota.hpp"
#include "state/redis_client.hpp"

namespace llmux::state {

struct RedisQuotaOptions {
  std::string prefix;  // `state.prefix`, e.g. "llmux:"
  /// A read's mirror older than this fires a GET (answering the mirror meanwhile); for a bucket
  /// older than the counter's newest, `past_refresh`.
  std::chrono::milliseconds refresh{100};
  std::chrono::milliseconds past_refresh{1000};
  /// Commands in flight with no answer for this long: answer nullopt (count locally).
  std::chrono::milliseconds max_lag{1000};
  /// The bucket length (the limiter's) and the margin kept past the buckets kept.
  std::int64_t bucket_ms = auth::kQuotaBucketMs;
  std::chrono::milliseconds expiry_margin{10000};
  /// A monotonic clock in ms for `refresh` and `max_lag` (tests inject theirs); default steady.
  std::function<std::int64_t()> clock;
};

class RedisQuotaCounters final : public auth::QuotaCounters {
 public:
  RedisQuotaCounters(std::shared_ptr<RedisClient> redis, RedisQuotaOptions opts);
  RedisQuotaCounters(const RedisQuotaCounters&) = delete;
  RedisQuotaCounters& operator=(const RedisQuotaCounters&) = delete;

  std::optional<std::int64_t> incr(std::string_view key, std::int64_t bucket_start_ms,
                                   std::int64_t amount) override;

  /// The Redis key of counter `key`'s bucket starting at `bucket_start_ms`.
  std::string redis_key(std::string_view key, std::int64_t bucket_start_ms) const;

  /// For metrics and tests (cheap reads): e.g. llmux_quota_redis_inflight,
  /// llmux_quota_redis_unanswered_total (requests counted locally meanwhile).
  struct Stats {
    std::int64_t inflight = 0;     // commands sent, not answered yet
    std::uint64_t failed = 0;      // commands with no total back (down, disconnected, error)
    std::uint64_t refreshes = 0;   // GETs fired by reads
    std::uint64_t unanswered = 0;  // incr() calls answered nullopt (Redis down or lagging)
  };
  Stats stats() const;

 private:
  struct Slot {
    std::int64_t start = -1;    // bucket start (ms); -1: unused
    std::int64_t known = 0;     // the total Redis last reported
    std::int64_t unacked = 0;   // this replica's amounts sent, not answered
    std::int64_t heard_ms = 0;  // clock when Redis last reported
    bool heard = false;         // Redis reported at all
    bool refreshing = false;    // a GET in flight
  };
  struct Counter {
    Slot slots[auth::kQuotaBuckets + 2];
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const {
      return std::hash<std::string_view>{}(key);
    }
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, Counter, Hash, std::equal_to<>> counters;
  };
  // Owned jointly with the callbacks in flight.
  struct Mirror {
    Shard shards[16];
    std::atomic<std::int64_t> inflight{0};
    std::atomic<std::int64_t> progress_ms{0};  // clock at the last answer (or first send)
    std::atomic<std::uint64_t> failed{0}, refreshes{0}, unanswered{0};
    std::function<std::int64_t()> clock;
    /// A reply for (key, start): `total` when Redis gave one; `amount` leaves `unacked`.
    void on_reply(const std::string& key, std::int64_t start, std::int64_t amount,
                  std::optional<std::int64_t> total, bool refresh);
  };

  void send(std::vector<std::string> args, std::string key, std::int64_t start, std::int64_t amount,
            bool refresh);

  std::shared_ptr<RedisClient> redis_;
  RedisQuotaOptions opts_;
  std::shared_ptr<Mirror> mirror_;
  std::string expiry_ms_;
};

}  // namespace llmux::state
