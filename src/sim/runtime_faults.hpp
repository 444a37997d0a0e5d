// SPDX-License-Identifier: Apache-2.0
#pragma once
// Faults set while the simulator runs, by `POST /admin/faults`: the JSON body parsed and
// validated (an error names the field), the set written back as JSON (`GET /admin/faults`), and
// its effect on one request's faults. Pure (no I/O, no clock); unit-tested in
// tests/unit/sim/runtime_faults_test.cpp. The state the set drives (hang, crash, not ready,
// listening) lives in sim/admin.hpp.
//
// Thread safety: plain values and functions, no shared state.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/faults.hpp"

namespace llmux::sim {

/// One runtime fault set (every field optional; `{}` is the empty set). Field names are the
/// JSON's; docs/sim.md describes each.
struct RuntimeFaults {
  std::optional<double> error_rate;                  // [0, 1]
  std::vector<int> error_statuses;                   // 400..599; [500] when error_rate alone
  std::optional<std::int64_t> crash_after_requests;  // >= 1 generation requests
  std::optional<double> crash_at;                    // seconds from now (wall), >= 0
  bool hang = false;
  bool freeze = false;  // the engine stops: no running stream gets another token until cleared
  std::optional<std::int64_t> stall_after;  // output tokens, >= 0
  std::optional<double> stall_rate;         // [0, 1]; needs stall_after (default 1)
  std::optional<std::int64_t> close_after;  // output tokens, >= 0
  std::optional<double> close_rate;         // [0, 1]; needs close_after (default 1)
  std::optional<double> not_ready_for;      // seconds from now (wall), >= 0
  Malformed malformed = Malformed::none;
  std::optional<double> latency_ms;   // >= 0
  std::optional<double> slow_factor;  // 1-1000: the engine runs this many times slower
  bool refuse_new = false;

  bool operator==(const RuntimeFaults&) const = default;
};

/// Why a body was refused: the field at fault (empty: the body as a whole) and a message that
/// names it.
struct FaultsError {
  std::string field;
  std::string message;
};

/// Parses a `POST /admin/faults` body: a JSON object of the fields above, nothing else. Unknown
/// fields, wrong types (an integer field takes only JSON integers) and values out of range are
/// refused. Never throws.
std::variant<RuntimeFaults, FaultsError> parse_runtime_faults(std::string_view body);

/// The set as JSON: only the fields that are set (hang and refuse_new only when true), so that
/// parse_runtime_faults(serialize(runtime_faults_json(faults))) gives `faults` back.
boost::json::object runtime_faults_json(const RuntimeFaults& faults);

/// Applies the runtime set on top of the faults the flags drew, kind by kind: a kind the set
/// names (errors, close, stall, latency, malformed) replaces the flags' draw of that kind (so
/// `"error_rate": 0` turns the flags' errors off); a kind it leaves out keeps the flags'. Each
/// rate is a draw from `rng`.
void apply_runtime_faults(RequestFaults& faults, const RuntimeFaults& runtime,
                          std::mt19937_64& rng);

}  // namespace llmux::sim
