// SPDX-License-Identifier: Apache-2.0
#pragma once
// One backend, as every part of the gateway sees it: where it is and how to reach it (fixed at
// start, from config::Backend), what changes while it serves (in-flight count, health), and what
// the gateway observes about it (upstream/observations.hpp) — the state health checks, policies,
// the pool and metrics all read. What a policy keeps for itself about a backend lives in the
// policy (policy/policy.hpp).
//
// Thread safety: the fixed part is immutable once the gateway runs; the changing part is atomics,
// read and written from every worker without locks. Backends are shared (shared_ptr) by the
// configuration snapshots that name them (gateway/fleet.hpp) and by the requests running on
// them, so a backend removed by a reload lives until its last request ends. A reload that keeps
// a backend (same name and address) keeps the same object: its health and in-flight count go on.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "http/stream.hpp"
#include "upstream/observations.hpp"

namespace llmux::upstream {

/// What a request's priority class may hold of a backend (config `priorities`, gateway/
/// sharing.hpp): at most `share` of its max_inflight (at least one slot), counted per class
/// `priority_class`. A share of 1 (or no class) caps nothing.
struct ClassCap {
  static constexpr int kClasses = 8;
  double share = 1.0;
  int priority_class = -1;
  bool capped() const { return share < 1.0 && priority_class >= 0 && priority_class < kClasses; }
  /// The slots of a backend with `max_inflight` (> 0) the class may hold.
  int limit(int max_inflight) const {
    return std::max(1, static_cast<int>(static_cast<double>(max_inflight) * share + 1e-9));
  }
};

struct Backend {
  // ---- fixed ----
  std::string name;
  int index = 0;          // a slot < 64, unique among the backends alive (upstream pools, TriedSet)
  std::uint64_t uid = 0;  // unique for the process's life (a slot is reused, a uid never)
  std::string url;        // as configured, for messages
  std::string host;
  std::uint16_t port = 0;
  std::string base_path;      // prepended to every request target
  std::string host_header;    // "host" or "host:port"
  std::string authorization;  // "Bearer <key>" or empty (the client's is kept)
  std::chrono::milliseconds pool_idle_timeout{4000};
  // https:// only: the client context its connections use (CA file or the system's store), and
  // whether its certificate is checked (against `host`). Connections hold the context too.
  http::TlsContextPtr tls;
  std::string tls_ca_file;
  bool tls_verify = true;
  std::vector<boost::asio::ip::tcp::endpoint> endpoints;  // resolved at start
  int metric_id = 0;  // its id in the metrics' backend label table (gateway/metrics.hpp)

  // ---- changing (atomics) ----
  // Set from the config; a reload may change them on a backend it keeps.
  std::atomic<int> weight{1};
  std::atomic<int> max_inflight{0};  // 0: unlimited
  // Requests carry their class as vLLM's `priority` (config backends[].send_priority).
  std::atomic<bool> send_priority{false};
  // Set once a reload removed the backend: its running requests finish, its connections are
  // not pooled again.
  std::atomic<bool> retired{false};
  // Drained through the admin API: no new requests, except those that name a response it holds
  // (affinity); its running requests go on. A reload undrains it.
  std::atomic<bool> draining{false};
  std::atomic<int> inflight{0};
  // In-flight requests of each capped priority class (ClassCap), by class index.
  std::array<std::atomic<int>, ClassCap::kClasses> held_by_class{};
  std::atomic<std::int64_t> outstanding_tokens{0};  // estimated, of the requests in flight
  // Prompt tokens of the prefill legs it runs now (gateway/disaggregation.hpp), estimated.
  std::atomic<std::int64_t> prefill_tokens{0};
  // Health (upstream/health.hpp keeps these; everything else only reads them):
  std::atomic<bool> checks_ok{true};              // active checks pass (true when they are off)
  std::atomic<std::int64_t> ejected_until_ns{0};  // passive ejection: no traffic before this
  std::atomic<int> failures_in_a_row{0};          // attempts failed since the last success
  std::atomic<int> ejections_in_a_row{0};         // ejections since the last success
  std::atomic<std::uint64_t> ejections_total{0};  // ejections since it was made (metrics)
  std::atomic<std::int64_t> last_failure_ns{0};   // when an attempt last failed (0: never)
  std::atomic<bool> trial_taken{false};           // after an ejection: one request at a time
  // Stall detection (upstream/stall.hpp):
  std::atomic<int> flowing{0};               // event streams producing for a while, open now
  std::atomic<bool> stalled{false};          // ejected for a stall; a probe generation clears it
  std::atomic<std::int64_t> progress_ns{0};  // the backend's latest sign of life
  // Hedging (gateway/hedge.hpp): races this backend lost in a row (a hedge on another backend
  // produced the first token), and until when the routes that hedge avoid it (their picks take
  // it only when no other backend can take the request).
  std::atomic<int> hedges_lost_in_a_row{0};
  std::atomic<std::int64_t> avoided_until_ns{0};
  // The learned capacity curve and the load it reports itself (upstream/observations.hpp).
  Observations observations;

  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  /// True while under max_inflight and, for a capped class, under its cap (a hint: the slot
  /// itself is taken by try_acquire()).
  bool has_capacity(const ClassCap& cap = {}) const {
    const int max = max_inflight.load(std::memory_order_relaxed);
    if (max > 0 && inflight.load(std::memory_order_relaxed) >= max) return false;
    return !cap.capped() || max <= 0 ||
           held_by_class[static_cast<std::size_t>(cap.priority_class)].load(
               std::memory_order_relaxed) < cap.limit(max);
  }
  /// Takes one in-flight slot: false when the backend is at max_inflight, or when `cap`'s class
  /// holds its share of it already (the rest is kept for other classes). Each check and its
  /// increment are one atomic step, so workers racing for the last slot never overshoot a limit.
  bool try_acquire(const ClassCap& cap = {}) {
    const int max = max_inflight.load(std::memory_order_relaxed);
    if (max <= 0) {
      inflight.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    std::atomic<int>* held =
        cap.capped() ? &held_by_class[static_cast<std::size_t>(cap.priority_class)] : nullptr;
    if (held) {
      const int limit = cap.limit(max);
      int cur = held->load(std::memory_order_relaxed);
      do {
        if (cur >= limit) return false;
      } while (!held->compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed));
    }
    int cur = inflight.load(std::memory_order_relaxed);
    while (cur < max) {
      if (inflight.compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed)) return true;
    }
    if (held) held->fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  /// Gives back a slot taken by try_acquire(); `held_class`: the class it counted for (Slot::
  /// held_class; -1: none).
  void release(int held_class = -1) {
    if (held_class >= 0 && held_class < ClassCap::kClasses)
      held_by_class[static_cast<std::size_t>(held_class)].fetch_sub(1, std::memory_order_relaxed);
    inflight.fetch_sub(1, std::memory_order_relaxed);
  }
  /// The class a slot taken with `cap` counts for (-1: none): what release() is given.
  int held_class(const ClassCap& cap) const {
    return cap.capped() && max_inflight.load(std::memory_order_relaxed) > 0 ? cap.priority_class
                                                                            : -1;
  }

