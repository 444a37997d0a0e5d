// SPDX-License-Identifier: Apache-2.0
#include "policy/consistent_hash.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "policy/options.hpp"

namespace llmux::policy {

std::unique_ptr<Policy> ConsistentHash::from_options(const Options& options, std::string* error) {
  Settings settings;
  OptionReader reader("consistent_hash", options, error);
  reader.know({"key", "load_factor", "replicas"});
  reader.string("key", settings.key);
  reader.number("load_factor", settings.load_factor, 0, 100);
  reader.number("replicas", settings.replicas, 1, 10000);
  if (settings.load_factor > 0 && settings.load_factor < 1)
    reader.fail("policy 'consistent_hash': option load_factor must be 0 (no bound) or at least 1");
  if (settings.key != "auto" && settings.key != "prompt_cache_key" && settings.key != "user" &&
      !(settings.key.starts_with("header:") && settings.key.size() > 7))
    reader.fail(fmt::format(
        "policy 'consistent_hash': option key must be auto, header:NAME, prompt_cache_key or "
        "user (got '{}')",
        settings.key));
  if (!reader.done()) return nullptr;
  return std::make_unique<ConsistentHash>(std::move(settings));
}

std::string_view session_key(const PickContext& ctx, std::string_view spec) {
  if (spec.starts_with("header:")) return ctx.header(spec.substr(7));
  if (spec == "prompt_cache_key") return ctx.prompt_cache_key;
  if (spec == "user") return ctx.user;
  // auto
  if (auto header = ctx.header("x-session-id"); !header.empty()) return header;
  if (!ctx.prompt_cache_key.empty()) return ctx.prompt_cache_key;
  return ctx.user;
}

namespace {

bool in_ring(const Backend& backend, std::int64_t now_ns) {
  return backend.usable(now_ns) && !backend.retired.load(std::memory_order_relaxed);
}

}  // namespace

std::shared_ptr<const ConsistentHash::Ring> ConsistentHash::ring(
    std::span<Backend* const> candidates, std::int64_t now_ns) {
  std::uint64_t members = 0;
  for (const Backend* backend : candidates)
    if (in_ring(*backend, now_ns)) members |= 1ull << backend->index;
  auto cur = ring_.load(std::memory_order_acquire);
  if (cur && cur->members == members &&
      std::equal(cur->order.begin(), cur->order.end(), candidates.begin(), candidates.end()))
    return cur;
  auto next = std::make_shared<Ring>();
  next->members = members;
  next->order.assign(candidates.begin(), candidates.end());
  for (Backend* backend : candidates) {
    if (!(members & (1ull << backend->index))) continue;
    // A backend's points depend on its name alone, so they are the same in every ring.
    const int points = settings_.replicas * weight_of(*backend);
    std::uint64_t hash = XXH3_64bits(backend->name.data(), backend->name.size());
    for (int i = 0; i < points; ++i) {
      hash = XXH3_64bits_withSeed(&i, sizeof i, hash);
      next->points.emplace_back(hash, backend);
    }
  }
  std::sort(next->points.begin(), next->points.end(),
            [](const auto& left, const auto& right) { return left.first < right.first; });
  builds_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<const Ring> built = std::move(next);
  ring_.store(built, std::memory_order_release);
  return built;
}

Backend* ConsistentHash::select(const PickContext& ctx, std::span<Backend* const> candidates,
                                FunctionRef<bool(const Backend&)> accept) {
  const std::string_view key = session_key(ctx, settings_.key);
  if (key.empty() || candidates.empty()) return fallback_.select(ctx, candidates, accept);
  const std::int64_t now = mono_ns();
  const auto hash_ring = ring(candidates, now);
  if (hash_ring->points.empty()) return fallback_.select(ctx, candidates, accept);
  // The bound: load_factor times the mean in-flight count with this request counted.
  std::int64_t total = 0;
  int usable = 0;
  for (const Backend* backend : candidates) {
    if (!(hash_ring->members & (1ull << backend->index))) continue;
    total += backend->inflight.load(std::memory_order_relaxed);
    ++usable;
  }
  // At least one request above the even share: at low load (a slot given back a moment after
  // its client got the answer) one request more or less is no imbalance worth a cache miss.
  const double even = static_cast<double>(total + 1) / usable;
  const double bound = settings_.load_factor > 0
                           ? std::max(std::ceil(settings_.load_factor * even), std::ceil(even) + 1)
                           : 0.0;
  const std::uint64_t hash = XXH3_64bits(key.data(), key.size());
  auto it = std::lower_bound(
      hash_ring->points.begin(), hash_ring->points.end(), hash,
      [](const auto& point, std::uint64_t target) { return point.first < target; });
  // Walk clockwise: the first backend that accepts and is under the bound; the first that
  // accepts at all if every one is over it.
  Backend* first_ok = nullptr;
  std::uint64_t seen = 0;
  for (std::size_t k = 0; k < hash_ring->points.size() && seen != hash_ring->members; ++k, ++it) {
    if (it == hash_ring->points.end()) it = hash_ring->points.begin();
    Backend* backend = it->second;
    const std::uint64_t bit = 1ull << backend->index;
    if (seen & bit) continue;
    seen |= bit;
    if (!accept(*backend)) continue;
    if (bound <= 0 ||
        static_cast<double>(backend->inflight.load(std::memory_order_relaxed)) < bound)
      return backend;
    if (!first_ok) first_ok = backend;
  }
  if (first_ok) return first_ok;
  // Every backend of the ring refused (tried, full): one outside it may still take the request.
  return fallback_.select(ctx, candidates, accept);
}

}  // namespace llmux::policy
