// SPDX-License-Identifier: Apache-2.0
#pragma once
// Clocks. Monotonic time is CLOCK_MONOTONIC (system-wide on Linux), so timestamps taken in two
// processes on one machine are comparable; that is what lets `llmux bench` be checked against
// the simulator's ground truth.
#include <time.h>

#include <chrono>
#include <cstdint>

namespace llmux {

using MonoClock = std::chrono::steady_clock;

/// Nanoseconds in a second: the unit of mono_ns() and coarse_ns().
inline constexpr std::int64_t kNanosecondsPerSecond = 1'000'000'000;

/// Nanoseconds on CLOCK_MONOTONIC.
inline std::int64_t mono_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(MonoClock::now().time_since_epoch())
      .count();
}

/// Nanoseconds on CLOCK_MONOTONIC_COARSE: the same clock as mono_ns() as of the kernel's last
/// tick (1-10 ms behind it), read without the TSC: about a third of mono_ns()'s cost (11 vs
/// 36 ns here). For what is checked at a coarser step anyway: per-socket deadlines (armed several
/// times a request, checked every 50 ms).
inline std::int64_t coarse_ns() {
  timespec now;
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

/// Seconds since the Unix epoch (wall clock), as a double.
inline double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Whole seconds since the Unix epoch (OpenAI's `created`).
inline std::int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Milliseconds since the Unix epoch (wall clock: quota windows line up across replicas).
inline std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace llmux
