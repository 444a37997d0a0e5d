// SPDX-License-Identifier: Apache-2.0
#include "auth/quota.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/openai_error.hpp"

namespace llmux::auth {
namespace {

constexpr std::int64_t kBucketMs = kQuotaBucketMs;
constexpr int kBuckets = kQuotaBuckets;
// Estimates are fractional: comparisons allow for rounding (an estimate of exactly the limit
// admits).
constexpr double kEps = 1e-6;

std::size_t shard_of(std::string_view key) {
  return std::hash<std::string_view>{}(key) % 16;
}

std::int64_t bucket_start(std::int64_t now_ms) {
  std::int64_t bucket = now_ms / kBucketMs;
  if (now_ms % kBucketMs < 0) --bucket;  // before 1970: still the bucket that contains now
  return bucket * kBucketMs;
}

std::int64_t retry_after_s(std::int64_t ms) {
  return std::max<std::int64_t>(1, (ms + 999) / 1000);
}

Decision too_many(std::string_view type, const std::string& message, std::int64_t retry_s) {
  return {429, openai_error_json(429, message, type, std::nullopt, "rate_limit_exceeded"), message,
          retry_s};
}

}  // namespace

std::optional<std::int64_t> MemoryQuotaCounters::incr(std::string_view key,
                                                      std::int64_t bucket_start_ms,
                                                      std::int64_t amount) {
  Shard& shard = shards_[shard_of(key)];
  std::lock_guard lock(shard.mutex);
  auto it = shard.keys.find(std::string(key));
  if (it == shard.keys.end()) {
    if (amount == 0) return 0;
    it = shard.keys.emplace(std::string(key), Slots{}).first;
  }
  Slots& slots = it->second;
  for (int i = 0; i < kSlots; ++i)
    if (slots.start[i] == bucket_start_ms) return slots.count[i] += amount;
  int oldest = 0;
  for (int i = 1; i < kSlots; ++i)
    if (slots.start[i] < slots.start[oldest]) oldest = i;
  // A bucket older than every one kept has expired: it counts 0 and is not stored again.
  if (amount == 0 || slots.start[oldest] > bucket_start_ms) return amount;
  slots.start[oldest] = bucket_start_ms;
  slots.count[oldest] = amount;
  return amount;
}

namespace window {

double estimate(const BucketCounts& buckets, std::int64_t elapsed_ms) {
  const double fraction = std::clamp(static_cast<double>(elapsed_ms) / kBucketMs, 0.0, 1.0);
  double sum = static_cast<double>(buckets[0]) * (1.0 - fraction);
  for (int i = 1; i <= kBuckets; ++i) sum += static_cast<double>(buckets[i]);
  return sum;
}

std::int64_t ms_until_at_most(const BucketCounts& buckets, std::int64_t elapsed_ms,
                              double threshold) {
  if (estimate(buckets, elapsed_ms) <= threshold + kEps) return 0;
  // Phase k (k buckets from the current one's start): buckets[k] is leaving the minute,
  // buckets[k+1..] count whole. The estimate only falls; find the first phase where it reaches
  // `threshold`.
  for (int k = 0; k <= kBuckets; ++k) {
    double rest = 0;
    for (int j = k + 1; j <= kBuckets; ++j) rest += static_cast<double>(buckets[j]);
    if (rest > threshold + kEps) continue;
    // buckets[k] * (1 - fraction) + rest <= threshold
    const double fraction =
        buckets[k] > 0 ? std::max(0.0, 1.0 - (threshold - rest) / static_cast<double>(buckets[k]))
                       : 0.0;
    const double reached_ms = (static_cast<double>(k) + fraction) * static_cast<double>(kBucketMs);
    return std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(reached_ms - kEps)) - elapsed_ms);
  }
  // A threshold below zero: once every bucket has left.
  return (kBuckets + 1) * kBucketMs - elapsed_ms;
}

}  // namespace window

double local_share(const config::Quotas& quotas, int replicas) {
  return quotas.local_share.value_or(1.0 / std::max(1, replicas));
}

QuotaLimiter::QuotaLimiter(std::shared_ptr<QuotaCounters> shared, double local_share)
    : shared_(std::move(shared)), local_share_(std::clamp(local_share, 1e-6, 1.0)) {}

void QuotaLimiter::set_local_share(double share) {
  local_share_.store(std::clamp(share, 1e-6, 1.0), std::memory_order_relaxed);
}

