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

/// A JSON number in [lo, hi], or the error naming `field`.
std::variant<double, FaultsError> number(const json::value& v, std::string_view field, double lo,
                                         double hi) {
  const std::string must = fmt::format("must be a number from {} to {}", lo, hi);
  if (!v.is_number()) return bad(field, must);
  const double d = v.to_number<double>();
  if (!std::isfinite(d) || d < lo || d > hi) return bad(field, must);
  return d;
}

/// A JSON integer (not 1.0) in [lo, kMaxCount], or the error naming `field`.
std::variant<std::int64_t, FaultsError> integer(const json::value& v, std::string_view field,
                                                std::int64_t lo) {
  const std::string must = fmt::format("must be an integer from {} to {}", lo, kMaxCount);
  std::int64_t i = 0;
  if (v.is_int64()) {
    i = v.get_int64();
  } else if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(kMaxCount)) {
    i = static_cast<std::int64_t>(v.get_uint64());
  } else {
    return bad(field, must);
  }
  if (i < lo || i > kMaxCount) return bad(field, must);
  return i;
}

std::variant<bool, FaultsError> boolean(const json::value& v, std::string_view field) {
  if (!v.is_bool()) return bad(field, "must be true or false");
  return v.get_bool();
}

/// Reads one field into `f`; an error when the value is wrong.
std::optional<FaultsError> read_field(RuntimeFaults& f, std::string_view k, const json::value& v) {
  auto set = [](auto& dst, auto result) -> std::optional<FaultsError> {
    if (auto* e = std::get_if<FaultsError>(&result)) return *e;
    dst = std::get<0>(result);
    return std::nullopt;
  };
  if (k == "error_rate") return set(f.error_rate, number(v, k, 0, 1));
  if (k == "error_statuses") {
    const char* must = "must be a non-empty array of HTTP statuses from 400 to 599";
    if (!v.is_array() || v.get_array().empty() || v.get_array().size() > 64) return bad(k, must);
    f.error_statuses.clear();
    for (const auto& s : v.get_array()) {
      if (!s.is_int64() || s.get_int64() < 400 || s.get_int64() > 599) return bad(k, must);
      f.error_statuses.push_back(static_cast<int>(s.get_int64()));
    }
    return std::nullopt;
  }
  if (k == "crash_after_requests") return set(f.crash_after_requests, integer(v, k, 1));
  if (k == "crash_at") return set(f.crash_at, number(v, k, 0, kMaxSeconds));
  if (k == "hang") return set(f.hang, boolean(v, k));
  if (k == "freeze") return set(f.freeze, boolean(v, k));
  if (k == "stall_after") return set(f.stall_after, integer(v, k, 0));
  if (k == "stall_rate") return set(f.stall_rate, number(v, k, 0, 1));
  if (k == "close_after") return set(f.close_after, integer(v, k, 0));
  if (k == "close_rate") return set(f.close_rate, number(v, k, 0, 1));
  if (k == "not_ready_for") return set(f.not_ready_for, number(v, k, 0, kMaxSeconds));
  if (k == "malformed") {
    const char* must = R"(must be "json" or "sse")";
    if (!v.is_string()) return bad(k, must);
    if (v.get_string() == "json") {
      f.malformed = Malformed::json;
    } else if (v.get_string() == "sse") {
      f.malformed = Malformed::sse;
    } else {
      return bad(k, must);
    }
    return std::nullopt;
  }
  if (k == "latency_ms") return set(f.latency_ms, number(v, k, 0, kMaxLatencyMs));
  if (k == "refuse_new") return set(f.refuse_new, boolean(v, k));
  return FaultsError{std::string(k), fmt::format("unknown field '{}'", k)};
}

}  // namespace

std::variant<RuntimeFaults, FaultsError> parse_runtime_faults(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return FaultsError{"", fmt::format("the body is not JSON: {}", ec.message())};
  if (!v.is_object()) return FaultsError{"", "the body must be a JSON object"};
  RuntimeFaults f;
  for (const auto& [k, val] : v.get_object()) {
    if (auto e = read_field(f, k, val)) return *e;
  }
  if (!f.error_statuses.empty() && !f.error_rate)
    return FaultsError{"error_statuses", "'error_statuses' needs 'error_rate'"};
  if (f.stall_rate && !f.stall_after)
    return FaultsError{"stall_rate", "'stall_rate' needs 'stall_after'"};
  if (f.close_rate && !f.close_after)
    return FaultsError{"close_rate", "'close_rate' needs 'close_after'"};
  if (f.error_rate && f.error_statuses.empty()) f.error_statuses = {500};
  return f;
}

namespace {

/// A whole number as a JSON integer (`1`, not `1E0`), others as they are.
json::value num(double d) {
  if (d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<std::int64_t>(d);
  return d;
}

}  // namespace

json::object runtime_faults_json(const RuntimeFaults& f) {
  json::object o;
  if (f.error_rate) {
    o["error_rate"] = num(*f.error_rate);
    json::array st;
    for (int s : f.error_statuses) st.push_back(s);
    o["error_statuses"] = std::move(st);
  }
  if (f.crash_after_requests) o["crash_after_requests"] = *f.crash_after_requests;
  if (f.crash_at) o["crash_at"] = num(*f.crash_at);
  if (f.hang) o["hang"] = true;
  if (f.freeze) o["freeze"] = true;
  if (f.stall_after) o["stall_after"] = *f.stall_after;
  if (f.stall_rate) o["stall_rate"] = num(*f.stall_rate);
  if (f.close_after) o["close_after"] = *f.close_after;
  if (f.close_rate) o["close_rate"] = num(*f.close_rate);
  if (f.not_ready_for) o["not_ready_for"] = num(*f.not_ready_for);
  if (f.malformed != Malformed::none)
    o["malformed"] = f.malformed == Malformed::json ? "json" : "sse";
  if (f.latency_ms) o["latency_ms"] = num(*f.latency_ms);
  if (f.refuse_new) o["refuse_new"] = true;
  return o;
}

void apply_runtime_faults(RequestFaults& f, const RuntimeFaults& rt, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (rt.error_rate) {
    f.error_status = 0;
    if (*rt.error_rate > 0 && u(rng) < *rt.error_rate && !rt.error_statuses.empty())
      f.error_status = rt.error_statuses[rng() % rt.error_statuses.size()];
  }
  if (rt.close_after) {
    f.close_after = u(rng) < rt.close_rate.value_or(1.0) ? *rt.close_after : -1;
  }
  if (rt.stall_after) {
    f.stall_after = u(rng) < rt.stall_rate.value_or(1.0) ? *rt.stall_after : -1;
  }
  if (rt.latency_ms) f.latency_ms = *rt.latency_ms;
  if (rt.malformed != Malformed::none) f.malformed = rt.malformed;
}

}  // namespace llmux::sim
