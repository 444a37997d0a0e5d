#pragma once
// The gateway's view of its backends' health: the active checker (one thread of its own that
// GETs each backend's health path on its interval and feeds upstream::record_check), the log
// line of every change of state, and the readiness answer of GET /health.
//
// Thread safety: the checker owns its thread and io_context; everything it changes is the
// backends' atomics. readiness() reads atomics only and may run on any worker.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "config/config.hpp"
#include "upstream/backend.hpp"
#include "upstream/health.hpp"

namespace llmux::gateway {

struct Shared;

/// One log line per change of a backend's state (warn when it goes out, info when it returns).
void log_health_event(const upstream::HealthEvent& ev);

/// Runs the active health checks of every backend whose checks are enabled.
class HealthChecker {
 public:
  /// `backends[i]` is checked with `settings[i]`; both outlive the checker.
  HealthChecker(std::vector<upstream::Backend*> backends,
                std::vector<const config::HealthChecks*> settings);
  ~HealthChecker();  // stops and joins
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  /// Starts the thread (no-op when no backend has checks enabled).
  void start();
  void stop();

 private:
  std::vector<upstream::Backend*> backends_;
  std::vector<const config::HealthChecks*> settings_;
  boost::asio::io_context ioc_;
  std::thread thread_;
};

/// GET /health: 200 when every route has a backend that takes requests, 503 otherwise; the
/// body says so per route and gives each backend's state.
struct Readiness {
  int status = 200;
  std::string body;
};
Readiness readiness(const Shared& s);

}  // namespace llmux::gateway
