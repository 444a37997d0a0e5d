#pragma once
// Load-balancing policies: how a route picks one of its backends for a request.
//
// A Policy is created once per route when the config is loaded and is then shared by every
// worker thread: pick() must be thread-safe and must not block (atomics only, no locks).
// Policies see what was already tried for this request, so a retry never reuses a backend
// that failed.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmux::policy {

/// Runtime state of one backend, shared by all threads (owned by the gateway).
struct BackendState {
  std::string name;
  int index = 0;  // position in the gateway's backend list (< 64)
  int weight = 1;
  int max_inflight = 0;  // 0: unlimited
  std::atomic<int> inflight{0};
  std::atomic<bool> healthy{true};

  /// Takes one in-flight slot: false when the backend is at max_inflight. Check and increment
  /// are one atomic step, so workers racing for the last slot never overshoot the limit.
  bool try_acquire() {
    if (max_inflight <= 0) {
      inflight.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    int cur = inflight.load(std::memory_order_relaxed);
    while (cur < max_inflight) {
      if (inflight.compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  /// Gives back a slot taken by try_acquire().
  void release() { inflight.fetch_sub(1, std::memory_order_relaxed); }
};

/// Backends already tried for one request (by index).
class TriedSet {
 public:
  void add(const BackendState& b) { bits_ |= 1ull << b.index; }
  bool contains(const BackendState& b) const { return bits_ & (1ull << b.index); }
  bool empty() const { return bits_ == 0; }

 private:
  std::uint64_t bits_ = 0;
};

/// What a policy may look at. Views point into the request; valid during pick() only.
struct RequestView {
  std::string_view method, path, model, previous_response_id;
  bool stream = false;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  /// One of `candidates` that is not in `tried` and not at its max_inflight, or nullptr.
  virtual BackendState* pick(const RequestView& req, std::span<BackendState* const> candidates,
                             const TriedSet& tried) = 0;
};

/// True if `b` may take another request (not tried, under its in-flight limit). A hint for
/// pick(): the slot itself is taken by pick_and_acquire().
bool available(const BackendState& b, const TriedSet& tried);

/// An in-flight slot of one backend, given back on destruction (RAII; movable).
class Slot {
 public:
  Slot() = default;
  explicit Slot(BackendState* b) : b_(b) {}
  Slot(Slot&& o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
  Slot& operator=(Slot&& o) noexcept {
    if (this != &o) {
      reset();
      b_ = std::exchange(o.b_, nullptr);
    }
    return *this;
  }
  ~Slot() { reset(); }
  void reset() {
    if (b_) std::exchange(b_, nullptr)->release();
  }
  BackendState* backend() const { return b_; }
  explicit operator bool() const { return b_ != nullptr; }

 private:
  BackendState* b_ = nullptr;
};

/// Asks `policy` for a backend and takes one of its in-flight slots atomically. A backend that
/// filled up between pick() and the slot (another worker took the last one) is added to `tried`
/// and the policy asked again. An empty Slot when no candidate is available.
Slot pick_and_acquire(Policy& policy, const RequestView& req,
                      std::span<BackendState* const> candidates, TriedSet& tried);

/// Creates a policy by name; nullptr for an unknown name.
std::unique_ptr<Policy> make_policy(std::string_view name);
/// The names make_policy() knows, for error messages.
const std::vector<std::string>& policy_names();

}  // namespace llmux::policy
