// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-key quotas (issue 15, part 4): requests per minute, tokens per minute, concurrent requests.
//
// Requests and tokens per minute are counted in fixed 10 s buckets (aligned to the Unix epoch, so
// every replica agrees on them): the count in the last 60 s is estimated as the six newest
// buckets (the current one included) plus the part of the seventh still within the minute,
// oldest * (1 - elapsed/10 s), which assumes that bucket's requests were spread evenly over it.
// Only admitted requests are counted (a refused one is taken back), so a key driven at any rate
// over its limit is admitted at its limit (quota_test checks ±5% at 3x the rate). Any 60 s admit
// at most the limit plus what the estimate misses of that one bucket: at a steady rate r over the
// limit, at most r x 10 s / 4 (quota_test: no 60 s over 7/6 of the limit at 3x). Two one-minute
// windows, as before, assumed the whole previous minute even: bench/replicas_bench.sh saw 1,015
// admitted of 600/minute in the first 60 s of a load begun 19 s before a minute's end. A burst of
// the whole limit at once is let through again as its bucket leaves the minute (over 10 s).
// Seven counters per key and limit, all plain increments: what a shared store (Redis INCRBY +
// EXPIRE) does cheaply and atomically.
//
//   requests_per_minute: checked and counted when a request is admitted.
//   tokens_per_minute:   the tokens `usage` reports (prompt + completion), charged by charge()
//                        when the request ends; admission refuses a key whose estimate has reached
//                        the limit until the window frees it (one request may overshoot it).
//   concurrent:          an in-process count per replica, held by a Permit (RAII).
// Over a limit: Decision 429, OpenAI-shaped (code rate_limit_exceeded), with Retry-After seconds
// computed from the buckets (when the estimate will leave room again; 1 s for `concurrent`).
//
// Counting goes through QuotaCounters: nullptr (state: memory, one replica) counts in memory with
// the full limits; a shared implementation (Redis, later) counts across replicas, and whenever it
// cannot answer (nullopt) the limiter counts locally against limit * local_share (config
// `quotas.local_share`, default 1/replicas). Local counts are kept in step all along, so a
// fallback starts from what this replica admitted.
//
// Thread safety: every member may be called from any worker thread at once (sharded mutexes;
// one lock per counter touched). Clocks are injected: `now_ms` is Unix time in milliseconds
// (wall clock: windows must line up across replicas), so the logic is tested without sleeping.
//
// In the gateway's request path (gateway/admit.cpp: admit_client; gateway/finish.cpp: charge_key),
// after KeyTable::authorize():
//   auto adm = quotas.admit(*key, now_ms);          // before choosing a backend
//   if (!adm.decision.ok()) -> answer status, body and `Retry-After: retry_after_s`
//   keep adm.permit alive until the response (stream included) has ended, then
//   quotas.charge(*key, prompt_tokens + completion_tokens, now_ms) with the usage the tap saw.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "auth/decision.hpp"
#include "auth/keys.hpp"

namespace llmux::auth {

inline constexpr std::int64_t kQuotaWindowMs = 60'000;  // the limits are per minute
inline constexpr int kQuotaBuckets = 6;                 // the minute in buckets of 10 s
inline constexpr std::int64_t kQuotaBucketMs = kQuotaWindowMs / kQuotaBuckets;
/// The buckets an estimate reads, oldest first: the one that began a whole minute before the
/// current one, ..., the current one.
using BucketCounts = std::array<std::int64_t, kQuotaBuckets + 1>;

/// Counters per (name, fixed bucket). Implementations must be thread safe and must not block a
/// worker thread for long (a remote one answers nullopt rather than wait).
class QuotaCounters {
 public:
  virtual ~QuotaCounters() = default;
  /// Adds `amount` (0: just read; negative: take back) to counter `key` of the bucket that starts
  /// at `bucket_start_ms`, and returns the new total; nullopt when the store cannot answer now.
  /// A bucket's counter is needed while it is among the kQuotaBuckets + 1 newest (then it may
  /// expire).
  virtual std::optional<std::int64_t> incr(std::string_view key, std::int64_t bucket_start_ms,
                                           std::int64_t amount) = 0;
};

/// In memory: the last kQuotaBuckets + 2 buckets per key, in 16 mutex-guarded shards.
class MemoryQuotaCounters final : public QuotaCounters {
 public:
  std::optional<std::int64_t> incr(std::string_view key, std::int64_t bucket_start_ms,
                                   std::int64_t amount) override;

