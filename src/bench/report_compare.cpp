// SPDX-License-Identifier: Apache-2.0
// Comparing two runs: which way each metric should move, and the changes that went the wrong way
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

namespace {

bool contains_any(std::string_view text, std::initializer_list<std::string_view> needles) {
  for (auto needle : needles) {
    if (text.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

Direction guess_direction(std::string_view metric) {
  std::string lower(metric);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char character) {
    return static_cast<char>(std::tolower(character));
  });
  std::string_view name = lower;
  const std::size_t dot = name.rfind('.');
  const std::string_view leaf = dot == std::string_view::npos ? name : name.substr(dot + 1);
  if (leaf == "count") return Direction::neutral;
  if (contains_any(name, {"error", "failed", "timeout", "not_found"}))
    return Direction::lower_is_better;
  if (contains_any(name, {"tok_s", "tok/s", "per_s", "req_s", "goodput", "throughput", "ratio"})) {
    return Direction::higher_is_better;
  }
  if (contains_any(name, {"ttft", "tpot", "itl", "e2e", "ttfb", "latency", "_ms", "duration"})) {
    return Direction::lower_is_better;
  }
  return Direction::neutral;
}

Comparison compare(const std::map<std::string, double>& before,
                   const std::map<std::string, double>& after,
                   const std::map<std::string, Direction>& directions, double threshold) {
  Comparison comparison;
  comparison.threshold = threshold;
  std::set<std::string> names;
  for (const auto& [metric, value] : before) names.insert(metric);
  for (const auto& [metric, value] : after) names.insert(metric);
  for (const std::string& name : names) {
    MetricChange metric_change;
    metric_change.metric = name;
    if (auto it = before.find(name); it != before.end()) metric_change.a = it->second;
    if (auto it = after.find(name); it != after.end()) metric_change.b = it->second;
    if (auto it = directions.find(name); it != directions.end()) {
      metric_change.direction = it->second;
    } else {
      metric_change.direction = guess_direction(name);
    }
    if (!metric_change.a || !metric_change.b) {
      metric_change.change = std::numeric_limits<double>::quiet_NaN();
      metric_change.flagged = true;
    } else {
      const double value_a = *metric_change.a, value_b = *metric_change.b;
      if (value_a == value_b) {
        metric_change.change = 0;
      } else if (value_a == 0) {
        metric_change.change = value_b > 0 ? std::numeric_limits<double>::infinity()
                                           : -std::numeric_limits<double>::infinity();
      } else {
        metric_change.change = (value_b - value_a) / std::fabs(value_a);
      }
      metric_change.flagged = std::fabs(metric_change.change) > threshold;  // false for NaN
      if (metric_change.flagged && metric_change.direction != Direction::neutral) {
        const bool rose = metric_change.change > 0;
        const bool better = metric_change.direction == Direction::higher_is_better ? rose : !rose;
        metric_change.improvement = better;
        metric_change.regression = !better;
      }
    }
    if (metric_change.flagged) ++comparison.flagged;
    if (metric_change.regression) ++comparison.regressions;
    if (metric_change.improvement) ++comparison.improvements;
    comparison.changes.push_back(std::move(metric_change));
  }
  return comparison;
}

Table comparison_table(const Comparison& comparison, bool only_flagged) {
  Table table({"Metric", "A", "B", "Change", "Verdict"},
              {Align::left, Align::right, Align::right, Align::right, Align::left});
  auto num = [](const std::optional<double>& value) {
    if (!value) return std::string("-");
    // Enough precision for both token counts and millisecond latencies.
    return fmt_num(*value, std::fabs(*value) >= 100 ? 1 : 3);
  };
  for (const MetricChange& metric_change : comparison.changes) {
    if (only_flagged && !metric_change.flagged) continue;
    std::string verdict;
    if (!metric_change.a) {
      verdict = "only in B";
    } else if (!metric_change.b) {
      verdict = "only in A";
    } else if (metric_change.regression) {
      verdict = "regression";
    } else if (metric_change.improvement) {
      verdict = "improvement";
    } else if (metric_change.flagged) {
      verdict = "changed";
    }
    table.add_row({metric_change.metric, num(metric_change.a), num(metric_change.b),
                   (metric_change.a && metric_change.b) ? fmt_pct(metric_change.change) : "-",
                   verdict});
  }
  return table;
}

}  // namespace llmux::bench
