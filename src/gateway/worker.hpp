// SPDX-License-Identifier: Apache-2.0
#pragma once
// The gateway's shared state (all threads) and its per-thread Worker.
//
// Threads: N workers, each with its own io_context, its own SO_REUSEPORT acceptor per listener
// and its own keep-alive pool per backend, so a request never leaves the thread that accepted it
// and the hot path takes no lock. The state all threads share is the configuration in use (a Fleet:
// immutable, its backends' changing parts atomics; a reload swaps it per worker, between requests)
// and a few atomics (active requests, draining).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "auth/quota.hpp"
#include "auth/usage.hpp"
#include "config/config.hpp"
#include "core/bytes.hpp"
#include "core/use_tuple.hpp"
#include "gateway/access_log.hpp"
#include "gateway/fleet.hpp"
#include "gateway/metrics.hpp"
#include "gateway/request.hpp"
#include "http/deadline.hpp"
#include "http/readiness.hpp"
#include "openai/stream.hpp"
#include "state/redis_client.hpp"
#include "state/redis_response_store.hpp"
#include "state/redis_usage.hpp"
#include "state/replicas.hpp"
#include "state/response_store.hpp"
#include "upstream/backend.hpp"
#include "upstream/pool.hpp"

namespace llmux::state {
class RedisQuotaCounters;
}

namespace llmux::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using core::use_tuple;

struct AdminChange;  // gateway/admin.hpp

/// What every worker shares for the process's life. The configuration in use is a Fleet
/// (gateway/fleet.hpp), which a reload replaces; each worker holds its own handle on it
/// (FleetHandle).
struct GatewayState {
  std::atomic<int> active{0};       // requests in progress (the drain waits for 0)
  std::atomic<int> connections{0};  // client connections open (limits.max_connections)
  std::atomic<bool> draining{false};
  // The configuration generation every worker has switched to (GET /health says it): a reload
  // is in use once the last worker took it.
  std::atomic<std::int64_t> generation{0};
  AccessLog log;
  // Response id -> backend (gateway/affinity.hpp), for the process's life (reloads keep it and
  // its contents; affinity.enabled is the fleet's to say).
  // With `state: redis://...` the table is shared by the replicas through Redis (a local cache
  // in front; responses_memory is then unused).
  std::unique_ptr<state::MemoryResponseStore> responses_memory;
  std::shared_ptr<state::RedisClient> redis;
  std::unique_ptr<state::RedisResponseStore> responses_redis;
  state::ResponseStore* responses = nullptr;
  // Per-key quotas and usage accounting (auth/quota.hpp, auth/usage.hpp), used when the
  // configuration has client API keys: for the process's life (a reload keeps the counts).
  std::unique_ptr<auth::QuotaLimiter> quotas;
  std::unique_ptr<auth::UsageLedger> usage;
  state::RedisUsageLedger* usage_redis = nullptr;  // `usage` when it is shared through Redis
  const state::RedisQuotaCounters* quota_redis = nullptr;  // the counters `quotas` share Redis by
  // With Redis: how many replicas share it (their quotas' local share while it is away).
  std::unique_ptr<state::ReplicaPresence> replicas;
  // Every worker's metrics (gateway/metrics.hpp), gathered by a scrape.
  metrics::Registry metrics;
  // The admin API's run-time changes (gateway/admin.hpp) run on the control thread, one at a
  // time, as a reload does: set by the server before it serves.
  net::io_context* control = nullptr;
  std::function<std::string(const AdminChange&, int& status)> change_fleet;
};

/// A worker's hold on the fleet in use. Each worker has its own (a request copies the worker's
/// shared_ptr, so the count it changes is that worker's alone, never a line other cores write).
struct FleetHandle {
  std::shared_ptr<const Fleet> fleet;
};
using FleetHandlePtr = std::shared_ptr<const FleetHandle>;

