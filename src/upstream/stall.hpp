// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stall detection: a backend that stops producing tokens in the middle of the event streams it
// serves. vLLM's engine advances every running sequence each step (tens of ms), so on a working
// backend tokens keep arriving on its streams; when the engine hangs they stop on all of them.
// A single stream can pause for a while on a working backend (vLLM preempts a sequence when its
// KV cache runs short and recomputes it later), so one silent stream proves nothing while the
// backend shows signs of life elsewhere.
//
// Signs of life (Backend::progress_ns): a byte on a "flowing" stream — one that has been
// producing for at least half the stall timeout — or any response completing. Streams that stop
// after a few tokens never become flowing, so they cannot vouch for the backend.
//
// A stream, once its first body byte came, judges when it has waited long enough:
//   stalled, every flowing stream    at least 2 flowing streams, no sign of life for
//                                    stall_timeout/2, and this one silent as long;
//   stalled, this stream             this one silent for stall_timeout and no sign of life for as
//                                    long (a backend with one stream, or none flowing);
//   wait                             otherwise (another stream vouches for the backend);
//   idle                             silent for timeouts.idle in any case.
// A stall ejects the backend at once (record_stall) and ends its silent streams with an error.
//
// One StallWatch per stream, on its worker; the backend's counters are atomics.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "upstream/backend.hpp"
#include "upstream/health.hpp"

namespace llmux::upstream {

class StallWatch {
 public:
  enum class Verdict { wait, stalled, idle };

  /// `stall_timeout` 0: off (only the idle timeout applies).
  StallWatch(Backend& backend, std::chrono::milliseconds stall_timeout,
             std::chrono::milliseconds idle);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  /// Body bytes arrived at `now_ns`.
  void on_bytes(std::int64_t now_ns);
  /// The stream ended (any way): it no longer counts as flowing.
  void end();
  /// Whether the stream is being judged (stall detection on and its first body byte came).
  bool active() const { return stall_ns_ > 0 && seen_; }
  /// How long the next read may wait before judge() is asked (the full idle timeout when not
  /// active).
  std::chrono::milliseconds read_wait() const;
  /// After a read waited read_wait() with nothing: what now. `why` says it for a stall.
  Verdict judge(std::int64_t now_ns, std::string& why) const;

 private:
  Backend& backend_;
  std::int64_t stall_ns_;
  std::int64_t idle_ns_;
  std::int64_t first_ns_ = 0;  // first body byte
  std::int64_t last_ns_ = 0;   // latest body byte
  bool seen_ = false;          // a body byte came
  bool flowing_ = false;       // counted in backend_.flowing
};

/// A sign of life from `backend` at `now_ns` (a response completed, a flowing stream's byte).
/// Writes the shared line at most every 50 ms.
void note_progress(Backend& backend, std::int64_t now_ns);

/// Ejects `backend` at once for a stall (outlier detection on, not ejected already): the back-off
/// of record_outcome, one caller wins; marks it stalled. The event names the backend and `why`.
/// While stalled, a backend with active checks is probed with a short generation at each check
/// and stays out until one completes (record_probe); without checks, the back-off runs out into
/// a trial request as after any ejection.
std::optional<HealthEvent> record_stall(Backend& backend, std::int64_t now_ns,
                                        const OutlierSettings& settings, const std::string& why);

/// A probe generation of a stalled backend: passed → back in service at once (ejection cleared);
/// failed → kept out for `hold` more (no trial request is risked on it meanwhile).
std::optional<HealthEvent> record_probe(Backend& backend, bool passed, std::int64_t now_ns,
                                        std::chrono::milliseconds hold, const std::string& why);

}  // namespace llmux::upstream
