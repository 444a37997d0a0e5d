// SPDX-License-Identifier: Apache-2.0
#pragma once
// Load-balancing policies: how a route picks one of its backends for a request.
//
// A policy is made once per route and configuration snapshot by the registry (make_policy,
// policy/registry.cpp, each policy's options read beside it), then built for the route's
// backends (build(): once per membership change, as Pingora's BackendSelection::build), and
// then shared by every worker thread: select() and the hooks must be thread-safe and must not
// block (atomics only, no locks). A policy keeps its private state (a prefix table, a hash ring,
// round-robin weights) in its own object; what the gateway observes about a backend and shows
// everywhere (upstream/observations.hpp) stays on the backend.
//
// Per request, select() sees the request (PickContext), the route's backends, and an `accept`
// callback that refuses what must not be picked for this request (backends already tried, at
// max_inflight, and later ejected ones), so a retry never reuses a backend that failed. A policy
// that learns from what its choices did gets each attempt's progress through the hooks: the
// proxy calls on_dispatch() for every attempt, and the AttemptObserver it returns (none for a
// policy that learns nothing) hears the attempt's first token, its tokens and its Outcome.
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
  /// What the request's priority class may hold of each backend (config `priorities`).
  upstream::ClassCap class_cap;
};

/// What a policy follows of one attempt it chose the backend for, made by Policy::on_dispatch()
/// and owned by the attempt. Called from the worker that runs the attempt, one call at a time.
class AttemptObserver {
 public:
  virtual ~AttemptObserver() = default;
  /// The response's first content token(s) arrived: `tokens` so far, at `now_ns` (mono_ns()).
  virtual void on_first_token(std::uint64_t tokens, std::int64_t now_ns) {}
  /// More content tokens arrived: `tokens` is the running count.
  virtual void on_tokens(std::uint64_t tokens, std::int64_t now_ns) {}
  /// How the attempt ended (every attempt, whether or not a response came).
  virtual void on_done(const Outcome& outcome) {}
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  /// True when select() reads PickContext::prompt (the proxy then extracts it).
  virtual bool needs_prompt() const { return false; }
  /// Prepares the policy for the route's `backends` (called once, before the first select(),
  /// whenever the route's membership is set). `previous`: the route's policy in the
  /// configuration it replaces, when it was the same policy with the same options — what it
  /// learned about backends that stay may be carried over. It may still be serving requests.
  virtual void build(std::span<Backend* const> backends, const Policy* previous) {}
  /// One of `candidates` for which accept() is true, or nullptr when there is none.
  virtual Backend* select(const PickContext& ctx, std::span<Backend* const> candidates,
                          FunctionRef<bool(const Backend&)> accept) = 0;
  /// An attempt of a request went to `backend` (its request sent, or failed on the way): what
  /// follows its progress, or none (the default: a policy that learns nothing from attempts
  /// costs nothing per attempt).
  virtual std::unique_ptr<AttemptObserver> on_dispatch(Backend& backend) { return nullptr; }
  /// The share (0-1) of the request's prompt (ctx.prompt) that one of `candidates` most likely
  /// holds in its prefix cache, by what the policy remembers sending where; 0 for a policy that
  /// keeps no such record. Changes nothing.
  virtual double cached_share(const PickContext& ctx, std::span<Backend* const> candidates) const {
    return 0.0;
  }

  /// select() accepting what available() allows.
  Backend* pick(const PickContext& ctx, std::span<Backend* const> candidates, const TriedSet& tried,
                std::int64_t now_ns = mono_ns());
};

/// True if `backend` may take another request: not tried, under its in-flight limit. A hint for
/// select(): the slot itself is taken by pick_and_acquire().
/// Also: usable (checks pass, not ejected), and not on a trial another request holds.
bool available(const Backend& backend, const TriedSet& tried, std::int64_t now_ns = mono_ns(),
               const upstream::ClassCap& cap = {});

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

/// Builds a policy by name with its options (not yet built for backends: Policy::build());
/// nullptr for an unknown name or a bad option, with the reason in `*error` when given.
std::unique_ptr<Policy> make_policy(std::string_view name, const Options& options = {},
                                    std::string* error = nullptr);
/// The names make_policy() knows, for error messages.
const std::vector<std::string>& policy_names();

}  // namespace llmux::policy
