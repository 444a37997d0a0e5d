// SPDX-License-Identifier: Apache-2.0
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

// ---------------------------------------------------------------------------------------------
// Tables

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {
  align_.assign(headers_.size(), Align::right);
  if (!align_.empty()) align_.front() = Align::left;
}

Table::Table(std::vector<std::string> headers, std::vector<Align> align)
    : headers_(std::move(headers)), align_(std::move(align)) {
  align_.resize(headers_.size(), Align::left);
}

Table& Table::add_row(std::vector<std::string> cells) {
  if (cells.size() > headers_.size()) {
    throw std::invalid_argument(fmt::format("table row has {} cells but the table has {} columns",
                                            cells.size(), headers_.size()));
  }
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
  return *this;
}

std::size_t display_width(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++n;  // count every byte that is not a continuation byte
  }
  return n;
}

namespace {

std::string md_cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '|') {
      out += "\\|";
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void append_padded(std::string& out, const std::string& cell, std::size_t width, Align align) {
  const std::size_t pad = width - std::min(width, display_width(cell));
  if (align == Align::right) out.append(pad, ' ');
  out += cell;
  if (align == Align::left) out.append(pad, ' ');
}

}  // namespace

std::string to_markdown(const Table& table, const MarkdownOptions& opt) {
  const std::size_t cols = table.columns();
  std::vector<std::string> header(cols);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> width(cols, 3);  // a separator needs at least "---"
  for (std::size_t c = 0; c < cols; ++c) {
    header[c] = md_cell(table.headers()[c]);
    width[c] = std::max(width[c], display_width(header[c]));
  }
  rows.reserve(table.rows().size());
  for (const auto& table_row : table.rows()) {
    auto& row = rows.emplace_back(cols);
    for (std::size_t c = 0; c < cols; ++c) {
      row[c] = md_cell(table_row[c]);
      width[c] = std::max(width[c], display_width(row[c]));
    }
  }
  std::string out;
  if (!opt.title.empty()) {
    out.append(static_cast<std::size_t>(std::max(1, opt.heading_level)), '#');
    out += ' ';
    out += opt.title;
    out += "\n\n";
  }
  auto line = [&](const std::vector<std::string>& cells) {
    out += '|';
    for (std::size_t c = 0; c < cols; ++c) {
      out += ' ';
      append_padded(out, cells[c], width[c], table.align()[c]);
      out += " |";
    }
    out += '\n';
  };
  line(header);
  out += '|';
  for (std::size_t c = 0; c < cols; ++c) {
    out += ' ';
    if (table.align()[c] == Align::right) {
      out.append(width[c] - 1, '-');
      out += ':';
    } else {
      out.append(width[c], '-');
    }
    out += " |";
  }
  out += '\n';
  for (const auto& row : rows) line(row);
  for (const auto& note : opt.notes) {
    out += '\n';
    out += note;
    out += '\n';
  }
  return out;
}

std::string csv_field(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out;
  out.reserve(field.size() + 2);
  out += '"';
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_record(std::span<const std::string> fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  out += "\r\n";
  return out;
}

std::string to_csv(const Table& table) {
  std::string out = csv_record(table.headers());
  for (const auto& row : table.rows()) out += csv_record(row);
  return out;
}

std::string fmt_num(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.{}f}", v, std::max(0, decimals));
}

std::string fmt_pct(double fraction, int decimals) {
  if (std::isnan(fraction)) return "-";
  if (std::isinf(fraction)) return fraction > 0 ? "+inf%" : "-inf%";
  return fmt::format("{:+.{}f}%", fraction * 100.0, std::max(0, decimals));
}

// ---------------------------------------------------------------------------------------------
// JSON

json::value json_number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

namespace {

std::string percentile_key(double p) {
  return fmt::format("p{}", p);
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
  auto indent = [&](int d) { out.append(static_cast<std::size_t>(d) * 2, ' '); };
  switch (value.kind()) {
    case json::kind::object: {
      const auto& object = value.get_object();
      if (object.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      bool first = true;
      for (const auto& kv : object) {
        if (!first) out += ",\n";
        first = false;
        indent(depth + 1);
        out += json::serialize(json::string_view(kv.key()));
        out += ": ";
        pretty(out, kv.value(), depth + 1);
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
      const bool flat = std::all_of(array.begin(), array.end(), [](const json::value& e) {
        return !e.is_object() && !e.is_array();
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
      const double d = value.get_double();
      if (!std::isfinite(d)) {
        out += "null";
      } else {
        std::string text = fmt::format("{}", d);
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
      for (const auto& kv : value.get_object()) {
        flatten(kv.value(), join(std::string_view(kv.key().data(), kv.key().size())), out);
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

bool contains_any(std::string_view text, std::initializer_list<std::string_view> needles) {
  for (auto needle : needles) {
    if (text.find(needle) != std::string_view::npos) return true;
  }
  return false;
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

// ---------------------------------------------------------------------------------------------
// Comparing two runs

Direction guess_direction(std::string_view metric) {
  std::string lower(metric);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
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
      const double x = *metric_change.a, y = *metric_change.b;
      if (x == y) {
        metric_change.change = 0;
      } else if (x == 0) {
        metric_change.change = y > 0 ? std::numeric_limits<double>::infinity()
                                     : -std::numeric_limits<double>::infinity();
      } else {
        metric_change.change = (y - x) / std::fabs(x);
      }
      metric_change.flagged = std::fabs(metric_change.change) > threshold;  // false for NaN
      if (metric_change.flagged && metric_change.direction != Direction::neutral) {
        const bool up = metric_change.change > 0;
        const bool better = metric_change.direction == Direction::higher_is_better ? up : !up;
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
