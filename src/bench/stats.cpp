// SPDX-License-Identifier: Apache-2.0
#include "bench/stats.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace llmux::bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ns_to_s(std::int64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace

double percentile_sorted(std::span<const double> sorted, double percent) {
  if (sorted.empty()) return kNaN;
  if (std::isnan(percent)) return kNaN;
  percent = std::clamp(percent, 0.0, 100.0);
  const double rank = percent / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lower_index = static_cast<std::size_t>(std::floor(rank));
  const std::size_t upper_index = std::min(lower_index + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lower_index);
  return sorted[lower_index] + (sorted[upper_index] - sorted[lower_index]) * frac;
}

double percentile(std::span<const double> values, double percent) {
  std::vector<double> copy(values.begin(), values.end());
  std::sort(copy.begin(), copy.end());
  return percentile_sorted(copy, percent);
}

std::optional<double> Summary::at(double percent) const {
  if (percent == 50) return p50;
  if (percent == 90) return p90;
  if (percent == 95) return p95;
  if (percent == 99) return p99;
  for (const auto& [q, v] : extra) {
    if (q == percent) return v;
  }
  return std::nullopt;
}

Summary summarize(std::span<const double> values, std::span<const double> extra) {
  Summary summary;
  summary.count = values.size();
  if (values.empty()) {
    summary.mean = summary.stddev = summary.min = summary.max = summary.p50 = summary.p90 =
        summary.p95 = summary.p99 = kNaN;
    for (double percent : extra) summary.extra.emplace_back(percent, kNaN);
    return summary;
  }
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double count = static_cast<double>(sorted.size());
  summary.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / count;
  double squares = 0;
  for (double value : sorted) squares += (value - summary.mean) * (value - summary.mean);
  summary.stddev = std::sqrt(squares / count);
  summary.min = sorted.front();
  summary.max = sorted.back();
  summary.p50 = percentile_sorted(sorted, 50);
  summary.p90 = percentile_sorted(sorted, 90);
  summary.p95 = percentile_sorted(sorted, 95);
  summary.p99 = percentile_sorted(sorted, 99);
  summary.extra.reserve(extra.size());
  for (double percent : extra)
    summary.extra.emplace_back(percent, percentile_sorted(sorted, percent));
  return summary;
}

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::none:
      return "none";
    case ErrorKind::connect:
      return "connect";
    case ErrorKind::http_status:
      return "http_status";
    case ErrorKind::timeout:
      return "timeout";
    case ErrorKind::broken_stream:
      return "broken_stream";
    case ErrorKind::error_event:
      return "error_event";
    case ErrorKind::malformed:
      return "malformed";
    case ErrorKind::other:
      return "other";
  }
  return "other";
}

void append_itl(const RequestTiming& timing, std::vector<double>& out) {
  std::optional<std::int64_t> prev;
  for (const TokenEvent& event : timing.events) {
    if (event.tokens == 0) continue;
    if (prev) {
      const double gap = ns_to_s(event.time_ns - *prev) / static_cast<double>(event.tokens);
      out.insert(out.end(), event.tokens, gap);
    }
    prev = event.time_ns;
  }
}

RequestMetrics derive(const RequestTiming& timing) {
  RequestMetrics metrics;
  metrics.ok = timing.ok();
  metrics.e2e_s = ns_to_s(timing.end_ns - timing.start_ns);
  if (timing.first_byte_ns) metrics.ttfb_s = ns_to_s(*timing.first_byte_ns - timing.start_ns);
  if (timing.first_token_ns) metrics.ttft_s = ns_to_s(*timing.first_token_ns - timing.start_ns);

  if (timing.output_tokens) {
    metrics.output_tokens = *timing.output_tokens;
  } else {
    std::uint64_t sum = 0;
    for (const TokenEvent& event : timing.events) sum += event.tokens;
    metrics.output_tokens = sum;
    metrics.output_tokens_estimated = true;
  }

  append_itl(timing, metrics.itl_s);

  if (metrics.ttft_s && metrics.output_tokens > 1) {
    const double decode_s = metrics.e2e_s - *metrics.ttft_s;
    metrics.tpot_s = decode_s / static_cast<double>(metrics.output_tokens - 1);
    if (decode_s > 0)
      metrics.decode_tok_s = static_cast<double>(metrics.output_tokens - 1) / decode_s;
  }
  if (metrics.e2e_s > 0 && metrics.output_tokens > 0) {
    metrics.e2e_tok_s = static_cast<double>(metrics.output_tokens) / metrics.e2e_s;
  }
  return metrics;
}

