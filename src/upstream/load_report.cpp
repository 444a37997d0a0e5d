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
  std::size_t i = 0;
  while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
  std::size_t j = i;
  while (j < rest.size() && rest[j] != ' ' && rest[j] != '\t') ++j;
  const std::string_view value_text = rest.substr(i, j - i);
  if (value_text == "NaN" || value_text == "+Inf" || value_text == "-Inf") return false;
  const auto [p, ec] =
      std::from_chars(value_text.data(), value_text.data() + value_text.size(), out);
  return ec == std::errc() && p == value_text.data() + value_text.size() && std::isfinite(out);
}

/// Splits a sample line into its metric name and what follows its label set; false for a line
/// that is not a sample (a comment, blank, or an unterminated label set).
bool split_sample(std::string_view line, std::string_view& name, std::string_view& rest) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == line.size() || line[i] == '#') return false;
  std::size_t j = i;
  while (j < line.size() && line[j] != '{' && line[j] != ' ' && line[j] != '\t') ++j;
  name = line.substr(i, j - i);
  if (j < line.size() && line[j] == '{') {
    bool quoted = false;
    for (++j; j < line.size(); ++j) {
      const char c = line[j];
      if (quoted && c == '\\') {
        ++j;  // an escaped character inside a label value
      } else if (c == '"') {
        quoted = !quoted;
      } else if (!quoted && c == '}') {
        break;
      }
    }
    if (j >= line.size()) return false;
    ++j;
  }
  rest = line.substr(j);
  return !name.empty();
}

}  // namespace

std::optional<LoadReport> parse_load_report(std::string_view text, std::string_view* why) {
  LoadReport report;
  bool saw_running = false;
  int kv_series = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view name, rest;
    if (!split_sample(line, name, rest)) continue;
    double v = 0;
    if (name == "vllm:num_requests_running") {
      if (!sample_value(rest, v)) continue;
      report.running += v;
      saw_running = true;
    } else if (name == "vllm:num_requests_waiting") {
      if (sample_value(rest, v)) report.waiting += v;
    } else if (name == "vllm:kv_cache_usage_perc" || name == "vllm:gpu_cache_usage_perc") {
      if (sample_value(rest, v)) {
        report.kv_usage += v;
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
  auto clamp = [](double v, double hi) {
    return static_cast<std::int32_t>(std::lround(std::clamp(v, 0.0, hi)));
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
