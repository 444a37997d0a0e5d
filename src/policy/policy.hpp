// SPDX-License-Identifier: Apache-2.0
#pragma once
// Load-balancing policies: how a route picks one of its backends for a request.
//
// A Policy is created once per route by the registry (make_policy) and is then shared by every
// worker thread: select() and on_outcome() must be thread-safe and must not block (atomics only,
// no locks). A policy sees the request (PickContext), the route's backends, and an `accept`
// callback that refuses what must not be picked for this request (backends already tried, at
// max_inflight, and later ejected ones), so a retry never reuses a backend that failed. Every
// attempt's Outcome is reported back through on_outcome().
#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.hpp"
#include "core/function_ref.hpp"
#include "upstream/backend.hpp"
#include "upstream/outcome.hpp"

namespace llmux::policy {

using upstream::Backend;
using upstream::Outcome;
using upstream::TriedSet;

inline constexpr auto no_headers = [](std::string_view) { return std::string_view(); };

/// A backend's share in weighted policies: its configured weight, at least 1.
inline int weight_of(const Backend& backend) {
  return std::max(1, backend.weight.load(std::memory_order_relaxed));
}

/// What a policy may look at for one request. Views point into the request; valid during the
/// call only.
struct PickContext {
  std::string_view route;  // the route's name
  std::string_view method, path, model, user, previous_response_id;
  std::string_view prompt_cache_key;  // the body's (a Responses API cache hint)
  bool stream = false;
  /// Estimated tokens of the request: its prompt (body bytes / 4) plus the output it asks for
  /// (max_tokens and its kin, else 256). Held on the chosen backend while the request runs.
  std::int64_t tokens = 0;
  /// The output tokens it asks for (max_tokens and its kin), else 256.
  std::int64_t output_tokens = 0;
  /// A request header's value ("" when absent), by case-insensitive name.
  FunctionRef<std::string_view(std::string_view)> header = no_headers;
  /// The prompt text (gateway/request_view.hpp: read_prompt_text); filled only for a policy
  /// whose needs_prompt() is true.
  std::string_view prompt;
  /// The request names a response its one candidate holds (affinity): a draining backend still
  /// takes it.
  bool pinned = false;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  /// True when select() reads PickContext::prompt (the proxy then extracts it).
  virtual bool needs_prompt() const { return false; }
  /// One of `candidates` for which accept() is true, or nullptr when there is none.
  virtual Backend* select(const PickContext& ctx, std::span<Backend* const> candidates,
                          FunctionRef<bool(const Backend&)> accept) = 0;
  /// How an attempt on `backend` ended; called for every attempt, from the worker that made it.
  virtual void on_outcome(const PickContext& ctx, const Backend& backend, const Outcome& outcome) {}

  /// select() accepting what available() allows.
  Backend* pick(const PickContext& ctx, std::span<Backend* const> candidates, const TriedSet& tried,
                std::int64_t now_ns = mono_ns());
};

/// True if `backend` may take another request: not tried, under its in-flight limit. A hint for
/// select(): the slot itself is taken by pick_and_acquire().
/// Also: usable (checks pass, not ejected), and not on a trial another request holds.
bool available(const Backend& backend, const TriedSet& tried, std::int64_t now_ns = mono_ns());

/// Asks `policy` for an available backend and takes one of its in-flight slots atomically. A
/// backend that filled up between select() and the slot (another worker took the last one) is
/// added to `tried` and the policy asked again. A backend on trial (upstream/health.hpp) gives
/// its one trial slot (Slot::trial). When every candidate is out — ejected, failing its checks,
/// or on a trial already taken — the least recently failed one not yet tried is taken anyway
/// (never a silent blackhole). An empty Slot when nothing can be taken.
upstream::Slot pick_and_acquire(Policy& policy, const PickContext& ctx,
                                std::span<Backend* const> candidates, TriedSet& tried,
                                std::int64_t now_ns = mono_ns());

/// Options of a policy, from config (name → value as written).
using Options = std::map<std::string, std::string>;

/// Builds a policy by name with its options; nullptr for an unknown name or a bad option, with
/// the reason in `*error` when given.
std::unique_ptr<Policy> make_policy(std::string_view name, const Options& options = {},
                                    std::string* error = nullptr);
/// The names make_policy() knows, for error messages.
const std::vector<std::string>& policy_names();

}  // namespace llmux::policy
