// SPDX-License-Identifier: Apache-2.0
#pragma once
// A backend's health, from two sources, kept in its atomics (upstream/backend.hpp):
//
//   passive   every attempt's Outcome (record_outcome): connect failures, timeouts, broken or
//             invalid responses and 5xx count as failures; `consecutive_failures` of them in a
//             row eject the backend for a back-off that doubles with each ejection in a row
//             (capped). After the back-off it is on trial: one request at a time until one
//             succeeds (a failed trial ejects it again at once), so a backend whose connects hang
//             costs one connect timeout per ejection, not one per request.
//   active    health checks (the gateway's checker thread calls record_check): unhealthy after
//             `unhealthy_threshold` failed checks in a row, healthy again after
//             `healthy_threshold` passes.
//
// A backend takes new requests when its checks pass and it is not ejected (Backend::usable);
// when every backend of a route is out, the policy layer still tries the least recently failed
// one (policy::pick_and_acquire), never a silent blackhole.
//
// Pure logic on atomics: callable from any worker; each change of state is returned as a
// HealthEvent for exactly one caller to log.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "upstream/backend.hpp"
#include "upstream/outcome.hpp"

namespace llmux::upstream {

struct OutlierSettings {
  bool enabled = true;
  int consecutive_failures = 3;
  std::chrono::milliseconds base_ejection{5000};
  std::chrono::milliseconds max_ejection{60000};
  std::chrono::milliseconds stall_timeout{3000};  // upstream/stall.hpp; 0: off
};

/// What an outcome says about the backend.
enum class Verdict { success, failure, neutral };
/// Failure: connect failed, reset before send, timeout, broken, bad response, broken
/// mid-stream, or a 5xx status; neutral: the client left; success: anything else.
Verdict judge(const Outcome& outcome);

/// One change of a backend's state, for one log line.
struct HealthEvent {
  enum class Kind { ejected, readmitted, unhealthy, healthy };
  Kind kind;
  std::string message;  // names the backend and says why
};

/// Passive outlier detection: records one attempt's outcome at `now_ns` (core/clock mono_ns).
std::optional<HealthEvent> record_outcome(Backend& backend, const Outcome& outcome,
                                          std::int64_t now_ns, const OutlierSettings& settings);

/// How long the next ejection of `backend` lasts.
std::chrono::milliseconds next_ejection(const Backend& backend, const OutlierSettings& settings);

/// Active checks of one backend: the counts its checker keeps (one thread).
struct CheckCounts {
  int passes = 0;  // in a row
  int fails = 0;   // in a row
};
std::optional<HealthEvent> record_check(Backend& backend, CheckCounts& counts, bool passed,
                                        std::string_view why, int healthy_threshold,
                                        int unhealthy_threshold);

/// "up", "trial" (back after an ejection, one request at a time), "ejected", "stalled" (ejected
/// for a stall, upstream/stall.hpp) or "unhealthy".
std::string_view state_name(const Backend& backend, std::int64_t now_ns);

}  // namespace llmux::upstream
