// SPDX-License-Identifier: Apache-2.0
#pragma once
// The `--out DIR` report of `llmux bench`: charts drawn with gnuplot (SVG and PNG, from data
// files and a script left beside them to redraw) and an index.html holding the summary tables,
// the notes and the charts. When gnuplot is not installed, the data, the script and index.html
// are still written and the report says that the charts were skipped.
//
// Layout: DIR/index.html, DIR/charts/NAME.dat, DIR/charts/plots.gp, DIR/charts/NAME.svg and
// DIR/charts/NAME.png per chart.
//
// Thread safety: pure functions, except write_report (files, and a gnuplot child process).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/report.hpp"
#include "bench/stats.hpp"

namespace llmux::bench {

using ChartPoints = std::vector<std::pair<double, double>>;  ///< (x, y)

struct ChartSeries {
  std::string name;  ///< the legend: a target, a path or a level
  ChartPoints points;
};

enum class ChartKind {
  lines,  ///< points joined by lines (tok/s vs concurrency)
  cdf,    ///< a distribution as steps (x = value, y = fraction at or below it)
  time,   ///< a time series as lines
};

struct Chart {
  std::string name;   ///< file stem (letters, digits, '_' and '-')
  std::string title;  ///< may hold '\n': a title of several lines (e.g. one per target)
  std::string xlabel, ylabel;
  ChartKind kind = ChartKind::lines;
  bool logx = false;
  std::vector<ChartSeries> series;
  /// True when no series has a point (nothing to draw).
  bool empty() const;
};

/// The empirical CDF of `values`: (value, fraction of values at or below it), ascending, thinned
/// to at most `max_points` points (the last one always kept). Non-finite values are dropped.
ChartPoints cdf_points(std::vector<double> values, std::size_t max_points = 400);

/// Output tokens per second over time: every token event of the successful requests in `timings`
/// (a non-streaming request's tokens count at its end) in buckets of `bucket_s` seconds from
/// `t0_ns`; x = the bucket's start in seconds since t0_ns, y = tokens / bucket_s. Buckets
/// between the first and the last event are all present (0 when nothing arrived).
ChartPoints tok_s_over_time(std::span<const RequestTiming> timings, std::int64_t t0_ns,
                            double bucket_s);

/// A bucket width for tok_s_over_time that gives about `buckets` buckets over `span_s`
/// seconds, at least 0.25 s.
double bucket_for(double span_s, std::size_t buckets = 60);

/// The data file of a chart: one block per series that has points (gnuplot `index i`, in the
/// order of `series`), blocks two blank lines apart, each headed by "# <series name>".
std::string chart_data(const Chart& chart);

/// The gnuplot script (run in the charts directory) that draws every non-empty chart from
/// NAME.dat into NAME.svg and NAME.png; `png_terminal` is "pngcairo" or "png".
std::string gnuplot_script(std::span<const Chart> charts, std::string_view png_terminal);

/// A titled table in the HTML report, with notes after it.
struct HtmlSection {
  std::string title;
  Table table;
  std::vector<std::string> notes;
};

struct HtmlReport {
  std::string title;                ///< the page's <title> and heading
  std::string intro;                ///< one paragraph: what was measured
  std::vector<std::string> status;  ///< the outcome (failures, rejections), shown first
  bool failed = false;              ///< status shown as an error
  std::vector<HtmlSection> sections;
  std::vector<std::string> notes;  ///< paragraphs after the tables
  /// Charts shown (SVG, relative to index.html) with their PNG beside them.
  std::vector<std::string> charts;
  /// Links at the end: (relative href, what it is).
  std::vector<std::pair<std::string, std::string>> files;
};

/// `text` with &, <, >, " and ' escaped for HTML text and attribute values.
std::string html_escape(std::string_view text);
/// The table as an HTML <table> (header cells <th>, right-aligned columns with class "num").
std::string to_html(const Table& table);
/// The whole page (one self-contained file, inline CSS).
std::string to_html(const HtmlReport& report);

struct ReportFiles {
  std::vector<std::string> charts;  ///< SVG files drawn, relative to DIR (charts/NAME.svg)
  bool gnuplot = false;             ///< gnuplot was found and drew them
  std::string note;                 ///< one sentence on the charts for the Markdown report
};

/// Writes the charts' data and script under DIR/charts, runs gnuplot when `draw` and it is on
/// PATH (pngcairo, else png), then DIR/index.html with the charts drawn. Throws
/// std::runtime_error when a file cannot be written.
ReportFiles write_report(const std::string& dir, HtmlReport report, std::span<const Chart> charts,
                         bool draw = true);

}  // namespace llmux::bench
