// SPDX-License-Identifier: Apache-2.0
#pragma once
// The gateway's own metrics (GET /metrics, the dashboard's data). Nothing is locked or allocated
// per request: each worker counts into its own WorkerMetrics (written by that thread only, with
// plain relaxed stores — no read-modify-write, no shared cache line), and a scrape adds up every
// worker's numbers (relaxed loads) and writes them in Prometheus's text format through
// prometheus-cpp's serializer (gateway/metrics_render.cpp).
//
// Labels are low-cardinality by construction: routes and backends come from the configuration,
// models only from answers a backend accepted (2xx), status codes are three digits; each label
// table holds at most kMaxNames names for the process's life (more go to "other").
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace llmux::gateway::metrics {

inline constexpr int kMaxNames = 64;

/// Names of one label, each with a small id that never changes: id 0 is "other" (or "" for
/// backends: a request that no backend answered). Lookups are lock-free; adding takes a lock
/// (routes and backends are added when a config is built; models the first time each is seen).
class NameTable {
 public:
  explicit NameTable(std::string zero);
  ~NameTable();
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;
  /// The id of `name`, added when new; 0 when the table is full (or `name` is empty).
  int id(std::string_view name);
  /// The id of `name`, or 0 when it is not in the table.
  int find(std::string_view name) const;
  std::string_view name(int id) const;
  int size() const { return n_.load(std::memory_order_acquire); }

 private:
  std::array<std::atomic<const std::string*>, kMaxNames> names_{};
  std::atomic<int> n_{1};
  std::mutex mu_;
};

/// The label tables, process-wide. Tenants come from API keys or a client's header: the first
/// 63 seen get their own label, the rest share "other".
struct Names {
  NameTable routes{"other"};
  NameTable backends{""};
  NameTable models{"other"};
  NameTable tenants{"other"};
  NameTable classes{"other"};  // priority classes (config `priorities`)
};
Names& names();

/// A latency histogram with fixed bounds (nanoseconds), written by one thread.
struct Bounds {
  const char* name;  // which metric these bounds are for (a scrape names them)
  std::vector<std::int64_t> upper_ns;
};
enum class HistKind { ttft, itl, e2e, request_overhead, relay_overhead, queue_wait };
const Bounds& bounds(HistKind kind);
inline constexpr int kMaxBuckets = 24;

class Histogram {
 public:
  /// `count` samples of `ns` each (the inter-token latency of `count` tokens that came in
  /// one read).
  void record(const Bounds& bounds, std::int64_t ns, std::uint64_t count = 1) {
    std::size_t bucket = 0;
    while (bucket < bounds.upper_ns.size() && ns > bounds.upper_ns[bucket]) ++bucket;
    bump(buckets_[bucket], count);
    bump(count_, count);
    bump(sum_ns_, static_cast<std::uint64_t>(ns < 0 ? 0 : ns) * count);
  }
  /// Adds this histogram's counts (non-cumulative per bucket) into `into`.
  void add_to(std::array<std::uint64_t, kMaxBuckets + 1>& into, std::uint64_t& count,
              std::uint64_t& sum_ns) const;

 private:
  static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t amount) {
    counter.store(counter.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
  }
  std::array<std::atomic<std::uint64_t>, kMaxBuckets + 1> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_ns_{0};
};

/// Counter families (the first part of a counter's key).
enum class Family : std::uint8_t {
  requests,           // route, backend, code
  retries,            // route
  attempt_failures,   // backend, outcome kind
  prompt_tokens,      // backend, model
  cached_tokens,      // backend, model
  generation_tokens,  // backend, model
  usage_requested,    // route: streams the gateway asked for usage
  migrations,         // route, backend cut, migration_target(backend continuing, why)
  hedges,             // route, HedgeResult (who won: gateway/hedge.hpp)
  prefills,           // route, the prefill leg's backend (0: none answered; gateway/disaggregation)
  tenant_started,     // tenant, class: requests that began (classified)
  tenant_finished,    // tenant, class: requests that ended
  tenant_tokens,      // tenant, class, TokenKind
};

/// The third label of a tenant_tokens counter.
enum class TokenKind : std::uint8_t { prompt, completion };

inline constexpr int kMaxClasses = 8;

/// Histograms by (tenant, class) label ids, each made the first time its pair is seen (by the
/// worker that owns them; a scrape reads the pointers from any thread).
class PairHistograms {
 public:
  PairHistograms() = default;
  PairHistograms(const PairHistograms&) = delete;
  PairHistograms& operator=(const PairHistograms&) = delete;
  ~PairHistograms() {
    for (auto& slot : slots_) delete slot.load(std::memory_order_relaxed);
  }
  Histogram& at(int tenant, int priority_class) {
    auto& slot = slots_[index(tenant, priority_class)];
    Histogram* histogram = slot.load(std::memory_order_acquire);
    if (!histogram) {
      histogram = new Histogram();
      slot.store(histogram, std::memory_order_release);
    }
    return *histogram;
  }
  /// nullptr until the pair was seen.
  const Histogram* find(int tenant, int priority_class) const {
    return slots_[index(tenant, priority_class)].load(std::memory_order_acquire);
  }

 private:
  static std::size_t index(int tenant, int priority_class) {
    return static_cast<std::size_t>(std::clamp(tenant, 0, kMaxNames - 1) * kMaxClasses +
                                    std::clamp(priority_class, 0, kMaxClasses - 1));
  }
  std::array<std::atomic<Histogram*>, kMaxNames * kMaxClasses> slots_{};
};

/// The third label of a migrations counter: the backend that continued (low 12 bits) and why
/// the stream was cut (gateway/continuation.hpp: CutReason, above them).
inline std::uint16_t migration_target(int backend_id, int reason) {
  return static_cast<std::uint16_t>((backend_id & 0xfff) | (reason << 12));
}

/// Counters keyed by (family, three label ids), in a fixed open-addressing table: written by
/// its worker only, read by a scrape from any thread.
class CounterTable {
 public:
  static constexpr std::size_t kSlots = 4096;
  static std::uint64_t key(Family family, std::uint16_t first_label, std::uint16_t second_label = 0,
                           std::uint16_t third_label = 0) {
    return (static_cast<std::uint64_t>(family) << 48) |
           (static_cast<std::uint64_t>(first_label) << 32) |
           (static_cast<std::uint64_t>(second_label) << 16) | third_label;
  }
  void add(std::uint64_t key, std::uint64_t amount);
  /// Calls visit(key, value) for every counter.
  template <typename F>
  void each(F&& visit) const {
    for (const auto& slot : slots_) {
      const std::uint64_t slot_key = slot.key.load(std::memory_order_acquire);
      if (slot_key != 0) visit(slot_key - 1, slot.value.load(std::memory_order_relaxed));
    }
  }
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<std::uint64_t> key{0};  // key + 1; 0: free
    std::atomic<std::uint64_t> value{0};
  };
  std::array<Slot, kSlots> slots_{};
  std::atomic<std::uint64_t> dropped_{0};  // adds that found the table full
};