bool is_not_found(const RequestTiming& timing) {
  if (timing.http_status != 404) return false;
  std::string lower(timing.error_message);
  for (char& character : lower)
    character = static_cast<char>(std::tolower(static_cast<unsigned char>(character)));
  return lower.find("not found") != std::string::npos;
}

bool is_rejected(const RequestTiming& timing) {
  return timing.error == ErrorKind::http_status && timing.http_status == 429;
}

bool meets(const RequestMetrics& metrics, const Slo& slo) {
  if (!metrics.ok) return false;
  if (slo.ttft_s && !(metrics.ttft_s && *metrics.ttft_s <= *slo.ttft_s)) return false;
  if (slo.tpot_s && metrics.tpot_s && *metrics.tpot_s > *slo.tpot_s) return false;
  if (slo.e2e_s && metrics.e2e_s > *slo.e2e_s) return false;
  return true;
}

Aggregate aggregate(std::span<const RequestTiming> requests, const AggregateOptions& opt) {
  Aggregate result;
  result.requests = requests.size();
  std::vector<double> ttfb, ttft, tpot, itl, e2e, decode;
  std::int64_t first_start = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
  for (const RequestTiming& timing : requests) {
    first_start = std::min(first_start, timing.start_ns);
    last_end = std::max(last_end, timing.end_ns);
    if (!timing.ok()) {
      ++result.failed;
      ++result.errors[timing.error];
      if (is_not_found(timing)) ++result.not_found;
      if (is_rejected(timing)) ++result.rejected;
      continue;
    }
    ++result.ok;
    RequestMetrics metrics = derive(timing);
    result.output_tokens += metrics.output_tokens;
    if (timing.prompt_tokens) result.prompt_tokens += *timing.prompt_tokens;
    if (timing.cached_tokens) {
      result.cached_tokens += *timing.cached_tokens;
      ++result.cached_reported;
    }
    if (metrics.output_tokens_estimated) ++result.estimated_requests;
    if (meets(metrics, opt.slo)) ++result.good;
    e2e.push_back(metrics.e2e_s);
    if (metrics.ttfb_s) ttfb.push_back(*metrics.ttfb_s);
    if (metrics.ttft_s) ttft.push_back(*metrics.ttft_s);
    if (metrics.tpot_s) tpot.push_back(*metrics.tpot_s);
    if (metrics.decode_tok_s) decode.push_back(*metrics.decode_tok_s);
    itl.insert(itl.end(), metrics.itl_s.begin(), metrics.itl_s.end());
  }
  if (opt.wall_s) {
    result.wall_s = *opt.wall_s;
  } else if (!requests.empty()) {
    result.wall_s = ns_to_s(last_end - first_start);
  }
  if (result.wall_s > 0) {
    result.output_tok_s = static_cast<double>(result.output_tokens) / result.wall_s;
    result.requests_per_s = static_cast<double>(result.ok) / result.wall_s;
    result.goodput_req_s = static_cast<double>(result.good) / result.wall_s;
  }
  result.cached_share =
      result.cached_reported && result.prompt_tokens
          ? static_cast<double>(result.cached_tokens) / static_cast<double>(result.prompt_tokens)
          : kNaN;
  const auto& extra = opt.extra_percentiles;
  result.ttfb = summarize(ttfb, extra);
  result.ttft = summarize(ttft, extra);
  result.tpot = summarize(tpot, extra);
  result.itl = summarize(itl, extra);
  result.e2e = summarize(e2e, extra);
  result.decode_tok_s = summarize(decode, extra);
  return result;
}

}  // namespace llmux::bench
