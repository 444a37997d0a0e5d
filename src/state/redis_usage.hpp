// SPDX-License-Identifier: Apache-2.0
#pragma once
// The usage ledger shared by gateway replicas through Redis (issue 15), for the admin API.
//
// Redis: one hash per UTC hour, `<prefix>usage:<hour, Unix s>`, a field per (key, model, backend,
// measure): `key \x1f model \x1f backend \x1f requests|prompt|cached|completion` (in each name
// '%' is written %25 and \x1f %1F), expiring `retention` after the hour's end (as
// auth::MemoryUsageLedger drops hours).
//
// add() never waits: it adds to a local MemoryUsageLedger (what this replica added: query())
// and fires one EVAL that HINCRBYs the row's measures. While Redis is down (or refuses) the rows
// wait in a pending table (summed per row, at most `max_pending` rows; past that they are dropped
// and counted) and are written back when the connection returns (RedisClient::on_up), or at the
// next add() when Redis answered but did not apply them.
//
// Exactly once: every write carries (sender, sequence) and Redis applies it only when its
// sequence follows the sender's last applied one (scripts::kHincrSeq; a sequence key per sender,
// `<prefix>usage:seq:<replica>:<epoch>`). So a reply of "not applied" is definite (the rows go
// back to pending, to be sent under a new sequence; at once when it was a gap, as after Redis came
// back empty, without the sequence keys), and a write whose reply was lost with the connection is
// resent with its own sequence when Redis returns: applied if it was not, ignored if it was. After
// any failure the sender starts a new epoch (a new sequence key). The one case not covered: a dead
// connection's writes that Redis executes after the replacement connection's resends of them (Redis
// reads a closed socket's last commands late).
//
// query_shared() reads the hours of [from, to) within the retention in one round trip (a Lua
// HGETALL per hour), plus the pending rows (not in Redis: never counted twice); nullopt when Redis
// is down, slow (`query_timeout`) or failing. Writes in flight (sent, not answered) may be missing
// from it. query() answers from this replica's own rows, for when query_shared() cannot.
//
// Thread safety: add(), query() and the counters from any thread; query_shared() from any
// coroutine (the ledger must outlive it); callbacks run on the Redis thread and hold only the
// shared core, so the ledger may go before the client. The ledger holds the client; destroy it
// off the Redis thread (it deregisters its on_up listener).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "auth/usage.hpp"
#include "state/redis_client.hpp"

namespace llmux::state {

struct RedisUsageOptions {
  std::string prefix;                             // `state.prefix`, e.g. "llmux:"
  std::chrono::hours retention{24 * 31};          // `auth.usage_retention`
  std::size_t max_pending = 100000;               // rows kept while Redis is away
  std::chrono::milliseconds query_timeout{2000};  // query_shared()'s wait
  std::size_t local_rows = 100000;                // the local ledger's bound
  std::function<std::int64_t()> now_s;            // Unix seconds; default system clock
};

class RedisUsageLedger final : public auth::UsageLedger {
 public:
  RedisUsageLedger(std::shared_ptr<RedisClient> redis, RedisUsageOptions opts);
  ~RedisUsageLedger() override;
  RedisUsageLedger(const RedisUsageLedger&) = delete;
  RedisUsageLedger& operator=(const RedisUsageLedger&) = delete;

  void add(std::string_view key, std::string_view model, std::string_view backend,
           std::int64_t unix_s, const auth::TokenUsage& usage) override;
  /// What this replica added (the admin API's answer, marked partial, without Redis).
  std::vector<auth::UsageRow> query(const auth::UsageQuery& filter) const override;
  /// Every replica's rows (Redis, plus this replica's pending ones), in query()'s order; nullopt
  /// when Redis cannot answer now.
  boost::asio::awaitable<std::optional<std::vector<auth::UsageRow>>> query_shared(
      const auth::UsageQuery& filter);

  /// For metrics (cheap reads; pending_rows and unsure_writes take the pending lock briefly).
  struct Stats {
    std::size_t pending_rows = 0;    // rows waiting for Redis (llmux_usage_pending_rows)
    std::size_t unsure_writes = 0;   // writes whose reply was lost, to be resent
    std::uint64_t dropped_rows = 0;  // rows lost: pending full, or too old to keep
    std::uint64_t written = 0;       // writes Redis applied
    std::uint64_t resent = 0;        // writes resent under their own sequence
    std::int64_t inflight = 0;       // writes sent, not answered yet
  };
  Stats stats() const;

  /// The Redis hash of the hour starting at `hour_s`; the hash field of a row's measure.
  std::string hash_key(std::int64_t hour_s) const;
  static std::string field(std::string_view key, std::string_view model, std::string_view backend,
                           std::string_view measure);

 private:
  struct Sums {
    std::int64_t requests = 0, prompt = 0, cached = 0, completion = 0;
  };
  using RowKey = std::tuple<std::int64_t, std::string, std::string, std::string>;
  using Rows = std::map<RowKey, Sums, std::less<>>;
  // One write: one hour's rows, under (epoch, seq) once sent.
  struct Write {
    std::uint64_t epoch = 0, seq = 0;
    std::int64_t hour = 0;
    std::vector<std::pair<RowKey, Sums>> rows;
  };
  // Owned jointly with the callbacks in flight and the on_up listener.
  struct Core;

  std::shared_ptr<RedisClient> redis_;
  RedisUsageOptions opts_;
  auth::MemoryUsageLedger local_;
  std::shared_ptr<Core> core_;
  std::size_t listener_ = 0;
};

}  // namespace llmux::state