/// RAII count of requests in progress.
class ActiveGuard {
 public:
  explicit ActiveGuard(std::atomic<int>& active) : active_(active) {
    active_.fetch_add(1, std::memory_order_relaxed);
  }
  ~ActiveGuard() { active_.fetch_sub(1, std::memory_order_relaxed); }
  ActiveGuard(const ActiveGuard&) = delete;
  ActiveGuard& operator=(const ActiveGuard&) = delete;

 private:
  std::atomic<int>& active_;
};

/// Work a request starts only if it is still being served a tick later
/// (gateway/client_connection.hpp: the watch on the client). An intrusive list of one worker:
/// linking and unlinking are a few stores, so a short request never pays for what only a long one
/// needs.
struct DeferredStart {
  DeferredStart* prev = nullptr;
  DeferredStart* next = nullptr;
  std::uint64_t due_tick = 0;
  void (*run)(void* ctx) = nullptr;
  void* ctx = nullptr;
  bool linked() const { return prev != nullptr; }
};
class DeferredStartList {
 public:
  DeferredStartList() { head_.prev = head_.next = &head_; }
  DeferredStartList(const DeferredStartList&) = delete;
  DeferredStartList& operator=(const DeferredStartList&) = delete;
  /// Runs `entry.run(entry.ctx)` at the tick after next (at least one tick from now), unless
  /// unlinked first.
  void link(DeferredStart& entry, std::uint64_t now_tick) {
    unlink(entry);
    entry.due_tick = now_tick + 2;
    entry.next = head_.next;
    entry.prev = &head_;
    head_.next->prev = &entry;
    head_.next = &entry;
  }
  static void unlink(DeferredStart& entry) {
    if (!entry.prev) return;
    entry.prev->next = entry.next;
    entry.next->prev = entry.prev;
    entry.prev = entry.next = nullptr;
  }
  /// Unlinks and runs every entry due at `tick`.
  void run_due(std::uint64_t tick) {
    for (DeferredStart* entry = head_.next; entry != &head_;) {
      DeferredStart* next = entry->next;
      if (entry->due_tick <= tick) {
        unlink(*entry);
        entry->run(entry->ctx);
      }
      entry = next;
    }
  }

 private:
  DeferredStart head_;
};

/// One worker thread's state. Only its own thread touches it.
struct Worker {
  // Destroyed in reverse order: the deadline list outlives the io_context (whose destruction
  // destroys the coroutines that own deadlines), and the sockets of the pools and acceptors go
  // before the io_context they belong to.
  http::DeadlineList deadlines;
  // Started a tick after a request began, if it still runs then (the client watch), and the
  // ticker's count (every 50 ms).
  DeferredStartList deferred_starts;
  std::uint64_t tick = 0;
  // One thread per io_context: the reactor needs no locking (posts from other threads, as in
  // the drain, still go through the scheduler's lock).
  net::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  // The sockets whose reads wait without a system call first (http/readiness.hpp).
  http::ReadinessSet& readiness = http::ReadinessSet::install(ioc);
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;

  // The configuration for new requests (a request keeps the handle it started with).
  FleetHandlePtr fleet_handle;
  const Fleet& fleet() const { return *fleet_handle->fleet; }
  /// Switches to a reloaded configuration, and closes the idle connections of the backends it
  /// no longer has.
  void set_fleet(FleetHandlePtr next) {
    fleet_handle = std::move(next);
    for (auto& entry : pools) {
      if (!entry.pool || entry.uid == 0) continue;
      const auto& backends = fleet().backends;
      if (std::none_of(backends.begin(), backends.end(),
                       [&](const auto& backend) { return backend->uid == entry.uid; }))
        entry.pool->close_all();
    }
  }

