// SPDX-License-Identifier: Apache-2.0
#pragma once
// One configuration, ready to serve: its backends (resolved), its routes with their policies and
// retry budgets. A Fleet is immutable once built (its backends' changing parts are atomics); a
// reload builds a new one and each worker switches to it between requests, while a request that
// started on the old one finishes on it (it holds a FleetHandle: gateway/worker.hpp).
//
// A reload keeps a backend that has the same name, URL, API key and pool idle timeout: the same
// object (its health, ejection and in-flight count go on; weight and max_inflight take the new
// values). Any other backend is new; one no longer named is retired — it gets no new request and
// lives until its last running request ends.
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "auth/keys.hpp"
#include "config/config.hpp"
#include "gateway/admission_queue.hpp"
#include "http/stream.hpp"
#include "policy/policy.hpp"
#include "upstream/backend.hpp"
#include "upstream/first_token_times.hpp"
#include "upstream/health.hpp"
#include "upstream/retry_budget.hpp"

namespace llmux::gateway {

/// One route: its config, its policy (shared by all workers) and its backends, in order.
struct RouteRuntime {
  const config::Route* cfg = nullptr;
  std::unique_ptr<policy::Policy> policy;
  std::vector<upstream::Backend*> backends;
  std::unique_ptr<upstream::RetryBudget> retry_budget;
  std::unique_ptr<AdmissionQueue> queue;
  /// For `hedge: {after: Nx}` (gateway/hedge.hpp): each backend's recent times to first token
  /// on this route, in `backends`' order (empty: not hedged that way); a reload keeps what a
  /// route of the same name learned of each backend it keeps.
  std::vector<std::shared_ptr<upstream::FirstTokenTimes>> first_token_times;
  int metric_id = 0;  // its id in the metrics' route label table (gateway/metrics.hpp)
  /// Prefill/decode disaggregation (gateway/disaggregation.hpp): the backends of role prefill,
  /// which never take a client's request itself (every pick counts them as tried), and those
  /// that may run a prefill leg (role prefill or both), in `backends`' order.
  upstream::TriedSet prefill_only;
  std::vector<upstream::Backend*> prefillers;
};

struct Fleet {
  config::GatewayConfig cfg;
  std::vector<std::shared_ptr<upstream::Backend>> backends;  // cfg.backends' order
  std::vector<RouteRuntime> routes;                          // cfg.routes' order
  upstream::OutlierSettings outlier;
  /// The client API keys of this configuration (auth.keys, auth.keys_file): disabled when none.
  auth::KeyTable keys;
  std::uint64_t generation = 1;  // 1 at start, +1 per reload that took effect
  /// The queues of the routes each backend serves, by backend slot (Backend::index): a request
  /// that ends on a backend wakes them.
  std::array<std::vector<AdmissionQueue*>, 64> queues_by_slot;
  /// The server context of each listener with `tls` (cfg.listeners' order; null: plain HTTP),
  /// read from its files by each build, so a reload takes renewed certificates. A connection
  /// holds the context it was accepted with.
  std::vector<http::TlsContextPtr> listener_tls;
};

/// The backend slots (Backend::index < 64) of the backends alive, over all fleets: a slot is
/// given back when the last reference to its backend goes, so two live backends never share one
/// (the workers' pools and TriedSet are indexed by it). Thread-safe.
class BackendSlots {
 public:
  /// A free slot, or -1 when 64 backends are alive.
  int take();
  void give(int slot);

 private:
  std::mutex mu_;
  std::uint64_t used_ = 0;
};

struct FleetBuild {
  std::shared_ptr<const Fleet> fleet;  // null when the build failed (see errors)
  std::vector<std::string> errors;     // a host that does not resolve, a policy that fails
  std::vector<std::string> changes;    // against `prev`, one line each (empty at start)
};

/// Builds the fleet of a validated config, reusing `prev`'s backends as described above (prev:
/// null at start). Resolves the hosts of new backends (blocking: not on a worker thread).
/// Nothing of `prev` changes unless the build succeeds; then the weight and max_inflight of the
/// backends it keeps take the new values, and those it drops are marked retired.
FleetBuild build_fleet(config::GatewayConfig cfg, const Fleet* prev,
                       const std::shared_ptr<BackendSlots>& slots);

/// The settings a reload cannot change in a running process (listeners, threads, the access log
/// target, the pid file): copied from `running` into `next`, one warning each where they differ.
std::vector<std::string> keep_restart_only(const config::GatewayConfig& running,
                                           config::GatewayConfig& next);

}  // namespace llmux::gateway
