#pragma once
// Faults of one request: drawn from the `--fault-*` flags, then overridden by the request's
// `X-Llmux-Fault` header. Pure (no I/O); unit-tested in tests/unit/sim/faults_test.cpp.
#include <cstdint>
#include <random>
#include <string_view>

#include "sim/config.hpp"

namespace llmux::sim {

/// Faults that apply to one request.
struct RequestFaults {
  int error_status = 0;           // >= 400: answer with this status instead of generating
  std::int64_t close_after = -1;  // close the connection after N output tokens (-1: off)
  std::int64_t stall_after = -1;  // stop sending after N output tokens, keep the socket (-1: off)
  double latency_ms = 0;          // waited before the request reaches the engine
};

/// The faults the flags give one request; each rate is a draw from `rng`.
RequestFaults draw_faults(const FaultConfig& fc, std::mt19937_64& rng);

/// Applies an `X-Llmux-Fault` header value on top of `f`. The value is a comma-separated list of
/// `key=value` items: `error=503, close-after=5, stall-after=2, latency-ms=50`. Spaces before a
/// key are skipped; the value is read as strtod() reads it (a non-number reads as 0). Items
/// without `=` and unknown keys are ignored.
void apply_fault_header(RequestFaults& f, std::string_view header);

}  // namespace llmux::sim
