// SPDX-License-Identifier: Apache-2.0
#include "upstream/health.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llmux::upstream {
namespace {

std::string seconds(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{}s", d.count() / 1000)
                               : fmt::format("{}ms", d.count());
}

}  // namespace

Verdict judge(const Outcome& o) {
  using K = Outcome::Kind;
  switch (o.kind) {
    case K::client_left:
      return Verdict::neutral;
    case K::ok:
      return o.status >= 500 ? Verdict::failure : Verdict::success;
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

std::chrono::milliseconds next_ejection(const Backend& b, const OutlierSettings& s) {
  const int k = std::clamp(b.ejections_in_a_row.load(std::memory_order_relaxed), 0, 30);
  const auto d = s.base_ejection.count() << k;
  return std::chrono::milliseconds(
      std::min<std::int64_t>(d > 0 ? d : s.max_ejection.count(), s.max_ejection.count()));
}

std::optional<HealthEvent> record_outcome(Backend& b, const Outcome& o, std::int64_t now_ns,
                                          const OutlierSettings& s) {
  const Verdict v = judge(o);
  if (v == Verdict::neutral) return std::nullopt;
  if (v == Verdict::success) {
    // Loads first: the common case (nothing to reset) writes nothing to the shared line.
    if (b.failures_in_a_row.load(std::memory_order_relaxed) != 0)
      b.failures_in_a_row.store(0, std::memory_order_relaxed);
    if (b.stalled.load(std::memory_order_relaxed))
      b.stalled.store(false, std::memory_order_relaxed);
    if (b.ejections_in_a_row.load(std::memory_order_relaxed) > 0 &&
        b.ejections_in_a_row.exchange(0, std::memory_order_relaxed) > 0)
      return HealthEvent{HealthEvent::Kind::readmitted,
                         fmt::format("backend {} back in service: a request succeeded after its "
                                     "ejection",
                                     b.name)};
    return std::nullopt;
  }
  b.last_failure_ns.store(now_ns, std::memory_order_relaxed);
  if (!s.enabled) return std::nullopt;
  // Failures of requests that began before an ejection do not extend it.
  if (now_ns < b.ejected_until_ns.load(std::memory_order_relaxed)) return std::nullopt;
  const int n = b.failures_in_a_row.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool trial = b.on_trial();
  if (!trial && n < s.consecutive_failures) return std::nullopt;
  int expected = n;
  // One caller ejects: the one whose count is still current.
  if (!b.failures_in_a_row.compare_exchange_strong(expected, 0, std::memory_order_relaxed))
    return std::nullopt;
  const auto d = next_ejection(b, s);
  b.ejected_until_ns.store(now_ns + std::chrono::nanoseconds(d).count(), std::memory_order_relaxed);
  b.ejections_in_a_row.fetch_add(1, std::memory_order_relaxed);
  b.ejections_total.fetch_add(1, std::memory_order_relaxed);
  const std::string why = trial ? "its trial request failed"
                                : fmt::format("{} failures in a row", s.consecutive_failures);
  return HealthEvent{HealthEvent::Kind::ejected,
                     fmt::format("backend {} ejected for {}: {} (last: {})", b.name, seconds(d),
                                 why, o.message.empty() ? to_string(o.kind) : o.message)};
}

std::optional<HealthEvent> record_check(Backend& b, CheckCounts& counts, bool ok,
                                        std::string_view why, int healthy_threshold,
                                        int unhealthy_threshold) {
  if (ok) {
    counts.fails = 0;
    ++counts.passes;
    if (!b.checks_ok.load(std::memory_order_relaxed) && counts.passes >= healthy_threshold) {
      b.checks_ok.store(true, std::memory_order_relaxed);
      return HealthEvent{HealthEvent::Kind::healthy,
                         fmt::format("backend {} healthy: {} health check{} passed", b.name,
                                     counts.passes, counts.passes == 1 ? "" : "s")};
    }
    return std::nullopt;
  }
  counts.passes = 0;
  ++counts.fails;
  if (b.checks_ok.load(std::memory_order_relaxed) && counts.fails >= unhealthy_threshold) {
    b.checks_ok.store(false, std::memory_order_relaxed);
    return HealthEvent{HealthEvent::Kind::unhealthy,
                       fmt::format("backend {} unhealthy: {} health check{} failed in a row ({})",
                                   b.name, counts.fails, counts.fails == 1 ? "" : "s", why)};
  }
  return std::nullopt;
}

std::string_view state_name(const Backend& b, std::int64_t now_ns) {
  if (!b.checks_ok.load(std::memory_order_relaxed)) return "unhealthy";
  if (now_ns < b.ejected_until_ns.load(std::memory_order_relaxed))
    return b.stalled.load(std::memory_order_relaxed) ? "stalled" : "ejected";
  if (b.on_trial()) return "trial";
  return "up";
}

}  // namespace llmux::upstream
