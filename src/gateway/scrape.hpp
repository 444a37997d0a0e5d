// SPDX-License-Identifier: Apache-2.0
#pragma once
// The backends' own load reports: each backend's Prometheus metrics (vLLM's /metrics) read on an
// interval by the health checker's thread — never on a request's path — into the Backend's
// reported_* atomics (upstream/load_report.hpp), which the least_load policy reads. A report
// counts for backend_metrics.stale_after; a backend that stops answering goes stale by itself.
#include <memory>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config/config.hpp"
#include "upstream/backend.hpp"

namespace llmux::gateway {

struct ScrapeTask {
  std::shared_ptr<upstream::Backend> backend;
  config::BackendMetrics settings;  // backend_metrics
  bool stopped = false;
  boost::asio::steady_timer* timer = nullptr;  // while the loop waits
};

/// Reads `task->backend`'s metrics every interval until task->stopped; logs when reading starts
/// failing and when it works again.
boost::asio::awaitable<void> scrape_loop(std::shared_ptr<ScrapeTask> task);

}  // namespace llmux::gateway
