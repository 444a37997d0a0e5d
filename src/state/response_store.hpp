// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which backend holds each stored response: response id -> backend name (the Responses API
// keeps a response, and the conversation it ends, in the memory of the vLLM that produced it).
//
// An interface whose lookups may suspend, so that a store shared by several gateway replicas
// (Redis) fits behind it; learning never waits (a remote store writes in the background). The
// embedded MemoryResponseStore is bounded: least recently used ids go first once `max_entries`
// are kept, and an id unused for `ttl` is forgotten.
//
// Thread safety: every call may come from any worker thread.
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/awaitable.hpp>

namespace llmux::state {

class ResponseStore {
 public:
  virtual ~ResponseStore() = default;
  /// The backend holding `id` (its name), or nullopt when the store does not know it. `id` must
  /// stay valid until the call completes.
  virtual boost::asio::awaitable<std::optional<std::string>> owner(std::string_view id) = 0;
  /// Records that `backend` holds `id` (again: refreshes it). Never waits.
  virtual void record_owner(std::string_view id, std::string_view backend) = 0;
  /// Forgets `id` (its backend no longer has it).
  virtual void forget(std::string_view id) = 0;
  /// Ids kept now.
  virtual std::size_t size() const = 0;
};

class MemoryResponseStore final : public ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;
  MemoryResponseStore(std::size_t max_entries, std::chrono::milliseconds ttl);

  boost::asio::awaitable<std::optional<std::string>> owner(std::string_view id) override;
  void record_owner(std::string_view id, std::string_view backend) override;
  void forget(std::string_view id) override;
  std::size_t size() const override;

  /// The lookup itself, without a coroutine (owner() is this); `now` for tests.
  std::optional<std::string> find(std::string_view id, Clock::time_point now = Clock::now());
  void put(std::string_view id, std::string_view backend, Clock::time_point now = Clock::now());
  /// New bounds (a reload): entries over the new size go at once, oldest first.
  void set_limits(std::size_t max_entries, std::chrono::milliseconds ttl);

 private:
  struct Entry {
    std::string id, backend;
    Clock::time_point expires;
  };
  // Shards, each its own LRU list (front: most recent) and index; a large table spreads its
  // lock over 16 of them, a small one keeps exact LRU order in one.
  struct Shard {
    mutable std::mutex mu;
    std::list<Entry> lru;
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index;
    std::size_t max = 1;
  };
  Shard& shard(std::string_view id);
  static void trim(Shard& shard);

  std::vector<std::unique_ptr<Shard>> shards_;
  std::chrono::milliseconds ttl_;
  mutable std::mutex limits_mu_;
};

}  // namespace llmux::state
