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

/// True if `b` may take another request (not tried, under its in-flight limit).
bool available(const BackendState& b, const TriedSet& tried);

/// Creates a policy by name; nullptr for an unknown name.
std::unique_ptr<Policy> make_policy(std::string_view name);
/// The names make_policy() knows, for error messages.
const std::vector<std::string>& policy_names();

}  // namespace llmux::policy
