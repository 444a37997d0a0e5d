// SPDX-License-Identifier: Apache-2.0
#include "auth/usage.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace llmux::auth {
namespace {

constexpr std::int64_t kHour = 3600;

std::int64_t hour_of(std::int64_t unix_s) {
  std::int64_t hour = unix_s / kHour;
  if (unix_s % kHour < 0) --hour;
  return hour * kHour;
}

/// `count` digits at `text[pos]` as a number; -1 when they are not all digits.
int digits(std::string_view text, std::size_t pos, std::size_t count) {
  if (pos + count > text.size()) return -1;
  int value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(value);
  std::string out = "\"";
  for (char character : value) {
    if (character == '"') out += '"';
    out += character;
  }
  out += '"';
  return out;
}

}  // namespace

MemoryUsageLedger::MemoryUsageLedger(std::chrono::hours retention, std::size_t max_rows)
    : retention_s_(std::max<std::int64_t>(1, retention.count()) * kHour),
      max_rows_(std::max<std::size_t>(1, max_rows)) {}

void MemoryUsageLedger::add(std::string_view key, std::string_view model, std::string_view backend,
                            std::int64_t unix_s, const TokenUsage& usage) {
  const std::int64_t hour = hour_of(unix_s);
  std::lock_guard lock(mutex_);
  if (hour > newest_hour_) {
    newest_hour_ = hour;
    // Hours that fell out of the retention go (the map is ordered by hour first).
    const std::int64_t oldest_kept = newest_hour_ - retention_s_ + kHour;
    while (!rows_.empty() && std::get<0>(rows_.begin()->first) < oldest_kept)
      rows_.erase(rows_.begin());
  } else if (hour <= newest_hour_ - retention_s_) {
    return;  // older than anything kept
  }
  auto it =
      rows_.find(std::tuple<std::int64_t, std::string_view, std::string_view, std::string_view>(
          hour, key, model, backend));
  if (it == rows_.end()) {
    const std::string_view stored_model =
        rows_.size() >= max_rows_ ? std::string_view("(other)") : model;
    it = rows_
             .try_emplace(
                 Key(hour, std::string(key), std::string(stored_model), std::string(backend)))
             .first;
  }
  Sums& sums = it->second;
  sums.requests += 1;
  sums.prompt += usage.prompt;
  sums.cached += usage.cached;
  sums.completion += usage.completion;
}

std::vector<UsageRow> MemoryUsageLedger::query(const UsageQuery& filter) const {
  std::vector<UsageRow> out;
  // An hour [h, h+3600) overlaps [from, to) when h < to and h + 3600 > from.
  const std::int64_t first =
      filter.from == std::numeric_limits<std::int64_t>::min() ? filter.from : hour_of(filter.from);
  std::lock_guard lock(mutex_);
  for (auto it = rows_.lower_bound(
           std::tuple<std::int64_t, std::string_view, std::string_view, std::string_view>(first, {},
                                                                                          {}, {}));
       it != rows_.end(); ++it) {
    const auto& [hour, key, model, backend] = it->first;
    if (hour >= filter.to) break;
    if (!filter.key.empty() && key != filter.key) continue;
    const Sums& sums = it->second;
    out.push_back(
        {hour, key, model, backend, sums.requests, sums.prompt, sums.cached, sums.completion});
  }
  return out;
}

std::size_t MemoryUsageLedger::rows() const {
  std::lock_guard lock(mutex_);
  return rows_.size();
}

std::optional<std::int64_t> parse_time(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (std::all_of(text.begin(), text.end(),
                  [](char character) { return std::isdigit((unsigned char)character); })) {
    std::int64_t seconds = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
    return seconds;
  }
  const int year = digits(text, 0, 4), month = digits(text, 5, 2),
            day_of_month = digits(text, 8, 2);
  if (year < 0 || month < 0 || day_of_month < 0 || text[4] != '-' || text[7] != '-')
    return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(year), std::chrono::month(month),
                                        std::chrono::day(day_of_month)};
  if (!ymd.ok()) return std::nullopt;
  const std::int64_t day = std::chrono::sys_days(ymd).time_since_epoch().count() * 86400;
  if (text.size() == 10) return day;
  if (text.size() < 20 || (text[10] != 'T' && text[10] != 't' && text[10] != ' ') ||
      text[13] != ':' || text[16] != ':')
    return std::nullopt;
  const int hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60)
    return std::nullopt;
  std::size_t pos = 19;
  if (text[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == start) return std::nullopt;
  }
  std::int64_t offset = 0;
  const std::string_view zone = text.substr(pos);
  if (zone == "Z" || zone == "z") {
    offset = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    const int offset_hours = digits(zone, 1, 2), offset_minutes = digits(zone, 4, 2);
    if (offset_hours < 0 || offset_hours > 23 || offset_minutes < 0 || offset_minutes > 59)
      return std::nullopt;
    offset = (zone[0] == '+' ? 1 : -1) * (offset_hours * 3600 + offset_minutes * 60);
  } else {
    return std::nullopt;
  }
  return day + hour * 3600 + minute * 60 + second - offset;
}