/// One worker's metrics. Histograms by backend id (0: none).
struct WorkerMetrics {
  CounterTable counters;
  std::array<Histogram, kMaxNames> ttft, itl, e2e;
  Histogram request_overhead, relay_overhead;
  PairHistograms queue_wait;  // by tenant and class: the time spent in a route's queue (0: none)

  /// Adds `amount` to the counter of `family` with these label ids (their meaning is the
  /// family's: gateway/metrics_render.cpp).
  void count(Family family, int first_label, int second_label = 0, int third_label = 0,
             std::uint64_t amount = 1) {
    counters.add(CounterTable::key(family, static_cast<std::uint16_t>(first_label),
                                   static_cast<std::uint16_t>(second_label),
                                   static_cast<std::uint16_t>(third_label)),
                 amount);
  }
};

/// Events that are rare and may come from any thread (ejections, admin actions): a lock is fine.
class RareCounters {
 public:
  void add(std::string_view family, std::string_view label, std::uint64_t amount = 1);
  std::vector<std::pair<std::string, std::uint64_t>> snapshot(std::string_view family) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::uint64_t>> items_;  // "family\0label" → count
};
RareCounters& rare();

/// Every worker's metrics, for a scrape. Workers register at start (before serving).
class Registry {
 public:
  WorkerMetrics& add_worker();
  template <typename F>
  void each(F&& visit) const {
    for (const auto& worker : workers_) visit(*worker);
  }
  std::int64_t start_unix_ms = 0;
  std::int64_t start_mono_ns = 0;

 private:
  std::vector<std::unique_ptr<WorkerMetrics>> workers_;
};

}  // namespace llmux::gateway::metrics
