// SPDX-License-Identifier: Apache-2.0
#include "sim/runtime_faults.hpp"

#include <boost/json.hpp>

#include <cmath>

#include <fmt/format.h>

namespace llmux::sim {
namespace {

namespace json = boost::json;

constexpr double kMaxSeconds = 1e7;      // crash_at, not_ready_for: about 115 days
constexpr double kMaxLatencyMs = 3.6e6;  // one hour
constexpr std::int64_t kMaxCount = 1'000'000'000'000;

FaultsError bad(std::string_view field, std::string_view must) {
  return {std::string(field), fmt::format("invalid value for '{}': {}", field, must)};
}

/// A JSON number in [lowest, highest], or the error naming `field`.
std::variant<double, FaultsError> number(const json::value& value, std::string_view field,
                                         double lowest, double highest) {
  const std::string must = fmt::format("must be a number from {} to {}", lowest, highest);
  if (!value.is_number()) return bad(field, must);
  const double parsed = value.to_number<double>();
  if (!std::isfinite(parsed) || parsed < lowest || parsed > highest) return bad(field, must);
  return parsed;
}

/// A JSON integer (not 1.0) in [lowest, kMaxCount], or the error naming `field`.
std::variant<std::int64_t, FaultsError> integer(const json::value& value, std::string_view field,
                                                std::int64_t lowest) {
  const std::string must = fmt::format("must be an integer from {} to {}", lowest, kMaxCount);
  std::int64_t parsed = 0;
  if (value.is_int64()) {
    parsed = value.get_int64();
  } else if (value.is_uint64() && value.get_uint64() <= static_cast<std::uint64_t>(kMaxCount)) {
    parsed = static_cast<std::int64_t>(value.get_uint64());
  } else {
    return bad(field, must);
  }
  if (parsed < lowest || parsed > kMaxCount) return bad(field, must);
  return parsed;
}

std::variant<bool, FaultsError> boolean(const json::value& value, std::string_view field) {
  if (!value.is_bool()) return bad(field, "must be true or false");
  return value.get_bool();
}

/// Reads one field into `faults`; an error when the value is wrong.
std::optional<FaultsError> read_field(RuntimeFaults& faults, std::string_view key,
                                      const json::value& value) {
  auto set = [](auto& dst, auto result) -> std::optional<FaultsError> {
    if (auto* error = std::get_if<FaultsError>(&result)) return *error;
    dst = std::get<0>(result);
    return std::nullopt;
  };
  if (key == "error_rate") return set(faults.error_rate, number(value, key, 0, 1));
  if (key == "error_statuses") {
    const char* must = "must be a non-empty array of HTTP statuses from 400 to 599";
    if (!value.is_array() || value.get_array().empty() || value.get_array().size() > 64)
      return bad(key, must);
    faults.error_statuses.clear();
    for (const auto& status : value.get_array()) {
      if (!status.is_int64() || status.get_int64() < 400 || status.get_int64() > 599)
        return bad(key, must);
      faults.error_statuses.push_back(static_cast<int>(status.get_int64()));
    }
    return std::nullopt;
  }
  if (key == "crash_after_requests")
    return set(faults.crash_after_requests, integer(value, key, 1));
  if (key == "crash_at") return set(faults.crash_at, number(value, key, 0, kMaxSeconds));
  if (key == "hang") return set(faults.hang, boolean(value, key));
  if (key == "freeze") return set(faults.freeze, boolean(value, key));
  if (key == "stall_after") return set(faults.stall_after, integer(value, key, 0));
  if (key == "stall_rate") return set(faults.stall_rate, number(value, key, 0, 1));
  if (key == "close_after") return set(faults.close_after, integer(value, key, 0));
  if (key == "close_rate") return set(faults.close_rate, number(value, key, 0, 1));
  if (key == "not_ready_for") return set(faults.not_ready_for, number(value, key, 0, kMaxSeconds));
  if (key == "malformed") {
    const char* must = R"(must be "json" or "sse")";
    if (!value.is_string()) return bad(key, must);
    if (value.get_string() == "json") {
      faults.malformed = Malformed::json;
    } else if (value.get_string() == "sse") {
      faults.malformed = Malformed::sse;
    } else {
      return bad(key, must);
    }
    return std::nullopt;
  }
  if (key == "latency_ms") return set(faults.latency_ms, number(value, key, 0, kMaxLatencyMs));
  if (key == "slow_factor") return set(faults.slow_factor, number(value, key, 1, 1000));
  if (key == "refuse_new") return set(faults.refuse_new, boolean(value, key));
  return FaultsError{std::string(key), fmt::format("unknown field '{}'", key)};
}

}  // namespace

std::variant<RuntimeFaults, FaultsError> parse_runtime_faults(std::string_view body) {
  boost::system::error_code ec;
  json::value document = json::parse(body, ec);
  if (ec) return FaultsError{"", fmt::format("the body is not JSON: {}", ec.message())};
  if (!document.is_object()) return FaultsError{"", "the body must be a JSON object"};
  RuntimeFaults faults;
  for (const auto& [key, val] : document.get_object()) {
    if (auto error = read_field(faults, key, val)) return *error;
  }
  if (!faults.error_statuses.empty() && !faults.error_rate)
    return FaultsError{"error_statuses", "'error_statuses' needs 'error_rate'"};
  if (faults.stall_rate && !faults.stall_after)
    return FaultsError{"stall_rate", "'stall_rate' needs 'stall_after'"};
  if (faults.close_rate && !faults.close_after)
    return FaultsError{"close_rate", "'close_rate' needs 'close_after'"};
  if (faults.error_rate && faults.error_statuses.empty()) faults.error_statuses = {500};
  return faults;
}

namespace {

/// A whole number as a JSON integer (`1`, not `1E0`), others as they are.
json::value num(double value) {
  if (value == std::floor(value) && std::fabs(value) < 9e15)
    return static_cast<std::int64_t>(value);
  return value;
}

}  // namespace

json::object runtime_faults_json(const RuntimeFaults& faults) {
  json::object fields;
  if (faults.error_rate) {
    fields["error_rate"] = num(*faults.error_rate);
    json::array statuses;
    for (int status : faults.error_statuses) statuses.push_back(status);
    fields["error_statuses"] = std::move(statuses);
  }
  if (faults.crash_after_requests) fields["crash_after_requests"] = *faults.crash_after_requests;
  if (faults.crash_at) fields["crash_at"] = num(*faults.crash_at);
  if (faults.hang) fields["hang"] = true;
  if (faults.freeze) fields["freeze"] = true;
  if (faults.stall_after) fields["stall_after"] = *faults.stall_after;
  if (faults.stall_rate) fields["stall_rate"] = num(*faults.stall_rate);
  if (faults.close_after) fields["close_after"] = *faults.close_after;
  if (faults.close_rate) fields["close_rate"] = num(*faults.close_rate);
  if (faults.not_ready_for) fields["not_ready_for"] = num(*faults.not_ready_for);
  if (faults.malformed != Malformed::none)
    fields["malformed"] = faults.malformed == Malformed::json ? "json" : "sse";
  if (faults.latency_ms) fields["latency_ms"] = num(*faults.latency_ms);
  if (faults.slow_factor) fields["slow_factor"] = num(*faults.slow_factor);
  if (faults.refuse_new) fields["refuse_new"] = true;
  return fields;
}

void apply_runtime_faults(RequestFaults& faults, const RuntimeFaults& runtime,
                          std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (runtime.error_rate) {
    faults.error_status = 0;
    if (*runtime.error_rate > 0 && uniform(rng) < *runtime.error_rate &&
        !runtime.error_statuses.empty())
      faults.error_status = runtime.error_statuses[rng() % runtime.error_statuses.size()];
  }
  if (runtime.close_after) {
    faults.close_after =
        uniform(rng) < runtime.close_rate.value_or(1.0) ? *runtime.close_after : -1;
  }
  if (runtime.stall_after) {
    faults.stall_after =
        uniform(rng) < runtime.stall_rate.value_or(1.0) ? *runtime.stall_after : -1;
  }
  if (runtime.latency_ms) faults.latency_ms = *runtime.latency_ms;
  if (runtime.malformed != Malformed::none) faults.malformed = runtime.malformed;
}

}  // namespace llmux::sim
