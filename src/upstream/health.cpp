// SPDX-License-Identifier: Apache-2.0
#include "upstream/health.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llmux::upstream {
namespace {

std::string seconds(std::chrono::milliseconds duration) {
  return duration.count() % 1000 == 0 ? fmt::format("{}s", duration.count() / 1000)
                                      : fmt::format("{}ms", duration.count());
}

}  // namespace

Verdict judge(const Outcome& outcome) {
  using K = Outcome::Kind;
  switch (outcome.kind) {
    case K::client_left:
      return Verdict::neutral;
    case K::ok:
      return outcome.status >= 500 ? Verdict::failure : Verdict::success;
    case K::connect_failed:
    case K::reset_before_send:
    case K::timeout:
    case K::broken:
    case K::bad_response:
    case K::broken_mid_stream:
      return Verdict::failure;
  }
  return Verdict::neutral;
}

std::chrono::milliseconds next_ejection(const Backend& backend, const OutlierSettings& settings) {
  const int doublings =
      std::clamp(backend.ejections_in_a_row.load(std::memory_order_relaxed), 0, 30);
  const auto backoff_ms = settings.base_ejection.count() << doublings;
  return std::chrono::milliseconds(std::min<std::int64_t>(
      backoff_ms > 0 ? backoff_ms : settings.max_ejection.count(), settings.max_ejection.count()));
}

std::optional<HealthEvent> record_outcome(Backend& backend, const Outcome& outcome,
                                          std::int64_t now_ns, const OutlierSettings& settings) {
  const Verdict verdict = judge(outcome);
  if (verdict == Verdict::neutral) return std::nullopt;
  if (verdict == Verdict::success) {
    // Loads first: the common case (nothing to reset) writes nothing to the shared line.
    if (backend.failures_in_a_row.load(std::memory_order_relaxed) != 0)
      backend.failures_in_a_row.store(0, std::memory_order_relaxed);
    if (backend.stalled.load(std::memory_order_relaxed))
      backend.stalled.store(false, std::memory_order_relaxed);
    if (backend.ejections_in_a_row.load(std::memory_order_relaxed) > 0 &&
        backend.ejections_in_a_row.exchange(0, std::memory_order_relaxed) > 0)
      return HealthEvent{HealthEvent::Kind::readmitted,
                         fmt::format("backend {} back in service: a request succeeded after its "
                                     "ejection",
                                     backend.name)};
    return std::nullopt;
  }
  backend.last_failure_ns.store(now_ns, std::memory_order_relaxed);
  if (!settings.enabled) return std::nullopt;
  // Failures of requests that began before an ejection do not extend it.
  if (now_ns < backend.ejected_until_ns.load(std::memory_order_relaxed)) return std::nullopt;
  const int failures = backend.failures_in_a_row.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool trial = backend.on_trial();
  if (!trial && failures < settings.consecutive_failures) return std::nullopt;
  int expected = failures;
  // One caller ejects: the one whose count is still current.
  if (!backend.failures_in_a_row.compare_exchange_strong(expected, 0, std::memory_order_relaxed))
    return std::nullopt;
  const auto backoff = next_ejection(backend, settings);
  backend.ejected_until_ns.store(now_ns + std::chrono::nanoseconds(backoff).count(),
                                 std::memory_order_relaxed);
  backend.ejections_in_a_row.fetch_add(1, std::memory_order_relaxed);
  backend.ejections_total.fetch_add(1, std::memory_order_relaxed);
  const std::string why = trial
                              ? "its trial request failed"
                              : fmt::format("{} failures in a row", settings.consecutive_failures);
  return HealthEvent{
      HealthEvent::Kind::ejected,
      fmt::format("backend {} ejected for {}: {} (last: {})", backend.name, seconds(backoff), why,
                  outcome.message.empty() ? to_string(outcome.kind) : outcome.message)};
}

std::optional<HealthEvent> record_check(Backend& backend, CheckCounts& counts, bool passed,
                                        std::string_view why, int healthy_threshold,
                                        int unhealthy_threshold) {
  if (passed) {
    counts.fails = 0;
    ++counts.passes;
    if (!backend.checks_ok.load(std::memory_order_relaxed) && counts.passes >= healthy_threshold) {
      backend.checks_ok.store(true, std::memory_order_relaxed);
      return HealthEvent{HealthEvent::Kind::healthy,
                         fmt::format("backend {} healthy: {} health check{} passed", backend.name,
                                     counts.passes, counts.passes == 1 ? "" : "s")};
    }
    return std::nullopt;
  }
  counts.passes = 0;
  ++counts.fails;
  if (backend.checks_ok.load(std::memory_order_relaxed) && counts.fails >= unhealthy_threshold) {
    backend.checks_ok.store(false, std::memory_order_relaxed);
    return HealthEvent{HealthEvent::Kind::unhealthy,
                       fmt::format("backend {} unhealthy: {} health check{} failed in a row ({})",
                                   backend.name, counts.fails, counts.fails == 1 ? "" : "s", why)};
  }
  return std::nullopt;
}

std::string_view state_name(const Backend& backend, std::int64_t now_ns) {
  if (!backend.checks_ok.load(std::memory_order_relaxed)) return "unhealthy";
  if (now_ns < backend.ejected_until_ns.load(std::memory_order_relaxed))
    return backend.stalled.load(std::memory_order_relaxed) ? "stalled" : "ejected";
  if (backend.on_trial()) return "trial";
  return "up";
}

}  // namespace llmux::upstream
