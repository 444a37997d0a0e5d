// SPDX-License-Identifier: Apache-2.0
#include "upstream/stall.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llmux::upstream {
namespace {

constexpr std::int64_t kMs = 1'000'000;

std::int64_t ns(std::chrono::milliseconds duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

}  // namespace

StallWatch::StallWatch(Backend& backend, std::chrono::milliseconds stall_timeout,
                       std::chrono::milliseconds idle)
    : backend_(backend), stall_ns_(ns(stall_timeout)), idle_ns_(ns(idle)) {}

StallWatch::~StallWatch() {
  end();
}

void StallWatch::end() {
  if (flowing_) backend_.flowing.fetch_sub(1, std::memory_order_relaxed);
  flowing_ = false;
  stall_ns_ = 0;
}

void StallWatch::on_bytes(std::int64_t now_ns) {
  if (stall_ns_ == 0) return;
  if (!seen_) first_ns_ = now_ns;
  seen_ = true;
  last_ns_ = now_ns;
  if (!flowing_ && now_ns - first_ns_ >= stall_ns_ / 2) {
    flowing_ = true;
    backend_.flowing.fetch_add(1, std::memory_order_relaxed);
  }
  if (flowing_) note_progress(backend_, now_ns);
}

std::chrono::milliseconds StallWatch::read_wait() const {
  if (!active()) return std::chrono::milliseconds(idle_ns_ / kMs);
  // Often enough to judge within a quarter of the fast rule's time.
  return std::chrono::milliseconds(std::max<std::int64_t>(50, stall_ns_ / 4 / kMs));
}

StallWatch::Verdict StallWatch::judge(std::int64_t now_ns, std::string& why) const {
  const std::int64_t silent = now_ns - last_ns_;
  if (!active()) return Verdict::idle;
  if (silent >= idle_ns_) return Verdict::idle;
  const std::int64_t lifeless = now_ns - backend_.progress_ns.load(std::memory_order_relaxed);
  const int flowing = backend_.flowing.load(std::memory_order_relaxed);
  if (flowing >= 2 && lifeless >= stall_ns_ / 2 && silent >= stall_ns_ / 2) {
    why = fmt::format("no token on any of its {} flowing streams for {} ms", flowing,
                      std::min(lifeless, silent) / kMs);
    return Verdict::stalled;
  }
  if (silent >= stall_ns_ && lifeless >= stall_ns_) {
    why = fmt::format("no token on a stream for {} ms, and no other sign of life", silent / kMs);
    return Verdict::stalled;
  }
  return Verdict::wait;
}

void note_progress(Backend& backend, std::int64_t now_ns) {
  if (now_ns - backend.progress_ns.load(std::memory_order_relaxed) >= 50 * kMs)
    backend.progress_ns.store(now_ns, std::memory_order_relaxed);
}

std::optional<HealthEvent> record_stall(Backend& backend, std::int64_t now_ns,
                                        const OutlierSettings& settings, const std::string& why) {
  backend.last_failure_ns.store(now_ns, std::memory_order_relaxed);
  if (!settings.enabled) return std::nullopt;
  std::int64_t until = backend.ejected_until_ns.load(std::memory_order_relaxed);
  if (now_ns < until) return std::nullopt;  // out already (another stream said so first)
  const auto backoff = next_ejection(backend, settings);
  if (!backend.ejected_until_ns.compare_exchange_strong(until, now_ns + ns(backoff),
                                                        std::memory_order_relaxed))
    return std::nullopt;
  backend.failures_in_a_row.store(0, std::memory_order_relaxed);
  backend.ejections_in_a_row.fetch_add(1, std::memory_order_relaxed);
  backend.ejections_total.fetch_add(1, std::memory_order_relaxed);
  backend.stalled.store(true, std::memory_order_relaxed);
  const auto secs = backoff.count() % 1000 == 0 ? fmt::format("{}s", backoff.count() / 1000)
                                                : fmt::format("{}ms", backoff.count());
  return HealthEvent{
      HealthEvent::Kind::ejected,
      fmt::format("backend {} ejected for {}: stalled ({})", backend.name, secs, why)};
}

std::optional<HealthEvent> record_probe(Backend& backend, bool passed, std::int64_t now_ns,
                                        std::chrono::milliseconds hold, const std::string& why) {
  if (!backend.stalled.load(std::memory_order_relaxed)) return std::nullopt;
  if (!passed) {
    const std::int64_t until = now_ns + ns(hold);
    if (backend.ejected_until_ns.load(std::memory_order_relaxed) < until)
      backend.ejected_until_ns.store(until, std::memory_order_relaxed);
    return std::nullopt;
  }
  backend.stalled.store(false, std::memory_order_relaxed);
  backend.ejected_until_ns.store(0, std::memory_order_relaxed);
  backend.ejections_in_a_row.store(0, std::memory_order_relaxed);
  backend.failures_in_a_row.store(0, std::memory_order_relaxed);
  backend.progress_ns.store(now_ns, std::memory_order_relaxed);
  return HealthEvent{HealthEvent::Kind::readmitted,
                     fmt::format("backend {} back in service: a probe generation completed ({})",
                                 backend.name, why)};
}

}  // namespace llmux::upstream
