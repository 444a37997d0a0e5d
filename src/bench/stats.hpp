// SPDX-License-Identifier: Apache-2.0
#pragma once
// Statistics for `llmux bench`: percentiles, summaries, per-request metrics and run aggregates.
//
// Definitions follow `vllm bench serve` (see docs/../shared/reference/vllm-and-benchmarks.md):
//   TTFT  = first content-bearing event - request start (a role-only chat chunk is not content).
//   E2E   = last byte - request start.
//   TPOT  = (E2E - TTFT) / (output_tokens - 1), defined when output_tokens > 1.
//   ITL   = per-token gaps: an event carrying k tokens after a gap g stands for k tokens and
//           contributes k gaps of g/k each (the bug of vLLM #27485 / llmperf #99 avoided).
//   Output tokens come from the server's `usage`; the per-event estimates are used only when no
//   usage arrived, and the result says so (`output_tokens_estimated`).
// All durations are in seconds (double); timestamps are CLOCK_MONOTONIC nanoseconds.
//
// Thread safety: everything here is a pure function or a plain value type. Functions do not
// keep state; concurrent calls on distinct data are safe. A RequestTiming is owned by whoever
// records it (normally one driver coroutine) and is read-only once the request has ended.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmux::bench {

// ---------------------------------------------------------------------------------------------
// Percentiles and summaries

/// Percentile `percent` (0..100) of ascending-sorted `sorted`, by linear interpolation between
/// the closest ranks (numpy's default, "linear"): rank = percent/100 * (n-1). NaN when empty;
/// `percent` is clamped to [0, 100].
double percentile_sorted(std::span<const double> sorted, double percent);

/// Same as percentile_sorted, on unsorted values (sorts a copy).
double percentile(std::span<const double> values, double percent);

/// Summary of a sample. For an empty sample, count is 0 and every figure is NaN (reports print
/// NaN as "-" and JSON writes null). stddev is the population standard deviation (numpy's
/// default, ddof=0), as `vllm bench serve` reports it.
struct Summary {
  std::size_t count = 0;
  double mean = 0, stddev = 0, min = 0, max = 0;
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0;
  /// Extra requested percentiles as (percent, value), in the order they were asked.
  std::vector<std::pair<double, double>> extra;

  /// The value at percentile `percent` if it was computed (p50/p90/p95/p99 or one of `extra`).
  std::optional<double> at(double percent) const;
};

/// Summarizes `values` (any order) with p50/p90/p95/p99 and every percentile in `extra`.
Summary summarize(std::span<const double> values, std::span<const double> extra = {});

// ---------------------------------------------------------------------------------------------
// Per-request records

/// Why a request failed. `none` means it succeeded.
enum class ErrorKind {
  none,
  connect,        ///< could not connect / send
  http_status,    ///< non-2xx response status
  timeout,        ///< no progress within the deadline (stall)
  broken_stream,  ///< connection closed or stream ended before it was complete
  error_event,    ///< an OpenAI error object inside the stream
  malformed,      ///< the response could not be parsed
  other,
};
std::string_view to_string(ErrorKind kind);

/// One token-bearing event of a stream: when it arrived and how many tokens it stands for.
struct TokenEvent {
  std::int64_t time_ns = 0;
  std::uint32_t tokens = 0;
};

/// What the driver records for one request (timestamps are CLOCK_MONOTONIC ns, as llmux::mono_ns).
struct RequestTiming {
  std::int64_t start_ns = 0;                   ///< request written (first byte sent)
  std::optional<std::int64_t> first_byte_ns;   ///< first response byte read
  std::optional<std::int64_t> first_token_ns;  ///< first content-bearing event
  std::int64_t end_ns = 0;                     ///< last byte read (or failure noticed)
  /// Token-bearing events in arrival order (events with no content are not recorded).
  std::vector<TokenEvent> events;
  std::optional<std::uint64_t> output_tokens;  ///< from the server's usage, if it sent one
  std::optional<std::uint64_t> prompt_tokens;  ///< from usage (or the workload's own count)
  std::optional<std::uint64_t> cached_tokens;  ///< usage.prompt_tokens_details.cached_tokens
  ErrorKind error = ErrorKind::none;
  int http_status = 0;
  std::string error_message;
  std::string backend;  ///< X-Llmux-Backend of the response: which backend a gateway chose

