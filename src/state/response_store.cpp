// SPDX-License-Identifier: Apache-2.0
#include "state/response_store.hpp"

#include <functional>

namespace llmux::state {

namespace {
constexpr std::size_t kShards = 16;
constexpr std::size_t kShardedFrom = 4096;  // smaller tables keep exact LRU order in one shard
}  // namespace

MemoryResponseStore::MemoryResponseStore(std::size_t max_entries, std::chrono::milliseconds ttl)
    : ttl_(ttl) {
  const std::size_t shard_count = max_entries >= kShardedFrom ? kShards : 1;
  for (std::size_t i = 0; i < shard_count; ++i) shards_.push_back(std::make_unique<Shard>());
  set_limits(max_entries, ttl);
}

void MemoryResponseStore::set_limits(std::size_t max_entries, std::chrono::milliseconds ttl) {
  {
    std::lock_guard lock(limits_mu_);
    ttl_ = ttl;
  }
  const std::size_t shard_count = shards_.size();
  for (std::size_t i = 0; i < shard_count; ++i) {
    Shard& shard = *shards_[i];
    std::lock_guard lock(shard.mu);
    shard.max = std::max<std::size_t>(
        1, max_entries / shard_count + (i < max_entries % shard_count ? 1 : 0));
    trim(shard);
  }
}

MemoryResponseStore::Shard& MemoryResponseStore::shard(std::string_view id) {
  if (shards_.size() == 1) return *shards_[0];
  return *shards_[std::hash<std::string_view>{}(id) % shards_.size()];
}

void MemoryResponseStore::trim(Shard& shard) {
  while (shard.lru.size() > shard.max) {
    shard.index.erase(shard.lru.back().id);
    shard.lru.pop_back();
  }
}

std::optional<std::string> MemoryResponseStore::find(std::string_view id, Clock::time_point now) {
  std::chrono::milliseconds ttl;
  {
    std::lock_guard lock(limits_mu_);
    ttl = ttl_;
  }
  Shard& home = shard(id);
  std::lock_guard lock(home.mu);
  auto it = home.index.find(id);
  if (it == home.index.end()) return std::nullopt;
  auto entry = it->second;
  if (entry->expires <= now) {
    home.index.erase(it);
    home.lru.erase(entry);
    return std::nullopt;
  }
  // Used again: most recent, and kept for another ttl.
  entry->expires = now + ttl;
  home.lru.splice(home.lru.begin(), home.lru, entry);
  return entry->backend;
}

void MemoryResponseStore::put(std::string_view id, std::string_view backend,
                              Clock::time_point now) {
  std::chrono::milliseconds ttl;
  {
    std::lock_guard lock(limits_mu_);
    ttl = ttl_;
  }
  Shard& home = shard(id);
  std::lock_guard lock(home.mu);
  if (auto it = home.index.find(id); it != home.index.end()) {
    auto entry = it->second;
    entry->backend.assign(backend);
    entry->expires = now + ttl;
    home.lru.splice(home.lru.begin(), home.lru, entry);
    return;
  }
  home.lru.push_front(Entry{std::string(id), std::string(backend), now + ttl});
  home.index.emplace(home.lru.front().id, home.lru.begin());
  // Expired entries at the cold end go first, then the least recently used over the bound.
  while (!home.lru.empty() && home.lru.back().expires <= now) {
    home.index.erase(home.lru.back().id);
    home.lru.pop_back();
  }
  trim(home);
}

boost::asio::awaitable<std::optional<std::string>> MemoryResponseStore::owner(std::string_view id) {
  co_return find(id);
}

void MemoryResponseStore::record_owner(std::string_view id, std::string_view backend) {
  put(id, backend);
}

void MemoryResponseStore::forget(std::string_view id) {
  Shard& home = shard(id);
  std::lock_guard lock(home.mu);
  auto it = home.index.find(id);
  if (it == home.index.end()) return;
  auto entry = it->second;
  home.index.erase(it);
  home.lru.erase(entry);
}

std::size_t MemoryResponseStore::size() const {
  std::size_t entries = 0;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mu);
    entries += shard->lru.size();
  }
  return entries;
}

}  // namespace llmux::state
