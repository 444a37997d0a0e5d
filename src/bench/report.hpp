// SPDX-License-Identifier: Apache-2.0
#pragma once
// Report writers for `llmux bench`: a Markdown table people paste ("| Path | Serial tok/s | N=8
// tok/s |"), CSV machines read (RFC 4180), JSON documents (Boost.JSON) with a stable pretty
// printer, and the before/after comparison behind `llmux bench report A.json B.json`.
//
// The writers are generic: a Table is headers plus rows of already formatted cells, and the
// bench commands build their seed-shaped reports on top of it.
//
// Thread safety: Table is a plain value (not synchronized); everything else is a pure function.
#include <boost/json/value.hpp>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/stats.hpp"

namespace llmux::bench {

// ---------------------------------------------------------------------------------------------
// Tables

enum class Align { left, right };

class Table {
 public:
  /// Columns default to left alignment for the first and right alignment for the others (a
  /// label column followed by figures).
  explicit Table(std::vector<std::string> headers);
  Table(std::vector<std::string> headers, std::vector<Align> align);

  /// Adds a row; missing trailing cells are blank. Throws std::invalid_argument when the row has
  /// more cells than there are columns.
  Table& add_row(std::vector<std::string> cells);

  std::size_t columns() const { return headers_.size(); }
  const std::vector<std::string>& headers() const { return headers_; }
  const std::vector<Align>& align() const { return align_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

struct MarkdownOptions {
  std::string title;               ///< written as a heading when not empty
  int heading_level = 3;           ///< number of '#'
  std::vector<std::string> notes;  ///< written after the table, one paragraph each
};

/// A GitHub-flavoured Markdown table with every column padded to its widest cell (width in
/// UTF-8 code points), right-aligned columns marked `---:`. '|' in a cell is escaped and line
/// breaks become spaces. Ends with a newline.
std::string to_markdown(const Table& table, const MarkdownOptions& opt = {});

/// Width of `text` as displayed: the number of UTF-8 code points.
std::size_t display_width(std::string_view text);

/// One CSV field, quoted per RFC 4180 when it holds a comma, a double quote, CR or LF (quotes
/// doubled inside).
std::string csv_field(std::string_view field);
/// One CSV record: fields joined with ',' and terminated with CRLF.
std::string csv_record(std::span<const std::string> fields);
/// The table as CSV: a header record, then one record per row.
std::string to_csv(const Table& table);

/// A number with `decimals` places; NaN and infinities as "-".
std::string fmt_num(double value, int decimals = 1);
/// A signed percentage of a fraction: 0.052 -> "+5.2%".
std::string fmt_pct(double fraction, int decimals = 1);

// ---------------------------------------------------------------------------------------------
// JSON

/// A double as JSON: null when not finite (JSON has no NaN).
boost::json::value json_number(double value);
/// {"count", "mean", "stddev", "min", "max", "p50", "p90", "p95", "p99", "p<extra>"...}; every
/// figure multiplied by `scale` (1000 for seconds -> milliseconds).
boost::json::object to_json(const Summary& summary, double scale = 1.0);
/// One request's raw timings: timestamps in ns, `events` as [offset_ns from start, tokens].
boost::json::object to_json(const RequestTiming& timing);
/// A run's aggregate; latency summaries in milliseconds (`ttft_ms`, `tpot_ms`, `itl_ms`,
/// `e2e_ms`, `ttfb_ms`), throughput in per-second units.
boost::json::object to_json(const Aggregate& aggregate);

/// Pretty-printed JSON (two-space indent, keys in insertion order, doubles in shortest
/// round-trip form). Ends with a newline.
std::string pretty_json(const boost::json::value& value);

/// Every numeric leaf of `value` as "a.b.c" -> value (array elements as "a.0"); booleans, strings
/// and nulls are left out.
std::map<std::string, double> flatten_numbers(const boost::json::value& value);

// ---------------------------------------------------------------------------------------------
// Comparing two runs

enum class Direction { higher_is_better, lower_is_better, neutral };

/// A direction from a metric's name: throughput-like names (tok_s, per_s, req_s, goodput) are
/// higher-is-better; latency-like names (ttft, tpot, itl, e2e, ttfb, latency, _ms) and error
/// counts are lower-is-better; counts and sizes are neutral.
Direction guess_direction(std::string_view metric);

struct MetricChange {
  std::string metric;
  std::optional<double> a, b;  ///< empty when the metric is missing from that run
  double change = 0;           ///< (b - a) / |a|; ±inf when a == 0 != b
  Direction direction = Direction::neutral;
  bool flagged = false;      ///< |change| > threshold, or missing from one run
  bool regression = false;   ///< flagged and worse in the metric's direction
  bool improvement = false;  ///< flagged and better in the metric's direction
};

struct Comparison {
  double threshold = 0.05;
  std::vector<MetricChange> changes;  ///< every metric of either run, sorted by name
  std::size_t flagged = 0, regressions = 0, improvements = 0;
};

/// Compares run A (before) with run B (after). Directions come from `directions`, else from
/// guess_direction(). A change is flagged when it is strictly beyond `threshold` (a fraction).
Comparison compare(const std::map<std::string, double>& before,
                   const std::map<std::string, double>& after,
                   const std::map<std::string, Direction>& directions = {},
                   double threshold = 0.05);

/// "| Metric | A | B | Change | Verdict |"; with only_flagged, just the flagged metrics.
Table comparison_table(const Comparison& comparison, bool only_flagged = false);

}  // namespace llmux::bench