  /// True while the backend may get new requests: its checks pass and it is not ejected.
  bool usable(std::int64_t now_ns) const {
    return checks_ok.load(std::memory_order_relaxed) &&
           now_ns >= ejected_until_ns.load(std::memory_order_relaxed);
  }
  /// True after an ejection until a request succeeds: then one request at a time (a trial), so
  /// a backend whose connects hang costs one connect timeout per ejection, not one per request.
  bool on_trial() const { return ejections_in_a_row.load(std::memory_order_relaxed) > 0; }
};

/// An in-flight slot of one backend, given back on destruction (RAII; movable).
class Slot {
 public:
  Slot() = default;
  /// `trial`: the slot also holds the backend's one trial request (see Backend::on_trial).
  /// `tokens`: the request's estimated tokens, added to the backend's outstanding_tokens for as
  /// long as the slot is held.
  /// `held_class`: the class whose count it also holds (Backend::held_class; -1: none).
  explicit Slot(Backend* owner, bool trial = false, std::int64_t tokens = 0, int held_class = -1)
      : backend_(owner),
        trial_(trial),
        held_class_(static_cast<std::int8_t>(held_class)),
        tokens_(tokens) {
    if (backend_ && tokens_ > 0)
      backend_->outstanding_tokens.fetch_add(tokens_, std::memory_order_relaxed);
  }
  Slot(Slot&& other) noexcept
      : backend_(std::exchange(other.backend_, nullptr)),
        trial_(std::exchange(other.trial_, false)),
        held_class_(std::exchange(other.held_class_, std::int8_t{-1})),
        tokens_(std::exchange(other.tokens_, 0)) {}
  Slot& operator=(Slot&& other) noexcept {
    if (this != &other) {
      reset();
      backend_ = std::exchange(other.backend_, nullptr);
      trial_ = std::exchange(other.trial_, false);
      held_class_ = std::exchange(other.held_class_, std::int8_t{-1});
      tokens_ = std::exchange(other.tokens_, 0);
    }
    return *this;
  }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot() { reset(); }
  void reset() {
    if (!backend_) return;
    Backend* owner = std::exchange(backend_, nullptr);
    if (std::exchange(trial_, false)) owner->trial_taken.store(false, std::memory_order_relaxed);
    if (const std::int64_t tokens = std::exchange(tokens_, 0); tokens > 0)
      owner->outstanding_tokens.fetch_sub(tokens, std::memory_order_relaxed);
    owner->release(std::exchange(held_class_, std::int8_t{-1}));
  }
  Backend* backend() const { return backend_; }
  bool trial() const { return trial_; }
  explicit operator bool() const { return backend_ != nullptr; }

 private:
  Backend* backend_ = nullptr;
  bool trial_ = false;
  std::int8_t held_class_ = -1;
  std::int64_t tokens_ = 0;
};

/// Backends already tried for one request (by index; a validated config has at most 64).
class TriedSet {
 public:
  void add(const Backend& backend) { bits_ |= 1ull << backend.index; }
  void add(const TriedSet& other) { bits_ |= other.bits_; }
  bool contains(const Backend& backend) const { return bits_ & (1ull << backend.index); }
  bool empty() const { return bits_ == 0; }

 private:
  std::uint64_t bits_ = 0;
};

}  // namespace llmux::upstream
