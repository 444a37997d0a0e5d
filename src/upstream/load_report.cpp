// SPDX-License-Identifier: Apache-2.0
#include "upstream/load_report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "upstream/backend.hpp"

namespace llmux::upstream {

namespace {

/// The value of one sample line ("name{...} value [ts]"), after the name and labels; false when
/// it is not a number.
bool sample_value(std::string_view rest, double& out) {
  std::size_t value_begin = 0;
  while (value_begin < rest.size() && (rest[value_begin] == ' ' || rest[value_begin] == '\t'))
    ++value_begin;
  std::size_t value_end = value_begin;
  while (value_end < rest.size() && rest[value_end] != ' ' && rest[value_end] != '\t') ++value_end;
  const std::string_view value_text = rest.substr(value_begin, value_end - value_begin);
  if (value_text == "NaN" || value_text == "+Inf" || value_text == "-Inf") return false;
  const auto [p, ec] =
      std::from_chars(value_text.data(), value_text.data() + value_text.size(), out);
  return ec == std::errc() && p == value_text.data() + value_text.size() && std::isfinite(out);
}

/// Splits a sample line into its metric name and what follows its label set; false for a line
/// that is not a sample (a comment, blank, or an unterminated label set).
bool split_sample(std::string_view line, std::string_view& name, std::string_view& rest) {
  std::size_t name_begin = 0;
  while (name_begin < line.size() && (line[name_begin] == ' ' || line[name_begin] == '\t'))
    ++name_begin;
  if (name_begin == line.size() || line[name_begin] == '#') return false;
  std::size_t position = name_begin;
  while (position < line.size() && line[position] != '{' && line[position] != ' ' &&
         line[position] != '\t')
    ++position;
  name = line.substr(name_begin, position - name_begin);
  if (position < line.size() && line[position] == '{') {
    bool quoted = false;
    for (++position; position < line.size(); ++position) {
      const char character = line[position];
      if (quoted && character == '\\') {
        ++position;  // an escaped character inside a label value
      } else if (character == '"') {
        quoted = !quoted;
      } else if (!quoted && character == '}') {
        break;
      }
    }
    if (position >= line.size()) return false;
    ++position;
  }
  rest = line.substr(position);
  return !name.empty();
}

}  // namespace

std::optional<LoadReport> parse_load_report(std::string_view text, std::string_view* why) {
  LoadReport report;
  bool saw_running = false;
  int kv_series = 0;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view name, rest;
    if (!split_sample(line, name, rest)) continue;
    double value = 0;
    if (name == "vllm:num_requests_running") {
      if (!sample_value(rest, value)) continue;
      report.running += value;
      saw_running = true;
    } else if (name == "vllm:num_requests_waiting") {
      if (sample_value(rest, value)) report.waiting += value;
    } else if (name == "vllm:kv_cache_usage_perc" || name == "vllm:gpu_cache_usage_perc") {
      if (sample_value(rest, value)) {
        report.kv_usage += value;
        ++kv_series;
      }
    }
  }
  if (!saw_running) {
    if (why) *why = "no vllm:num_requests_running in the metrics";
    return std::nullopt;
  }
  if (kv_series > 0) report.kv_usage /= kv_series;
  return report;
}

void store_report(Backend& backend, const LoadReport& report, std::int64_t now_ns,
                  std::int64_t stale_ns) {
  auto clamp = [](double value, double limit) {
    return static_cast<std::int32_t>(std::lround(std::clamp(value, 0.0, limit)));
  };
  backend.observations.reported.running.store(clamp(report.running, 1e9),
                                              std::memory_order_relaxed);
  backend.observations.reported.waiting.store(clamp(report.waiting, 1e9),
                                              std::memory_order_relaxed);
  backend.observations.reported.kv_permille.store(clamp(report.kv_usage * 1000.0, 1000.0),
                                                  std::memory_order_relaxed);
  backend.observations.reported.until_ns.store(now_ns + stale_ns, std::memory_order_release);
}

std::optional<LoadReport> fresh_report(const Backend& backend, std::int64_t now_ns) {
  if (now_ns >= backend.observations.reported.until_ns.load(std::memory_order_acquire))
    return std::nullopt;
  LoadReport report;
  report.running = backend.observations.reported.running.load(std::memory_order_relaxed);
  report.waiting = backend.observations.reported.waiting.load(std::memory_order_relaxed);
  report.kv_usage =
      backend.observations.reported.kv_permille.load(std::memory_order_relaxed) / 1000.0;
  return report;
}

}  // namespace llmux::upstream