  bool ok() const { return error == ErrorKind::none; }
};

/// Metrics derived from one RequestTiming. Unmeasurable figures are empty optionals.
struct RequestMetrics {
  bool ok = false;
  double e2e_s = 0;
  std::optional<double> ttfb_s;
  std::optional<double> ttft_s;
  std::optional<double> tpot_s;  ///< needs TTFT and output_tokens > 1
  std::uint64_t output_tokens = 0;
  bool output_tokens_estimated = false;  ///< true when no usage arrived (sum of event estimates)
  /// Per-token inter-token latencies. The first event's extra tokens (if it carried several)
  /// have no gap before them and contribute none.
  std::vector<double> itl_s;
  /// Decode rate of this stream: (output_tokens - 1) / (E2E - TTFT) = 1 / TPOT.
  std::optional<double> decode_tok_s;
  /// output_tokens / E2E: what the seed's script calls tok/s for one request (prefill included).
  std::optional<double> e2e_tok_s;
};

RequestMetrics derive(const RequestTiming& timing);

/// A request the server answered 404 with an error saying "not found" (any case): a
/// previous_response_id it does not hold (vLLM: "Response with id '…' not found.").
bool is_not_found(const RequestTiming& timing);

/// A request the server turned away with 429 Too Many Requests (admission control, a full
/// queue): a rejection, counted apart from the failures (see Aggregate::rejected).
bool is_rejected(const RequestTiming& timing);

/// Appends `timing`'s per-token inter-token latencies (seconds) to `out`.
void append_itl(const RequestTiming& timing, std::vector<double>& out);

// ---------------------------------------------------------------------------------------------
// Service-level objectives and run aggregates

/// Any subset of limits; an unset limit is not checked.
struct Slo {
  std::optional<double> ttft_s{};
  std::optional<double> tpot_s{};
  std::optional<double> e2e_s{};
  bool empty() const { return !ttft_s && !tpot_s && !e2e_s; }
};

/// Whether a request meets every set limit. A failed request never does. A TTFT limit on a
/// request without a measured TTFT (non-streaming) is not met — goodput must not pass silently.
/// A TPOT limit on a request with a single output token (no TPOT) is met: nothing to violate.
bool meets(const RequestMetrics& metrics, const Slo& slo);

struct AggregateOptions {
  /// Measurement window in seconds. Unset: from the earliest start to the latest end.
  std::optional<double> wall_s;
  std::vector<double> extra_percentiles;  ///< besides p50/p90/p95/p99
  Slo slo;
};

/// A run's figures. Token and latency figures use successful requests only.
struct Aggregate {
  std::size_t requests = 0, ok = 0, failed = 0;
  std::map<ErrorKind, std::size_t> errors;  ///< failed requests by kind
  double wall_s = 0;
  std::uint64_t output_tokens = 0, prompt_tokens = 0;
  std::size_t estimated_requests = 0;  ///< ok requests whose output tokens had no usage
  double output_tok_s = 0;             ///< all output tokens / wall time
  double requests_per_s = 0;           ///< ok requests / wall time
  std::size_t good = 0;                ///< ok requests meeting the SLO (all ok when none set)
  double goodput_req_s = 0;            ///< good / wall time
  /// Prompt tokens served from the server's prefix cache (usage.prompt_tokens_details /
  /// input_tokens_details.cached_tokens), summed over the ok requests.
  std::uint64_t cached_tokens = 0;
  std::size_t cached_reported = 0;  ///< ok requests whose usage carried cached_tokens
  /// cached_tokens / prompt_tokens; NaN when no request reported cached tokens (vLLM reports
  /// them on completions and chat only with --enable-prompt-tokens-details).
  double cached_share = 0;
  std::size_t not_found = 0;  ///< failed requests that were is_not_found()
  /// Failed requests that were is_rejected() (429s); `failed` includes them.
  std::size_t rejected = 0;
  Summary ttfb, ttft, tpot, itl, e2e, decode_tok_s;
};

Aggregate aggregate(std::span<const RequestTiming> requests, const AggregateOptions& opt = {});

}  // namespace llmux::bench
