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

double percentile_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return kNaN;
  if (std::isnan(p)) return kNaN;
  p = std::clamp(p, 0.0, 100.0);
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double percentile(std::span<const double> values, double p) {
  std::vector<double> copy(values.begin(), values.end());
  std::sort(copy.begin(), copy.end());
  return percentile_sorted(copy, p);
}

std::optional<double> Summary::at(double p) const {
  if (p == 50) return p50;
  if (p == 90) return p90;
  if (p == 95) return p95;
  if (p == 99) return p99;
  for (const auto& [q, v] : extra) {
    if (q == p) return v;
  }
  return std::nullopt;
}

Summary summarize(std::span<const double> values, std::span<const double> extra) {
  Summary s;
  s.count = values.size();
  if (values.empty()) {
    s.mean = s.stddev = s.min = s.max = s.p50 = s.p90 = s.p95 = s.p99 = kNaN;
    for (double p : extra) s.extra.emplace_back(p, kNaN);
    return s;
  }
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  double sq = 0;
  for (double v : sorted) sq += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(sq / n);
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = percentile_sorted(sorted, 50);
  s.p90 = percentile_sorted(sorted, 90);
  s.p95 = percentile_sorted(sorted, 95);
  s.p99 = percentile_sorted(sorted, 99);
  s.extra.reserve(extra.size());
  for (double p : extra) s.extra.emplace_back(p, percentile_sorted(sorted, p));
  return s;
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

void append_itl(const RequestTiming& t, std::vector<double>& out) {
  std::optional<std::int64_t> prev;
  for (const TokenEvent& e : t.events) {
    if (e.tokens == 0) continue;
    if (prev) {
      const double gap = ns_to_s(e.time_ns - *prev) / static_cast<double>(e.tokens);
      out.insert(out.end(), e.tokens, gap);
    }
    prev = e.time_ns;
  }
}

RequestMetrics derive(const RequestTiming& t) {
  RequestMetrics m;
  m.ok = t.ok();
  m.e2e_s = ns_to_s(t.end_ns - t.start_ns);
  if (t.first_byte_ns) m.ttfb_s = ns_to_s(*t.first_byte_ns - t.start_ns);
  if (t.first_token_ns) m.ttft_s = ns_to_s(*t.first_token_ns - t.start_ns);

  if (t.output_tokens) {
    m.output_tokens = *t.output_tokens;
  } else {
    std::uint64_t sum = 0;
    for (const TokenEvent& e : t.events) sum += e.tokens;
    m.output_tokens = sum;
    m.output_tokens_estimated = true;
  }

  append_itl(t, m.itl_s);

  if (m.ttft_s && m.output_tokens > 1) {
    const double decode_s = m.e2e_s - *m.ttft_s;
    m.tpot_s = decode_s / static_cast<double>(m.output_tokens - 1);
    if (decode_s > 0) m.decode_tok_s = static_cast<double>(m.output_tokens - 1) / decode_s;
  }
  if (m.e2e_s > 0 && m.output_tokens > 0) {
    m.e2e_tok_s = static_cast<double>(m.output_tokens) / m.e2e_s;
  }
  return m;
}

bool is_not_found(const RequestTiming& t) {
  if (t.http_status != 404) return false;
  std::string lower(t.error_message);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("not found") != std::string::npos;
}

bool is_rejected(const RequestTiming& t) {
  return t.error == ErrorKind::http_status && t.http_status == 429;
}

bool meets(const RequestMetrics& m, const Slo& slo) {
  if (!m.ok) return false;
  if (slo.ttft_s && !(m.ttft_s && *m.ttft_s <= *slo.ttft_s)) return false;
  if (slo.tpot_s && m.tpot_s && *m.tpot_s > *slo.tpot_s) return false;
  if (slo.e2e_s && m.e2e_s > *slo.e2e_s) return false;
  return true;
}

Aggregate aggregate(std::span<const RequestTiming> requests, const AggregateOptions& opt) {
  Aggregate a;
  a.requests = requests.size();
  std::vector<double> ttfb, ttft, tpot, itl, e2e, decode;
  std::int64_t first_start = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
  for (const RequestTiming& t : requests) {
    first_start = std::min(first_start, t.start_ns);
    last_end = std::max(last_end, t.end_ns);
    if (!t.ok()) {
      ++a.failed;
      ++a.errors[t.error];
      if (is_not_found(t)) ++a.not_found;
      if (is_rejected(t)) ++a.rejected;
      continue;
    }
    ++a.ok;
    RequestMetrics m = derive(t);
    a.output_tokens += m.output_tokens;
    if (t.prompt_tokens) a.prompt_tokens += *t.prompt_tokens;
    if (t.cached_tokens) {
      a.cached_tokens += *t.cached_tokens;
      ++a.cached_reported;
    }
    if (m.output_tokens_estimated) ++a.estimated_requests;
    if (meets(m, opt.slo)) ++a.good;
    e2e.push_back(m.e2e_s);
    if (m.ttfb_s) ttfb.push_back(*m.ttfb_s);
    if (m.ttft_s) ttft.push_back(*m.ttft_s);
    if (m.tpot_s) tpot.push_back(*m.tpot_s);
    if (m.decode_tok_s) decode.push_back(*m.decode_tok_s);
    itl.insert(itl.end(), m.itl_s.begin(), m.itl_s.end());
  }
  if (opt.wall_s) {
    a.wall_s = *opt.wall_s;
  } else if (!requests.empty()) {
    a.wall_s = ns_to_s(last_end - first_start);
  }
  if (a.wall_s > 0) {
    a.output_tok_s = static_cast<double>(a.output_tokens) / a.wall_s;
    a.requests_per_s = static_cast<double>(a.ok) / a.wall_s;
    a.goodput_req_s = static_cast<double>(a.good) / a.wall_s;
  }
  a.cached_share = a.cached_reported && a.prompt_tokens
                       ? static_cast<double>(a.cached_tokens) / static_cast<double>(a.prompt_tokens)
                       : kNaN;
  const auto& ex = opt.extra_percentiles;
  a.ttfb = summarize(ttfb, ex);
  a.ttft = summarize(ttft, ex);
  a.tpot = summarize(tpot, ex);
  a.itl = summarize(itl, ex);
  a.e2e = summarize(e2e, ex);
  a.decode_tok_s = summarize(decode, ex);
  return a;
}

}  // namespace llmux::bench
