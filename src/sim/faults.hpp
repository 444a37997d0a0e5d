// SPDX-License-Identifier: Apache-2.0
#pragma once
// Faults of one request: drawn from the `--fault-*` flags, then from the runtime set
// (sim/runtime_faults.hpp), then overridden by the request's `X-Llmux-Fault` header; and the
// malformed bytes a `malformed` fault sends. Pure (no I/O); unit-tested in
// tests/unit/sim/faults_test.cpp. Thread safety: plain values and functions.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "sim/config.hpp"

namespace llmux::sim {

/// Broken content on a valid HTTP framing (runtime fault `malformed`).
enum class Malformed {
  none,
  json,  // a 200 body that is not JSON; in a stream, the first token's `data:` JSON cut short
  sse,   // in a stream, the first token's event loses its blank line and garbage follows
};

/// Faults that apply to one request.
struct RequestFaults {
  int error_status = 0;           // >= 400: answer with this status instead of generating
  std::int64_t close_after = -1;  // close the connection after N output tokens (-1: off)
  std::int64_t stall_after = -1;  // stop sending after N output tokens, keep the socket (-1: off)
  double latency_ms = 0;          // waited before the request reaches the engine
  Malformed malformed = Malformed::none;
};

/// The faults the flags give one request; each rate is a draw from `rng`.
RequestFaults draw_faults(const FaultConfig& config, std::mt19937_64& rng);

/// Applies an `X-Llmux-Fault` header value on top of `faults`. The value is a comma-separated list
/// of `key=value` items: `error=503, close-after=5, stall-after=2, latency-ms=50`. Spaces before a
/// key are skipped; the value is read as strtod() reads it (a non-number reads as 0). Items
/// without `=` and unknown keys are ignored.
void apply_fault_header(RequestFaults& faults, std::string_view header);

/// The line `malform_frame` puts after an event that lost its blank line (Malformed::sse).
inline constexpr std::string_view kGarbageLine = "garbage}{ from llmux-sim\n";

/// Breaks the SSE event that starts at `out[start]` (one whole `[event: …\n]data: …\n\n`
/// event ends `out`). json: its `data:` JSON is cut to half its length (the event keeps its
/// blank line); sse: the blank line is dropped and kGarbageLine follows, so a reader joins it
/// with the next event. Nothing for Malformed::none or when `out` past `start` is no such event.
void malform_frame(std::string& out, std::size_t start, Malformed kind);

/// A non-streaming body cut to half its length (Malformed::json; unchanged otherwise).
void malform_body(std::string& body, Malformed kind);

}  // namespace llmux::sim