 private:
  static constexpr int kSlots = kQuotaBuckets + 2;
  struct Slots {
    Slots() {
      start.fill(-1);
      count.fill(0);
    }
    std::array<std::int64_t, kSlots> start, count;
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, Slots> keys;
  };
  Shard shards_[16];
};

/// The pure sliding-window arithmetic, exposed for tests. `elapsed_ms`: time into the current
/// bucket.
namespace window {
/// The estimated count over the last minute: buckets[0] * (1 - elapsed/bucket) + buckets[1] + ...
/// + buckets[6].
double estimate(const BucketCounts& buckets, std::int64_t elapsed_ms);
/// Milliseconds from `elapsed_ms` into the current bucket until the estimate is at most
/// `threshold` (0 when it already is), assuming nothing more is counted.
std::int64_t ms_until_at_most(const BucketCounts& buckets, std::int64_t elapsed_ms,
                              double threshold);
}  // namespace window

/// The share of each limit a replica counts on its own while the shared counters are away:
/// `quotas.local_share` when set, else 1 / `replicas` (fewer than 1 counts as 1).
double local_share(const config::Quotas& quotas, int replicas);

class QuotaLimiter {
 public:
  /// `shared`: the replicas' shared counters, or nullptr for memory only (full limits).
  /// `local_share` in (0, 1]: the share of each limit counted locally while `shared` is away.
  explicit QuotaLimiter(std::shared_ptr<QuotaCounters> shared = nullptr, double local_share = 1.0);

  /// A concurrency slot; released when destroyed (or reset()). Move-only; empty when the key has
  /// no concurrency limit or the admission failed.
  class Permit {
   public:
    Permit() = default;
    explicit Permit(std::shared_ptr<std::atomic<std::int64_t>> count) : count_(std::move(count)) {}
    Permit(Permit&&) noexcept = default;
    Permit& operator=(Permit&& other) noexcept {
      if (this != &other) {
        reset();
        count_ = std::move(other.count_);
      }
      return *this;
    }
    Permit(const Permit&) = delete;
    Permit& operator=(const Permit&) = delete;
    ~Permit() { reset(); }
    void reset() {
      if (count_) count_->fetch_sub(1, std::memory_order_relaxed);
      count_.reset();
    }
    bool holds() const { return count_ != nullptr; }

   private:
    std::shared_ptr<std::atomic<std::int64_t>> count_;
  };

  struct Admission {
    Decision decision;
    Permit permit;  // hold until the request (its stream included) has ended
  };

  /// Admits one request of `key` at `now_ms` (Unix ms) or says why not: tokens per minute
  /// (read), then concurrent, then requests per minute (counted when admitted).
  Admission admit(const KeyEntry& key, std::int64_t now_ms);

  /// Charges `tokens` (prompt + completion reported by `usage`) to `key` at `now_ms`.
  void charge(const KeyEntry& key, std::int64_t tokens, std::int64_t now_ms);

  /// Requests of `key` running now (this replica).
  std::int64_t concurrent(std::string_view key_name);
  /// False after the shared counters last failed to answer (local counting in force).
  bool shared_ok() const { return shared_ok_.load(std::memory_order_relaxed); }
  double local_share() const { return local_share_.load(std::memory_order_relaxed); }
  /// A new local share in (0, 1] (clamped): the replicas counted changed (state/replicas.hpp).
  void set_local_share(double share);

 private:
  struct Counts {
    BucketCounts buckets{};
    double limit = 0;  // the limit that applies to the store that answered
    bool shared = false;
  };
  /// Reads the older buckets and reads (amount 0) or adds to `counter`'s current one; shared
  /// store first, then local.
  Counts count(const std::string& counter, std::int64_t bucket, std::int64_t amount,
               std::int64_t limit);
  void take_back(const std::string& counter, std::int64_t bucket, std::int64_t amount, bool shared);
  std::shared_ptr<std::atomic<std::int64_t>> slot(std::string_view key_name);

  std::shared_ptr<QuotaCounters> shared_;
  MemoryQuotaCounters local_;
  std::atomic<double> local_share_;
  std::atomic<bool> shared_ok_{true};
  struct ConcurrencyShard {
    std::mutex mutex;
    std::unordered_map<std::string, std::shared_ptr<std::atomic<std::int64_t>>> keys;
  };
  ConcurrencyShard concurrency_[16];
};

}  // namespace llmux::auth
