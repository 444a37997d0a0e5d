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
  const std::size_t n = max_entries >= kShardedFrom ? kShards : 1;
  for (std::size_t i = 0; i < n; ++i) shards_.push_back(std::make_unique<Shard>());
  set_limits(max_entries, ttl);
}

void MemoryResponseStore::set_limits(std::size_t max_entries, std::chrono::milliseconds ttl) {
  {
    std::lock_guard lock(limits_mu_);
    ttl_ = ttl;
  }
  const std::size_t n = shards_.size();
  for (std::size_t i = 0; i < n; ++i) {
    Shard& s = *shards_[i];
    std::lock_guard lock(s.mu);
    s.max = std::max<std::size_t>(1, max_entries / n + (i < max_entries % n ? 1 : 0));
    trim(s);
  }
}

MemoryResponseStore::Shard& MemoryResponseStore::shard(std::string_view id) {
  if (shards_.size() == 1) return *shards_[0];
  return *shards_[std::hash<std::string_view>{}(id) % shards_.size()];
}

void MemoryResponseStore::trim(Shard& s) {
  while (s.lru.size() > s.max) {
    s.index.erase(s.lru.back().id);
    s.lru.pop_back();
  }
}

std::optional<std::string> MemoryResponseStore::find(std::string_view id, Clock::time_point now) {
  std::chrono::milliseconds ttl;
  {
    std::lock_guard lock(limits_mu_);
    ttl = ttl_;
  }
  Shard& s = shard(id);
  std::lock_guard lock(s.mu);
  auto it = s.index.find(id);
  if (it == s.index.end()) return std::nullopt;
  auto e = it->second;
  if (e->expires <= now) {
    s.index.erase(it);
    s.lru.erase(e);
    return std::nullopt;
  }
  // Used again: most recent, and kept for another ttl.
  e->expires = now + ttl;
  s.lru.splice(s.lru.begin(), s.lru, e);
  return e->backend;
}

void MemoryResponseStore::put(std::string_view id, std::string_view backend,
                              Clock::time_point now) {
  std::chrono::milliseconds ttl;
  {
    std::lock_guard lock(limits_mu_);
    ttl = ttl_;
  }
  Shard& s = shard(id);
  std::lock_guard lock(s.mu);
  if (auto it = s.index.find(id); it != s.index.end()) {
    auto e = it->second;
    e->backend.assign(backend);
    e->expires = now + ttl;
    s.lru.splice(s.lru.begin(), s.lru, e);
    return;
  }
  s.lru.push_front(Entry{std::string(id), std::string(backend), now + ttl});
  s.index.emplace(s.lru.front().id, s.lru.begin());
  // Expired entries at the cold end go first, then the least recently used over the bound.
  while (!s.lru.empty() && s.lru.back().expires <= now) {
    s.index.erase(s.lru.back().id);
    s.lru.pop_back();
  }
  trim(s);
}

boost::asio::awaitable<std::optional<std::string>> MemoryResponseStore::owner(std::string_view id) {
  co_return find(id);
}

void MemoryResponseStore::learn(std::string_view id, std::string_view backend) {
  put(id, backend);
}

void MemoryResponseStore::forget(std::string_view id) {
  Shard& s = shard(id);
  std::lock_guard lock(s.mu);
  auto it = s.index.find(id);
  if (it == s.index.end()) return;
  auto e = it->second;
  s.index.erase(it);
  s.lru.erase(e);
}

std::size_t MemoryResponseStore::size() const {
  std::size_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mu);
    n += s->lru.size();
  }
  return n;
}

}  // namespace llmux::state
