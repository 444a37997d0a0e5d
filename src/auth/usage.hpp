// SPDX-License-Identifier: Apache-2.0
#pragma once
// Usage accounting (issue 15, part 5): tokens and requests per key, model, backend and hour.
//
// A UsageLedger adds up what each finished request's `usage` reported under (hour, key, model,
// backend), the hour being the UTC hour the request ended in, and answers queries by key and
// time range for `GET /admin/usage?key=&from=&to=[&format=csv]` (render with usage_json() or
// usage_csv()). `cached` tokens are the part of `prompt` the backend's prefix cache served
// (usage.prompt_tokens_details.cached_tokens): already included in `prompt`, never added to it.
//
// The interface is what a shared ledger (Redis hashes per hour, later) implements too;
// MemoryUsageLedger keeps it in this process, bounded: hours older than `retention` before the
// newest hour seen are dropped, and at most `max_rows` rows are kept (past that a new model of
// an hour is counted under the model "(other)").
//
// Thread safety: add() and query() may be called from any thread (one mutex; add() is one map
// update per finished request, query() copies the rows it returns).
//
// In the gateway (gateway/finish.cpp charge_key, gateway/admin.cpp usage_report): when a request
// ends (its stream included) and its usage is known, ledger.add(key->name, model, backend name,
// unix_time(), {prompt, cached, completion}). The admin handler: parse_usage_query(key, from, to,
// why) on the decoded query parameters (400 with `why` when nullopt), then
// usage_json(ledger.query(filter), filter) or usage_csv(...).
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace llmux::auth {

struct TokenUsage {
  std::int64_t prompt = 0;
  std::int64_t cached = 0;  // part of prompt
  std::int64_t completion = 0;
};

struct UsageRow {
  std::int64_t hour = 0;  // the hour's start, Unix seconds (UTC)
  std::string key, model, backend;
  std::int64_t requests = 0;
  std::int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  bool operator==(const UsageRow&) const = default;
};

/// Rows of `key` ("": every key) whose hour overlaps [from, to) (Unix seconds).
struct UsageQuery {
  std::string key;
  std::int64_t from = std::numeric_limits<std::int64_t>::min();
  std::int64_t to = std::numeric_limits<std::int64_t>::max();
};

class UsageLedger {
 public:
  virtual ~UsageLedger() = default;
  /// One finished request of `key` served by `backend` for `model`, ending at `unix_s`.
  virtual void add(std::string_view key, std::string_view model, std::string_view backend,
                   std::int64_t unix_s, const TokenUsage& usage) = 0;
  /// The matching rows, sorted by hour, key, model, backend.
  virtual std::vector<UsageRow> query(const UsageQuery& filter) const = 0;
};

class MemoryUsageLedger final : public UsageLedger {
 public:
  explicit MemoryUsageLedger(std::chrono::hours retention = std::chrono::hours(24 * 31),
                             std::size_t max_rows = 100000);
  void add(std::string_view key, std::string_view model, std::string_view backend,
           std::int64_t unix_s, const TokenUsage& usage) override;
  std::vector<UsageRow> query(const UsageQuery& filter) const override;
  std::size_t rows() const;

 private:
  struct Sums {
    std::int64_t requests = 0, prompt = 0, cached = 0, completion = 0;
  };
  using Key = std::tuple<std::int64_t, std::string, std::string, std::string>;
  mutable std::mutex mutex_;
  std::map<Key, Sums, std::less<>> rows_;  // ordered: hour first, so old hours go from the front
  std::int64_t retention_s_;
  std::size_t max_rows_;
  std::int64_t newest_hour_ = std::numeric_limits<std::int64_t>::min();
};

/// A time as the admin API takes it: Unix seconds ("1764756000"), an RFC 3339 date-time
/// ("2026-12-03T10:00:00Z", "2026-12-03T11:00:00+01:00", fractions of a second ignored), or a
/// date ("2026-12-03", midnight UTC). nullopt when it is none of these.
std::optional<std::int64_t> parse_time(std::string_view text);
/// Unix seconds as RFC 3339 in UTC: "2026-12-03T10:00:00Z".
std::string format_time(std::int64_t unix_s);

/// The query of `/admin/usage?key=&from=&to=` (values already percent-decoded; empty: not
/// given). nullopt with `why` set when a time is malformed or from is not before to.
std::optional<UsageQuery> parse_usage_query(std::string_view key, std::string_view from,
                                            std::string_view until, std::string& why);

/// {"object":"usage","key":K|null,"from":T|null,"to":T|null,"data":[ROW...],
///  "totals":{"requests":..,"prompt_tokens":..,"cached_tokens":..,"completion_tokens":..,
///  "total_tokens":..}}, each ROW {"hour":"2026-12-03T10:00:00Z","hour_unix":1764756000,"key",
///  "model","backend","requests","prompt_tokens","cached_tokens","completion_tokens",
///  "total_tokens"}; total_tokens = prompt + completion.
/// `partial`: the shared ledger could not be read, so the rows are this replica's own; the body
/// then says so ("partial":true and a "note").
std::string usage_json(const std::vector<UsageRow>& rows, const UsageQuery& filter,
                       bool partial = false);

/// "hour,key,model,backend,requests,prompt_tokens,cached_tokens,completion_tokens,total_tokens\n"
/// then one line per row ("\n" line ends), hour in RFC 3339; a field with a comma, quote or line
/// break is quoted, quotes doubled (RFC 4180).
std::string usage_csv(const std::vector<UsageRow>& rows);

}  // namespace llmux::auth
