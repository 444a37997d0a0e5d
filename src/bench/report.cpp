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

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;  // count every byte that is not a continuation byte
  }
  return n;
}

namespace {

std::string md_cell(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '|') {
      out += "\\|";
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void append_padded(std::string& out, const std::string& cell, std::size_t width, Align a) {
  const std::size_t pad = width - std::min(width, display_width(cell));
  if (a == Align::right) out.append(pad, ' ');
  out += cell;
  if (a == Align::left) out.append(pad, ' ');
}

}  // namespace

std::string to_markdown(const Table& t, const MarkdownOptions& opt) {
  const std::size_t cols = t.columns();
  std::vector<std::string> header(cols);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> width(cols, 3);  // a separator needs at least "---"
  for (std::size_t c = 0; c < cols; ++c) {
    header[c] = md_cell(t.headers()[c]);
    width[c] = std::max(width[c], display_width(header[c]));
  }
  rows.reserve(t.rows().size());
  for (const auto& r : t.rows()) {
    auto& row = rows.emplace_back(cols);
    for (std::size_t c = 0; c < cols; ++c) {
      row[c] = md_cell(r[c]);
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
      append_padded(out, cells[c], width[c], t.align()[c]);
      out += " |";
    }
    out += '\n';
  };
  line(header);
  out += '|';
  for (std::size_t c = 0; c < cols; ++c) {
    out += ' ';
    if (t.align()[c] == Align::right) {
      out.append(width[c] - 1, '-');
      out += ':';
    } else {
      out.append(width[c], '-');
    }
    out += " |";
  }
  out += '\n';
  for (const auto& r : rows) line(r);
  for (const auto& note : opt.notes) {
    out += '\n';
    out += note;
    out += '\n';
  }
  return out;
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
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

std::string to_csv(const Table& t) {
  std::string out = csv_record(t.headers());
  for (const auto& r : t.rows()) out += csv_record(r);
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

json::object to_json(const Summary& s, double scale) {
  json::object o;
  o["count"] = s.count;
  o["mean"] = json_number(s.mean * scale);
  o["stddev"] = json_number(s.stddev * scale);
  o["min"] = json_number(s.min * scale);
  o["max"] = json_number(s.max * scale);
  o["p50"] = json_number(s.p50 * scale);
  o["p90"] = json_number(s.p90 * scale);
  o["p95"] = json_number(s.p95 * scale);
  o["p99"] = json_number(s.p99 * scale);
  for (const auto& [p, v] : s.extra) o[percentile_key(p)] = json_number(v * scale);
  return o;
}

json::object to_json(const RequestTiming& t) {
  auto opt_i64 = [](const std::optional<std::int64_t>& v) -> json::value {
    if (v) return *v;
    return nullptr;
  };
  auto opt_u64 = [](const std::optional<std::uint64_t>& v) -> json::value {
    if (v) return *v;
    return nullptr;
  };
  json::object o;
  o["start_ns"] = t.start_ns;
  o["first_byte_ns"] = opt_i64(t.first_byte_ns);
  o["first_token_ns"] = opt_i64(t.first_token_ns);
  o["end_ns"] = t.end_ns;
  o["output_tokens"] = opt_u64(t.output_tokens);
  o["prompt_tokens"] = opt_u64(t.prompt_tokens);
  o["cached_tokens"] = opt_u64(t.cached_tokens);
  o["error"] = to_string(t.error);
  if (t.http_status) o["http_status"] = t.http_status;
  if (!t.error_message.empty()) o["error_message"] = t.error_message;
  if (!t.backend.empty()) o["backend"] = t.backend;
  json::array events;
  events.reserve(t.events.size());
  for (const TokenEvent& e : t.events) {
    events.push_back(json::array{e.time_ns - t.start_ns, e.tokens});
  }
  o["events"] = std::move(events);
  return o;
}

json::object to_json(const Aggregate& a) {
  json::object o;
  o["requests"] = a.requests;
  o["ok"] = a.ok;
  o["failed"] = a.failed;
  o["rejected"] = a.rejected;
  json::object errors;
  for (const auto& [kind, n] : a.errors) errors[to_string(kind)] = n;
  o["errors"] = std::move(errors);
  o["wall_s"] = json_number(a.wall_s);
  o["output_tokens"] = a.output_tokens;
  o["prompt_tokens"] = a.prompt_tokens;
  o["estimated_requests"] = a.estimated_requests;
  o["output_tok_s"] = json_number(a.output_tok_s);
  o["requests_per_s"] = json_number(a.requests_per_s);
  o["good"] = a.good;
  o["goodput_req_s"] = json_number(a.goodput_req_s);
  o["cached_prompt_tokens"] = a.cached_tokens;
  o["cached_reported_requests"] = a.cached_reported;
  o["cached_share"] = json_number(a.cached_share);
  o["not_found"] = a.not_found;
  o["ttfb_ms"] = to_json(a.ttfb, 1e3);
  o["ttft_ms"] = to_json(a.ttft, 1e3);
  o["tpot_ms"] = to_json(a.tpot, 1e3);
  o["itl_ms"] = to_json(a.itl, 1e3);
  o["e2e_ms"] = to_json(a.e2e, 1e3);
  o["decode_tok_s"] = to_json(a.decode_tok_s);
  return o;
}

namespace {

void pretty(std::string& out, const json::value& v, int depth) {
  auto indent = [&](int d) { out.append(static_cast<std::size_t>(d) * 2, ' '); };
  switch (v.kind()) {
    case json::kind::object: {
      const auto& o = v.get_object();
      if (o.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      bool first = true;
      for (const auto& kv : o) {
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
      const auto& a = v.get_array();
      if (a.empty()) {
        out += "[]";
        return;
      }
      // Arrays of scalars stay on one line (e.g. [offset_ns, tokens] pairs).
      const bool flat = std::all_of(
          a.begin(), a.end(), [](const json::value& e) { return !e.is_object() && !e.is_array(); });
      if (flat) {
        out += '[';
        for (std::size_t i = 0; i < a.size(); ++i) {
          if (i) out += ", ";
          pretty(out, a[i], depth + 1);
        }
        out += ']';
        return;
      }
      out += "[\n";
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) out += ",\n";
        indent(depth + 1);
        pretty(out, a[i], depth + 1);
      }
      out += '\n';
      indent(depth);
      out += ']';
      return;
    }
    case json::kind::double_: {
      const double d = v.get_double();
      if (!std::isfinite(d)) {
        out += "null";
      } else {
        std::string s = fmt::format("{}", d);
        // Keep it a JSON number that reads back as a double.
        if (s.find_first_of(".eE") == std::string::npos) s += ".0";
        out += s;
      }
      return;
    }
    default:
      out += json::serialize(v);
      return;
  }
}

void flatten(const json::value& v, const std::string& prefix, std::map<std::string, double>& out) {
  auto join = [&](std::string_view key) {
    return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
  };
  switch (v.kind()) {
    case json::kind::object:
      for (const auto& kv : v.get_object()) {
        flatten(kv.value(), join(std::string_view(kv.key().data(), kv.key().size())), out);
      }
      break;
    case json::kind::array: {
      const auto& a = v.get_array();
      for (std::size_t i = 0; i < a.size(); ++i) flatten(a[i], join(std::to_string(i)), out);
      break;
    }
    case json::kind::int64:
      out[prefix] = static_cast<double>(v.get_int64());
      break;
    case json::kind::uint64:
      out[prefix] = static_cast<double>(v.get_uint64());
      break;
    case json::kind::double_:
      out[prefix] = v.get_double();
      break;
    default:
      break;
  }
}

bool contains_any(std::string_view s, std::initializer_list<std::string_view> needles) {
  for (auto n : needles) {
    if (s.find(n) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

std::string pretty_json(const json::value& v) {
  std::string out;
  pretty(out, v, 0);
  out += '\n';
  return out;
}

std::map<std::string, double> flatten_numbers(const json::value& v) {
  std::map<std::string, double> out;
  flatten(v, "", out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Comparing two runs

Direction guess_direction(std::string_view metric) {
  std::string lower(metric);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view m = lower;
  const std::size_t dot = m.rfind('.');
  const std::string_view leaf = dot == std::string_view::npos ? m : m.substr(dot + 1);
  if (leaf == "count") return Direction::neutral;
  if (contains_any(m, {"error", "failed", "timeout", "not_found"}))
    return Direction::lower_is_better;
  if (contains_any(m, {"tok_s", "tok/s", "per_s", "req_s", "goodput", "throughput", "ratio"})) {
    return Direction::higher_is_better;
  }
  if (contains_any(m, {"ttft", "tpot", "itl", "e2e", "ttfb", "latency", "_ms", "duration"})) {
    return Direction::lower_is_better;
  }
  return Direction::neutral;
}

Comparison compare(const std::map<std::string, double>& a, const std::map<std::string, double>& b,
                   const std::map<std::string, Direction>& directions, double threshold) {
  Comparison c;
  c.threshold = threshold;
  std::set<std::string> names;
  for (const auto& [k, v] : a) names.insert(k);
  for (const auto& [k, v] : b) names.insert(k);
  for (const std::string& name : names) {
    MetricChange m;
    m.metric = name;
    if (auto it = a.find(name); it != a.end()) m.a = it->second;
    if (auto it = b.find(name); it != b.end()) m.b = it->second;
    if (auto it = directions.find(name); it != directions.end()) {
      m.direction = it->second;
    } else {
      m.direction = guess_direction(name);
    }
    if (!m.a || !m.b) {
      m.change = std::numeric_limits<double>::quiet_NaN();
      m.flagged = true;
    } else {
      const double x = *m.a, y = *m.b;
      if (x == y) {
        m.change = 0;
      } else if (x == 0) {
        m.change = y > 0 ? std::numeric_limits<double>::infinity()
                         : -std::numeric_limits<double>::infinity();
      } else {
        m.change = (y - x) / std::fabs(x);
      }
      m.flagged = std::fabs(m.change) > threshold;  // false for NaN
      if (m.flagged && m.direction != Direction::neutral) {
        const bool up = m.change > 0;
        const bool better = m.direction == Direction::higher_is_better ? up : !up;
        m.improvement = better;
        m.regression = !better;
      }
    }
    if (m.flagged) ++c.flagged;
    if (m.regression) ++c.regressions;
    if (m.improvement) ++c.improvements;
    c.changes.push_back(std::move(m));
  }
  return c;
}

Table comparison_table(const Comparison& c, bool only_flagged) {
  Table t({"Metric", "A", "B", "Change", "Verdict"},
          {Align::left, Align::right, Align::right, Align::right, Align::left});
  auto num = [](const std::optional<double>& v) {
    if (!v) return std::string("-");
    // Enough precision for both token counts and millisecond latencies.
    return fmt_num(*v, std::fabs(*v) >= 100 ? 1 : 3);
  };
  for (const MetricChange& m : c.changes) {
    if (only_flagged && !m.flagged) continue;
    std::string verdict;
    if (!m.a) {
      verdict = "only in B";
    } else if (!m.b) {
      verdict = "only in A";
    } else if (m.regression) {
      verdict = "regression";
    } else if (m.improvement) {
      verdict = "improvement";
    } else if (m.flagged) {
      verdict = "changed";
    }
    t.add_row({m.metric, num(m.a), num(m.b), (m.a && m.b) ? fmt_pct(m.change) : "-", verdict});
  }
  return t;
}

}  // namespace llmux::bench
