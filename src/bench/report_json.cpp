// SPDX-License-Identifier: Apache-2.0
// Reports as JSON: summaries, request timings and aggregates, pretty printing and flattening
// (report.hpp).
#include "bench/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

namespace llmux::bench {
namespace json = boost::json;

json::value json_number(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

namespace {

std::string percentile_key(double percent) {
  return fmt::format("p{}", percent);
}

}  // namespace

json::object to_json(const Summary& summary, double scale) {
  json::object object;
  object["count"] = summary.count;
  object["mean"] = json_number(summary.mean * scale);
  object["stddev"] = json_number(summary.stddev * scale);
  object["min"] = json_number(summary.min * scale);
  object["max"] = json_number(summary.max * scale);
  object["p50"] = json_number(summary.p50 * scale);
  object["p90"] = json_number(summary.p90 * scale);
  object["p95"] = json_number(summary.p95 * scale);
  object["p99"] = json_number(summary.p99 * scale);
  for (const auto& [p, v] : summary.extra) object[percentile_key(p)] = json_number(v * scale);
  return object;
}

json::object to_json(const RequestTiming& timing) {
  auto opt_i64 = [](const std::optional<std::int64_t>& value) -> json::value {
    if (value) return *value;
    return nullptr;
  };
  auto opt_u64 = [](const std::optional<std::uint64_t>& value) -> json::value {
    if (value) return *value;
    return nullptr;
  };
  json::object object;
  object["start_ns"] = timing.start_ns;
  object["first_byte_ns"] = opt_i64(timing.first_byte_ns);
  object["first_token_ns"] = opt_i64(timing.first_token_ns);
  object["end_ns"] = timing.end_ns;
  object["output_tokens"] = opt_u64(timing.output_tokens);
  object["prompt_tokens"] = opt_u64(timing.prompt_tokens);
  object["cached_tokens"] = opt_u64(timing.cached_tokens);
  object["error"] = to_string(timing.error);
  if (timing.http_status) object["http_status"] = timing.http_status;
  if (!timing.error_message.empty()) object["error_message"] = timing.error_message;
  if (!timing.backend.empty()) object["backend"] = timing.backend;
  json::array events;
  events.reserve(timing.events.size());
  for (const TokenEvent& event : timing.events) {
    events.push_back(json::array{event.time_ns - timing.start_ns, event.tokens});
  }
  object["events"] = std::move(events);
  return object;
}

json::object to_json(const Aggregate& aggregate) {
  json::object object;
  object["requests"] = aggregate.requests;
  object["ok"] = aggregate.ok;
  object["failed"] = aggregate.failed;
  object["rejected"] = aggregate.rejected;
  json::object errors;
  for (const auto& [kind, n] : aggregate.errors) errors[to_string(kind)] = n;
  object["errors"] = std::move(errors);
  object["wall_s"] = json_number(aggregate.wall_s);
  object["output_tokens"] = aggregate.output_tokens;
  object["prompt_tokens"] = aggregate.prompt_tokens;
  object["estimated_requests"] = aggregate.estimated_requests;
  object["output_tok_s"] = json_number(aggregate.output_tok_s);
  object["requests_per_s"] = json_number(aggregate.requests_per_s);
  object["good"] = aggregate.good;
  object["goodput_req_s"] = json_number(aggregate.goodput_req_s);
  object["cached_prompt_tokens"] = aggregate.cached_tokens;
  object["cached_reported_requests"] = aggregate.cached_reported;
  object["cached_share"] = json_number(aggregate.cached_share);
  object["not_found"] = aggregate.not_found;
  object["ttfb_ms"] = to_json(aggregate.ttfb, 1e3);
  object["ttft_ms"] = to_json(aggregate.ttft, 1e3);
  object["tpot_ms"] = to_json(aggregate.tpot, 1e3);
  object["itl_ms"] = to_json(aggregate.itl, 1e3);
  object["e2e_ms"] = to_json(aggregate.e2e, 1e3);
  object["decode_tok_s"] = to_json(aggregate.decode_tok_s);
  return object;
}

namespace {

void pretty(std::string& out, const json::value& value, int depth) {
  auto indent = [&](int levels) { out.append(static_cast<std::size_t>(levels) * 2, ' '); };
  switch (value.kind()) {
    case json::kind::object: {
      const auto& object = value.get_object();
      if (object.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      bool first = true;
      for (const auto& member : object) {
        if (!first) out += ",\n";
        first = false;
        indent(depth + 1);
        out += json::serialize(json::string_view(member.key()));
        out += ": ";
        pretty(out, member.value(), depth + 1);
      }
      out += '\n';
      indent(depth);
      out += '}';
      return;
    }
    case json::kind::array: {
      const auto& array = value.get_array();
      if (array.empty()) {
        out += "[]";
        return;
      }
      // Arrays of scalars stay on one line (e.g. [offset_ns, tokens] pairs).
      const bool flat = std::all_of(array.begin(), array.end(), [](const json::value& element) {
        return !element.is_object() && !element.is_array();
      });
      if (flat) {
        out += '[';
        for (std::size_t i = 0; i < array.size(); ++i) {
          if (i) out += ", ";
          pretty(out, array[i], depth + 1);
        }
        out += ']';
        return;
      }
      out += "[\n";
      for (std::size_t i = 0; i < array.size(); ++i) {
        if (i) out += ",\n";
        indent(depth + 1);
        pretty(out, array[i], depth + 1);
      }
      out += '\n';
      indent(depth);
      out += ']';
      return;
    }
    case json::kind::double_: {
      const double number = value.get_double();
      if (!std::isfinite(number)) {
        out += "null";
      } else {
        std::string text = fmt::format("{}", number);
        // Keep it a JSON number that reads back as a double.
        if (text.find_first_of(".eE") == std::string::npos) text += ".0";
        out += text;
      }
      return;
    }
    default:
      out += json::serialize(value);
      return;
  }
}

void flatten(const json::value& value, const std::string& prefix,
             std::map<std::string, double>& out) {
  auto join = [&](std::string_view key) {
    return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
  };
  switch (value.kind()) {
    case json::kind::object:
      for (const auto& member : value.get_object()) {
        flatten(member.value(), join(std::string_view(member.key().data(), member.key().size())),
                out);
      }
      break;
    case json::kind::array: {
      const auto& array = value.get_array();
      for (std::size_t i = 0; i < array.size(); ++i)
        flatten(array[i], join(std::to_string(i)), out);
      break;
    }
    case json::kind::int64:
      out[prefix] = static_cast<double>(value.get_int64());
      break;
    case json::kind::uint64:
      out[prefix] = static_cast<double>(value.get_uint64());
      break;
    case json::kind::double_:
      out[prefix] = value.get_double();
      break;
    default:
      break;
  }
}

}  // namespace

std::string pretty_json(const json::value& value) {
  std::string out;
  pretty(out, value, 0);
  out += '\n';
  return out;
}

std::map<std::string, double> flatten_numbers(const json::value& value) {
  std::map<std::string, double> out;
  flatten(value, "", out);
  return out;
}

}  // namespace llmux::bench