std::string format_time(std::int64_t unix_s) {
  std::int64_t days = unix_s / 86400, rest = unix_s % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  const std::chrono::year_month_day ymd{std::chrono::sys_days(std::chrono::days(days))};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                     rest / 3600, rest / 60 % 60, rest % 60);
}

std::optional<UsageQuery> parse_usage_query(std::string_view key, std::string_view from,
                                            std::string_view until, std::string& why) {
  UsageQuery filter;
  filter.key = std::string(key);
  const std::pair<std::string_view, std::int64_t*> times[] = {{from, &filter.from},
                                                              {until, &filter.to}};
  for (const auto& [text, out] : times) {
    if (text.empty()) continue;
    const auto parsed = parse_time(text);
    if (!parsed) {
      why = fmt::format(
          "'{}' is not a time: use Unix seconds, an RFC 3339 date-time "
          "(2026-12-03T10:00:00Z) or a date (2026-12-03)",
          text);
      return std::nullopt;
    }
    *out = *parsed;
  }
  if (filter.from >= filter.to) {
    why = fmt::format("from ({}) must be before to ({})", from, until);
    return std::nullopt;
  }
  return filter;
}

std::string usage_json(const std::vector<UsageRow>& rows, const UsageQuery& filter, bool partial) {
  namespace json = boost::json;
  json::object body;
  body["object"] = "usage";
  body["key"] = filter.key.empty() ? json::value(nullptr) : json::value(filter.key);
  body["from"] = filter.from == std::numeric_limits<std::int64_t>::min()
                     ? json::value(nullptr)
                     : json::value(format_time(filter.from));
  body["to"] = filter.to == std::numeric_limits<std::int64_t>::max()
                   ? json::value(nullptr)
                   : json::value(format_time(filter.to));
  json::array data;
  std::int64_t requests = 0, prompt = 0, cached = 0, completion = 0;
  for (const UsageRow& row : rows) {
    data.push_back(json::object{{"hour", format_time(row.hour)},
                                {"hour_unix", row.hour},
                                {"key", row.key},
                                {"model", row.model},
                                {"backend", row.backend},
                                {"requests", row.requests},
                                {"prompt_tokens", row.prompt_tokens},
                                {"cached_tokens", row.cached_tokens},
                                {"completion_tokens", row.completion_tokens},
                                {"total_tokens", row.prompt_tokens + row.completion_tokens}});
    requests += row.requests;
    prompt += row.prompt_tokens;
    cached += row.cached_tokens;
    completion += row.completion_tokens;
  }
  body["data"] = std::move(data);
  body["totals"] = json::object{{"requests", requests},
                                {"prompt_tokens", prompt},
                                {"cached_tokens", cached},
                                {"completion_tokens", completion},
                                {"total_tokens", prompt + completion}};
  if (partial) {
    body["partial"] = true;
    body["note"] =
        "The shared state store (Redis) did not answer: these are this replica's own counts.";
  }
  return json::serialize(body);
}

std::string usage_csv(const std::vector<UsageRow>& rows) {
  std::string out =
      "hour,key,model,backend,requests,prompt_tokens,cached_tokens,completion_tokens,"
      "total_tokens\n";
  for (const UsageRow& row : rows)
    out += fmt::format("{},{},{},{},{},{},{},{},{}\n", format_time(row.hour), csv_field(row.key),
                       csv_field(row.model), csv_field(row.backend), row.requests,
                       row.prompt_tokens, row.cached_tokens, row.completion_tokens,
                       row.prompt_tokens + row.completion_tokens);
  return out;
}

}  // namespace llmux::auth
