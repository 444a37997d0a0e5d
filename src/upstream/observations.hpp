// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the gateway has observed about a backend, beyond its own counts: the decode rate per
// stream it learned from the streams it relayed (by in-flight count), how fast its streams
// produce tokens now (for hedging), and the load the backend reports itself on its /metrics. Shown
// everywhere — GET /admin/backends, /metrics — and read by the policies that weigh them (adaptive,
// least_load). Policy-private state (a prefix table, a hash ring) is not here: it lives in the
// policy's own object (policy/policy.hpp).
//
// Thread safety: atomics, written by whoever observes (a worker's relay, the scraper) and read
// from every worker without locks.
#include <atomic>
#include <cstdint>

#include "upstream/capacity.hpp"
#include "upstream/decode_pace.hpp"

namespace llmux::upstream {

/// The load a backend last reported about itself (upstream/load_report.hpp: store_report,
/// fresh_report), counted until `until_ns` (0: never read). KV cache usage in thousandths.
struct ReportedLoad {
  std::atomic<std::int32_t> running{0};
  std::atomic<std::int32_t> waiting{0};
  std::atomic<std::int32_t> kv_permille{0};
  std::atomic<std::int64_t> until_ns{0};
};

struct Observations {
  /// Decode rate per stream by in-flight count, learned by the adaptive policy from the streams
  /// it sends here (policy/adaptive.hpp).
  CapacityCurve capacity;
  /// The recent gap between its streams' tokens, where a route that hedges watches it
  /// (upstream/decode_pace.hpp).
  DecodePace pace;
  /// The backend's own account of its load (its /metrics, read by gateway/scrape.hpp when
  /// backend_metrics is on).
  ReportedLoad reported;
};

}  // namespace llmux::upstream
