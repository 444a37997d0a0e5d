// SPDX-License-Identifier: Apache-2.0
// RedisQuotaCounters: a local mirror of Redis bucket counters, kept by asynchronous INCRBY/GET
// (see the header).
#include "state/redis_quota.hpp"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include "state/redis_scripts.hpp"

namespace llmux::state {

namespace {

std::size_t shard_of(std::string_view key) {
  return std::hash<std::string_view>{}(key) % 16;
}

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The total a reply carries: INCRBY's integer, GET's string (nil: the key is gone, 0).
std::optional<std::int64_t> total_of(const RedisReply& reply) {
  using K = RedisReply::Kind;
  if (reply.kind == K::integer) return reply.integer;
  if (reply.kind == K::nil) return 0;
  if (reply.kind == K::string) {
    std::int64_t total = 0;
    const auto [p, ec] =
        std::from_chars(reply.str.data(), reply.str.data() + reply.str.size(), total);
    if (ec == std::errc() && p == reply.str.data() + reply.str.size()) return total;
  }
  return std::nullopt;
}

}  // namespace

RedisQuotaCounters::RedisQuotaCounters(std::shared_ptr<RedisClient> redis, RedisQuotaOptions opts)
    : redis_(std::move(redis)), opts_(std::move(opts)), mirror_(std::make_shared<Mirror>()) {
  if (!opts_.clock) opts_.clock = steady_ms;
  mirror_->clock = opts_.clock;
  // Needed while among the buckets kept; relative to the first increment, which comes no earlier
  // than the bucket's start.
  expiry_ms_ =
      std::to_string((auth::kQuotaBuckets + 2) * std::max<std::int64_t>(1, opts_.bucket_ms) +
                     std::max<std::int64_t>(0, opts_.expiry_margin.count()));
}

std::string RedisQuotaCounters::redis_key(std::string_view key,
                                          std::int64_t bucket_start_ms) const {
  std::string full_key;
  full_key.reserve(opts_.prefix.size() + key.size() + 28);
  full_key.append(opts_.prefix)
      .append("quota:")
      .append(key)
      .append(":")
      .append(std::to_string(bucket_start_ms));
  return full_key;
}

std::optional<std::int64_t> RedisQuotaCounters::incr(std::string_view key,
                                                     std::int64_t bucket_start_ms,
                                                     std::int64_t amount) {
  Mirror& mirror = *mirror_;
  if (!redis_->up()) {
    mirror.unanswered.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const std::int64_t now = opts_.clock();
  if (mirror.inflight.load(std::memory_order_relaxed) > 0 &&
      now - mirror.progress_ms.load(std::memory_order_relaxed) > opts_.max_lag.count()) {
    mirror.unanswered.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;  // Redis has not answered for max_lag: away until it does
  }
  std::int64_t total = 0;
  bool refresh = false;
  {
    Shard& shard = mirror.shards[shard_of(key)];
    std::lock_guard lock(shard.mutex);
    auto it = shard.counters.find(key);
    if (it == shard.counters.end()) it = shard.counters.emplace(std::string(key), Counter{}).first;
    Slot* slot = nullptr;
    Slot* oldest = &it->second.slots[0];
    std::int64_t newest = -1;
    for (Slot& kept : it->second.slots) {
      if (kept.start == bucket_start_ms) slot = &kept;
      if (kept.start < oldest->start) oldest = &kept;
      newest = std::max(newest, kept.start);
    }
    if (slot == nullptr) {
      // Older than every bucket kept: expired for the limiter; not sent.
      if (oldest->start > bucket_start_ms) return amount;
      *oldest = Slot{};
      oldest->start = bucket_start_ms;
      slot = oldest;
      newest = std::max(newest, bucket_start_ms);
    }
    const std::int64_t period = (slot->start < newest ? opts_.past_refresh : opts_.refresh).count();
    if (amount != 0) {
      slot->unacked += amount;
    } else if (!slot->refreshing && (!slot->heard || now - slot->heard_ms >= period)) {
      slot->refreshing = true;
      refresh = true;
    }
    total = slot->known + slot->unacked;
  }
  std::string rkey = redis_key(key, bucket_start_ms);
  if (amount != 0)
    send({"EVAL", scripts::kIncrWindow, "1", rkey, std::to_string(amount), expiry_ms_},
         std::string(key), bucket_start_ms, amount, false);
  if (refresh) {
    mirror.refreshes.fetch_add(1, std::memory_order_relaxed);
    send({"GET", std::move(rkey)}, std::string(key), bucket_start_ms, 0, true);
  }
  return total;
}

void RedisQuotaCounters::send(std::vector<std::string> args, std::string key, std::int64_t start,
                              std::int64_t amount, bool refresh) {
  Mirror& mirror = *mirror_;
  // Waiting starts now when nothing else was in flight (max_lag counts from here).
  if (mirror.inflight.fetch_add(1, std::memory_order_relaxed) == 0)
    mirror.progress_ms.store(opts_.clock(), std::memory_order_relaxed);
  // The callback runs on the Redis thread (or here, at once, after the client stopped): no lock
  // is held while firing.
  redis_->fire(std::move(args), [shared_mirror = mirror_, key = std::move(key), start, amount,
                                 refresh](const RedisReply& reply) {
    shared_mirror->on_reply(key, start, amount, total_of(reply), refresh);
  });
}

void RedisQuotaCounters::Mirror::on_reply(const std::string& key, std::int64_t start,
                                          std::int64_t amount, std::optional<std::int64_t> total,
                                          bool refresh) {
  const std::int64_t now = clock();
  {
    Shard& shard = shards[shard_of(key)];
    std::lock_guard lock(shard.mutex);
    if (auto it = shard.counters.find(key); it != shard.counters.end()) {
      for (Slot& slot : it->second.slots) {
        if (slot.start != start) continue;  // pruned meanwhile: nothing to update
        slot.unacked -= amount;
        if (refresh) slot.refreshing = false;
        if (total) {
          // The latest state Redis executed: it includes each of this replica's increments
          // answered so far, and none of those still unacknowledged.
          slot.known = *total;
          slot.heard = true;
          slot.heard_ms = now;
        }
      }
    }
  }
  if (!total) failed.fetch_add(1, std::memory_order_relaxed);
  progress_ms.store(now, std::memory_order_relaxed);
  inflight.fetch_sub(1, std::memory_order_relaxed);
}

RedisQuotaCounters::Stats RedisQuotaCounters::stats() const {
  const Mirror& mirror = *mirror_;
  return {mirror.inflight.load(std::memory_order_relaxed),
          mirror.failed.load(std::memory_order_relaxed),
          mirror.refreshes.load(std::memory_order_relaxed),
          mirror.unanswered.load(std::memory_order_relaxed)};
}

}  // namespace llmux::state