QuotaLimiter::Counts QuotaLimiter::count(const std::string& counter, std::int64_t bucket,
                                         std::int64_t amount, std::int64_t limit) {
  Counts counts;
  if (shared_) {
    bool ok = true;
    for (int i = 0; i < kBuckets && ok; ++i) {
      const auto bucket_count = shared_->incr(counter, bucket - (kBuckets - i) * kBucketMs, 0);
      ok = bucket_count.has_value();
      counts.buckets[i] = bucket_count.value_or(0);
    }
    std::optional<std::int64_t> cur;
    if (ok) cur = shared_->incr(counter, bucket, amount);
    if (cur) {
      counts.buckets[kBuckets] = *cur;
      shared_ok_.store(true, std::memory_order_relaxed);
      if (amount != 0) local_.incr(counter, bucket, amount);  // in step, for a fallback later
      counts.limit = static_cast<double>(limit);
      counts.shared = true;
      return counts;
    }
    shared_ok_.store(false, std::memory_order_relaxed);
  }
  for (int i = 0; i < kBuckets; ++i)
    counts.buckets[i] = local_.incr(counter, bucket - (kBuckets - i) * kBucketMs, 0).value_or(0);
  counts.buckets[kBuckets] = local_.incr(counter, bucket, amount).value_or(0);
  counts.limit = shared_ ? std::max(1.0, static_cast<double>(limit) * local_share())
                         : static_cast<double>(limit);
  return counts;
}

void QuotaLimiter::take_back(const std::string& counter, std::int64_t bucket, std::int64_t amount,
                             bool shared) {
  if (shared) shared_->incr(counter, bucket, -amount);
  local_.incr(counter, bucket, -amount);
}

std::shared_ptr<std::atomic<std::int64_t>> QuotaLimiter::slot(std::string_view key_name) {
  ConcurrencyShard& shard = concurrency_[shard_of(key_name)];
  std::lock_guard lock(shard.mutex);
  auto& in_flight = shard.keys[std::string(key_name)];
  if (!in_flight) in_flight = std::make_shared<std::atomic<std::int64_t>>(0);
  return in_flight;
}

std::int64_t QuotaLimiter::concurrent(std::string_view key_name) {
  return slot(key_name)->load(std::memory_order_relaxed);
}

QuotaLimiter::Admission QuotaLimiter::admit(const KeyEntry& key, std::int64_t now_ms) {
  const config::KeyLimits& limits = key.limits;
  const std::int64_t bucket = bucket_start(now_ms);
  const std::int64_t elapsed = now_ms - bucket;

  if (limits.tokens_per_minute > 0) {
    const Counts counts = count("t:" + key.name, bucket, 0, limits.tokens_per_minute);
    const double used = window::estimate(counts.buckets, elapsed);
    if (used >= counts.limit - kEps) {
      const std::int64_t retry_s =
          retry_after_s(window::ms_until_at_most(counts.buckets, elapsed, counts.limit - 1));
      return {too_many("tokens",
                       fmt::format("Rate limit reached for key '{}' on tokens per minute (TPM): "
                                   "Limit {}, Used {}. Please try again in {}s.",
                                   key.name, static_cast<std::int64_t>(counts.limit),
                                   static_cast<std::int64_t>(used), retry_s),
                       retry_s),
              {}};
    }
  }

  Permit permit;
  if (limits.concurrent > 0) {
    auto in_flight = slot(key.name);
    if (in_flight->fetch_add(1, std::memory_order_relaxed) >= limits.concurrent) {
      in_flight->fetch_sub(1, std::memory_order_relaxed);
      return {too_many("requests",
                       fmt::format("Too many concurrent requests for key '{}': Limit {}. Please "
                                   "try again when one of them has finished.",
                                   key.name, limits.concurrent),
                       1),
              {}};
    }
    permit = Permit(std::move(in_flight));
  }

  if (limits.requests_per_minute > 0) {
    const std::string counter = "r:" + key.name;
    const Counts counts = count(counter, bucket, 1, limits.requests_per_minute);
    if (window::estimate(counts.buckets, elapsed) > counts.limit + kEps) {
      take_back(counter, bucket, 1, counts.shared);
      BucketCounts without = counts.buckets;
      without[kBuckets] -= 1;  // the request just taken back
      const std::int64_t retry_s =
          retry_after_s(window::ms_until_at_most(without, elapsed, counts.limit - 1));
      return {too_many("requests",
                       fmt::format("Rate limit reached for key '{}' on requests per minute (RPM): "
                                   "Limit {}, Requested 1. Please try again in {}s.",
                                   key.name, static_cast<std::int64_t>(counts.limit), retry_s),
                       retry_s),
              {}};
    }
  }
  return {Decision{}, std::move(permit)};
}

void QuotaLimiter::charge(const KeyEntry& key, std::int64_t tokens, std::int64_t now_ms) {
  if (key.limits.tokens_per_minute <= 0 || tokens <= 0) return;
  count("t:" + key.name, bucket_start(now_ms), tokens, key.limits.tokens_per_minute);
}

}  // namespace llmux::auth