  // Keep-alive pools, one per backend slot (Backend::index). A slot passes to another backend
  // only after the last request on the one before ended; its idle connections are closed then.
  struct PoolEntry {
    std::uint64_t uid = 0;  // the backend the pool's connections go to
    std::unique_ptr<upstream::Pool> pool;
  };
  std::vector<PoolEntry> pools = std::vector<PoolEntry>(64);
  /// Every pool's sweep (upstream::Pool::sweep), from the worker's ticker.
  void sweep_pools() {
    for (auto& entry : pools)
      if (entry.pool) entry.pool->sweep();
  }
  upstream::Pool& pool_for(const upstream::Backend& backend) {
    auto& entry = pools[static_cast<std::size_t>(backend.index)];
    if (!entry.pool) {
      entry.pool = std::make_unique<upstream::Pool>();
    } else if (entry.uid != backend.uid) {
      entry.pool->close_all();
    }
    entry.uid = backend.uid;
    return *entry.pool;
  }

  // Relay buffers, reused: a request takes one for its response body and gives it back. An
  // event stream gets a small one (a vLLM event is a few hundred bytes; a larger event goes out
  // in pieces) since a held-open stream should cost little memory; other bodies a larger one.
  static constexpr std::size_t kRelayBuf = 4 * 1024;
  static constexpr std::size_t kStreamBuf = 2 * 1024;
  struct RelayBuf {
    std::unique_ptr<char[]> data;
    std::size_t size = 0;
  };
  std::vector<std::unique_ptr<char[]>> free_bufs[2];  // [0]: kRelayBuf, [1]: kStreamBuf
  RelayBuf take_buf(bool stream) {
    const std::size_t size = stream ? kStreamBuf : kRelayBuf;
    auto& free = free_bufs[stream ? 1 : 0];
    if (free.empty()) return {std::unique_ptr<char[]>(new char[size]), size};
    RelayBuf buffer{std::move(free.back()), size};
    free.pop_back();
    return buffer;
  }
  void give_buf(RelayBuf buffer) {
    auto& free = free_bufs[buffer.size == kStreamBuf ? 1 : 0];
    if (free.size() < 1024) free.push_back(std::move(buffer.data));
  }

  // Client read buffers, reused: a connection holds one while it reads a request (a held-open
  // stream none), and its next request's read takes one back here instead of allocating it.
  // A buffer that grew past kKeptReadBuf (a large body) is freed instead.
  static constexpr std::size_t kKeptReadBuf = 16 * 1024;
  std::vector<boost::beast::flat_buffer> free_read_bufs;
  void lend_read_buf(boost::beast::flat_buffer& buffer) {
    if (buffer.capacity() > 0 || free_read_bufs.empty()) return;
    buffer = std::move(free_read_bufs.back());  // a moved-from flat_buffer has no memory
    free_read_bufs.pop_back();
  }
  /// Takes an empty buffer's memory back (a buffer that holds bytes keeps them).
  void take_back_read_buf(boost::beast::flat_buffer& buffer) {
    if (buffer.size() > 0 || buffer.capacity() == 0) return;
    if (buffer.capacity() <= kKeptReadBuf && free_read_bufs.size() < 256)
      free_read_bufs.push_back(std::move(buffer));
    else
      buffer.shrink_to_fit();
  }

  // This worker's metrics (in GatewayState::metrics; only this thread writes them).
  metrics::WorkerMetrics* worker_metrics = nullptr;

  // Jitter of retry back-offs.
  std::minstd_rand rng{std::random_device{}()};

  // The JSON parser every relayed response's tap reads with (parsing never suspends).
  openai::JsonScratch json;

  // Header builders (the upstream request's head, the client's response header), reused: a
  // request holds one only while its header is built and written, so a held-open stream keeps
  // none.
  std::vector<ByteBuilder> free_bytes;
  ByteBuilder take_bytes() {
    if (free_bytes.empty()) return {};
    ByteBuilder bytes = std::move(free_bytes.back());
    free_bytes.pop_back();
    return bytes;
  }
  void give_bytes(ByteBuilder bytes) {
    if (free_bytes.size() < 256 && bytes.capacity() > 0 && bytes.capacity() <= 16384) {
      bytes.clear();
      free_bytes.push_back(std::move(bytes));
    }
  }
};

}  // namespace llmux::gateway
