// SPDX-License-Identifier: Apache-2.0
#pragma once
// The gateway's view of its backends' health: the active checker (one thread of its own that
// GETs each backend's health path on its interval and feeds upstream::record_check, and reads
// their load reports when backend_metrics is on: gateway/scrape.hpp), the log
// line of every change of state, and the readiness answer of GET /health.
//
// Thread safety: the checker owns its thread and io_context; everything it changes is the
// backends' atomics; update() hands it a reloaded fleet's backends. readiness() reads atomics only
// and may run on any worker.
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "config/config.hpp"
#include "gateway/scrape.hpp"
#include "upstream/backend.hpp"
#include "upstream/health.hpp"

namespace llmux::gateway {

struct Fleet;

/// One log line per change of a backend's state (warn when it goes out, info when it returns);
/// `request_id`: the request whose outcome changed it, which the line then begins with.
void log_health_event(const upstream::HealthEvent& event, std::string_view request_id = {});

/// Runs the active health checks of the backends in use, on a thread of its own.
class HealthChecker {
 public:
  struct Task;
  HealthChecker();
  ~HealthChecker();  // stops and joins
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  /// Starts the thread.
  void start();
  /// From now on checks exactly the backends of `fleet`, each with its settings (any thread; the
  /// checks of a backend kept by a reload start again with its new settings, its state kept).
  void update(const Fleet& fleet);
  void stop();

 private:
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::shared_ptr<Task>> tasks_;          // the checker thread's
  std::vector<std::shared_ptr<ScrapeTask>> scrapes_;  // likewise
  std::vector<const upstream::Backend*> seen_;        // likewise: whose first state was logged
  std::thread thread_;
};

/// GET /health: 200 when every route has a backend that takes requests, 503 otherwise; the
/// body says so per route and gives each backend's state. `generation`: the configuration
/// generation every worker uses (a reload is in use once all have switched to it).
struct Readiness {
  int status = 200;
  std::string body;
};
Readiness readiness(const Fleet& fleet, std::int64_t generation);

/// GET /admin/backends: every backend's state, load and learned capacity curve, as JSON.
std::string admin_backends(const Fleet& fleet);

}  // namespace llmux::gateway
