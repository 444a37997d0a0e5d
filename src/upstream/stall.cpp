// SPDX-License-Identifier: Apache-2.0
#include "upstream/stall.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace llmux::upstream {
namespace {

constexpr std::int64_t kMs = 1'000'000;

std::int64_t ns(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

}  // namespace

StallWatch::StallWatch(Backend& b, std::chrono::milliseconds stall_timeout,
                       std::chrono::milliseconds idle)
    : b_(b), stall_ns_(ns(stall_timeout)), idle_ns_(ns(idle)) {}

StallWatch::~StallWatch() {
  end();
}

void StallWatch::end() {
  if (flowing_) b_.flowing.fetch_sub(1, std::memory_order_relaxed);
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
    b_.flowing.fetch_add(1, std::memory_order_relaxed);
  }
  if (flowing_) note_progress(b_, now_ns);
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
  const std::int64_t lifeless = now_ns - b_.progress_ns.load(std::memory_order_relaxed);
  const int flowing = b_.flowing.load(std::memory_order_relaxed);
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

void note_progress(Backend& b, std::int64_t now_ns) {
  if (now_ns - b.progress_ns.load(std::memory_order_relaxed) >= 50 * kMs)
    b.progress_ns.store(now_ns, std::memory_order_relaxed);
}

std::optional<HealthEvent> record_stall(Backend& b, std::int64_t now_ns, const OutlierSettings& s,
                                        const std::string& why) {
  b.last_failure_ns.store(now_ns, std::memory_order_relaxed);
  if (!s.enabled) return std::nullopt;
  std::int64_t until = b.ejected_until_ns.load(std::memory_order_relaxed);
  if (now_ns < until) return std::nullopt;  // out already (another stream said so first)
  const auto d = next_ejection(b, s);
  if (!b.ejected_until_ns.compare_exchange_strong(until, now_ns + ns(d), std::memory_order_relaxed))
    return std::nullopt;
  b.failures_in_a_row.store(0, std::memory_order_relaxed);
  b.ejections_in_a_row.fetch_add(1, std::memory_order_relaxed);
  b.ejections_total.fetch_add(1, std::memory_order_relaxed);
  b.stalled.store(true, std::memory_order_relaxed);
  const auto secs =
      d.count() % 1000 == 0 ? fmt::format("{}s", d.count() / 1000) : fmt::format("{}ms", d.count());
  return HealthEvent{HealthEvent::Kind::ejected,
                     fmt::format("backend {} ejected for {}: stalled ({})", b.name, secs, why)};
}

std::optional<HealthEvent> record_probe(Backend& b, bool passed, std::int64_t now_ns,
                                        std::chrono::milliseconds hold, const std::string& why) {
  if (!b.stalled.load(std::memory_order_relaxed)) return std::nullopt;
  if (!passed) {
    const std::int64_t until = now_ns + ns(hold);
    if (b.ejected_until_ns.load(std::memory_order_relaxed) < until)
      b.ejected_until_ns.store(until, std::memory_order_relaxed);
    return std::nullopt;
  }
  b.stalled.store(false, std::memory_order_relaxed);
  b.ejected_until_ns.store(0, std::memory_order_relaxed);
  b.ejections_in_a_row.store(0, std::memory_order_relaxed);
  b.failures_in_a_row.store(0, std::memory_order_relaxed);
  b.progress_ns.store(now_ns, std::memory_order_relaxed);
  return HealthEvent{
      HealthEvent::Kind::readmitted,
      fmt::format("backend {} back in service: a probe generation completed ({})", b.name, why)};
}

}  // namespace llmux::upstream
