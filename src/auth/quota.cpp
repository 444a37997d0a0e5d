#include "auth/quota.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/openai_error.hpp"

namespace llmux::auth {
namespace {

constexpr std::int64_t kW = kQuotaWindowMs;
// Estimates are fractional: comparisons allow for rounding (an estimate of exactly the limit
// admits).
constexpr double kEps = 1e-6;

std::size_t shard_of(std::string_view key) {
  return std::hash<std::string_view>{}(key) % 16;
}

std::int64_t window_start(std::int64_t now_ms) {
  std::int64_t w = now_ms / kW;
  if (now_ms % kW < 0) --w;  // before 1970: still the window that contains now
  return w * kW;
}

std::int64_t retry_after_s(std::int64_t ms) {
  return std::max<std::int64_t>(1, (ms + 999) / 1000);
}

Decision too_many(std::string_view type, const std::string& message, std::int64_t retry_s) {
  return {429, openai_error_json(429, message, type, std::nullopt, "rate_limit_exceeded"), retry_s};
}

}  // namespace

std::optional<std::int64_t> MemoryQuotaCounters::incr(std::string_view key,
                                                      std::int64_t window_start_ms,
                                                      std::int64_t amount) {
  Shard& sh = shards_[shard_of(key)];
  std::lock_guard lock(sh.mutex);
  auto it = sh.keys.find(std::string(key));
  if (it == sh.keys.end()) {
    if (amount == 0) return 0;
    it = sh.keys.emplace(std::string(key), Slots{}).first;
  }
  Slots& s = it->second;
  for (int i = 0; i < 3; ++i)
    if (s.start[i] == window_start_ms) return s.count[i] += amount;
  int oldest = 0;
  for (int i = 1; i < 3; ++i)
    if (s.start[i] < s.start[oldest]) oldest = i;
  // A window older than every one kept has expired: it counts 0 and is not stored again.
  if (amount == 0 || s.start[oldest] > window_start_ms) return amount;
  s.start[oldest] = window_start_ms;
  s.count[oldest] = amount;
  return amount;
}

namespace window {

double estimate(std::int64_t previous, std::int64_t current, std::int64_t elapsed_ms) {
  const double f = std::clamp(static_cast<double>(elapsed_ms) / kW, 0.0, 1.0);
  return static_cast<double>(previous) * (1.0 - f) + static_cast<double>(current);
}

std::int64_t ms_until_at_most(std::int64_t previous, std::int64_t current, std::int64_t elapsed_ms,
                              double threshold) {
  if (estimate(previous, current, elapsed_ms) <= threshold + kEps) return 0;
  const double cur = static_cast<double>(current);
  if (cur <= threshold && previous > 0) {
    // previous * (1 - t/W) + current <= threshold, for t in this window.
    const double t = (1.0 - (threshold - cur) / static_cast<double>(previous)) * kW;
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(t - kEps)) - elapsed_ms);
  }
  // Not in this window: in the next one, current becomes the previous window.
  const double g = threshold <= 0 ? 1.0 : std::max(0.0, 1.0 - threshold / cur);
  return (kW - elapsed_ms) + static_cast<std::int64_t>(std::ceil(g * kW - kEps));
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

QuotaLimiter::Counts QuotaLimiter::count(const std::string& counter, std::int64_t w,
                                         std::int64_t amount, std::int64_t limit) {
  if (shared_) {
    const auto prev = shared_->incr(counter, w - kW, 0);
    std::optional<std::int64_t> cur;
    if (prev) cur = shared_->incr(counter, w, amount);
    if (prev && cur) {
      shared_ok_.store(true, std::memory_order_relaxed);
      if (amount != 0) local_.incr(counter, w, amount);  // in step, for a fallback later
      return {*prev, *cur, static_cast<double>(limit), true};
    }
    shared_ok_.store(false, std::memory_order_relaxed);
  }
  const std::int64_t prev = local_.incr(counter, w - kW, 0).value_or(0);
  const std::int64_t cur = local_.incr(counter, w, amount).value_or(0);
  const double lim = shared_ ? std::max(1.0, static_cast<double>(limit) * local_share())
                             : static_cast<double>(limit);
  return {prev, cur, lim, false};
}

void QuotaLimiter::take_back(const std::string& counter, std::int64_t w, std::int64_t amount,
                             bool shared) {
  if (shared) shared_->incr(counter, w, -amount);
  local_.incr(counter, w, -amount);
}

std::shared_ptr<std::atomic<std::int64_t>> QuotaLimiter::slot(std::string_view key_name) {
  ConcurrencyShard& sh = concurrency_[shard_of(key_name)];
  std::lock_guard lock(sh.mutex);
  auto& p = sh.keys[std::string(key_name)];
  if (!p) p = std::make_shared<std::atomic<std::int64_t>>(0);
  return p;
}

std::int64_t QuotaLimiter::concurrent(std::string_view key_name) {
  return slot(key_name)->load(std::memory_order_relaxed);
}

QuotaLimiter::Admission QuotaLimiter::admit(const KeyEntry& key, std::int64_t now_ms) {
  const config::KeyLimits& l = key.limits;
  const std::int64_t w = window_start(now_ms);
  const std::int64_t elapsed = now_ms - w;

  if (l.tokens_per_minute > 0) {
    const Counts c = count("t:" + key.name, w, 0, l.tokens_per_minute);
    const double used = window::estimate(c.previous, c.current, elapsed);
    if (used >= c.limit - kEps) {
      const std::int64_t s =
          retry_after_s(window::ms_until_at_most(c.previous, c.current, elapsed, c.limit - 1));
      return {too_many("tokens",
                       fmt::format("Rate limit reached for key '{}' on tokens per minute (TPM): "
                                   "Limit {}, Used {}. Please try again in {}s.",
                                   key.name, static_cast<std::int64_t>(c.limit),
                                   static_cast<std::int64_t>(used), s),
                       s),
              {}};
    }
  }

  Permit permit;
  if (l.concurrent > 0) {
    auto s = slot(key.name);
    if (s->fetch_add(1, std::memory_order_relaxed) >= l.concurrent) {
      s->fetch_sub(1, std::memory_order_relaxed);
      return {too_many("requests",
                       fmt::format("Too many concurrent requests for key '{}': Limit {}. Please "
                                   "try again when one of them has finished.",
                                   key.name, l.concurrent),
                       1),
              {}};
    }
    permit = Permit(std::move(s));
  }

  if (l.requests_per_minute > 0) {
    const std::string counter = "r:" + key.name;
    const Counts c = count(counter, w, 1, l.requests_per_minute);
    if (window::estimate(c.previous, c.current, elapsed) > c.limit + kEps) {
      take_back(counter, w, 1, c.shared);
      const std::int64_t s =
          retry_after_s(window::ms_until_at_most(c.previous, c.current - 1, elapsed, c.limit - 1));
      return {too_many("requests",
                       fmt::format("Rate limit reached for key '{}' on requests per minute (RPM): "
                                   "Limit {}, Requested 1. Please try again in {}s.",
                                   key.name, static_cast<std::int64_t>(c.limit), s),
                       s),
              {}};
    }
  }
  return {Decision{}, std::move(permit)};
}

void QuotaLimiter::charge(const KeyEntry& key, std::int64_t tokens, std::int64_t now_ms) {
  if (key.limits.tokens_per_minute <= 0 || tokens <= 0) return;
  count("t:" + key.name, window_start(now_ms), tokens, key.limits.tokens_per_minute);
}

}  // namespace llmux::auth
