// SPDX-License-Identifier: Apache-2.0
// RedisUsageLedger: hourly hashes in Redis written exactly once by sequence, a pending table while
// Redis is away, a local ledger for this replica's own answer (see the header).
#include "state/redis_usage.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "state/redis_scripts.hpp"

namespace llmux::state {

namespace {

constexpr std::int64_t kHour = 3600;
constexpr std::size_t kFlushRows = 1000;  // pending rows written back per round
constexpr char kSep = '\x1f';

std::int64_t hour_of(std::int64_t unix_s) {
  std::int64_t h = unix_s / kHour;
  if (unix_s % kHour < 0) --h;
  return h * kHour;
}

std::int64_t system_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void escape(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '%')
      out += "%25";
    else if (c == kSep)
      out += "%1F";
    else
      out += c;
  }
}

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s.substr(i, 3) == "%25") {
      out += '%';
      i += 2;
    } else if (s.substr(i, 3) == "%1F") {
      out += kSep;
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

struct RedisUsageLedger::Core : std::enable_shared_from_this<Core> {
  // The callbacks run on the Redis thread while the client lives: a plain pointer (a shared one
  // could end the client on its own thread).
  RedisClient* redis = nullptr;
  std::string prefix, replica;
  std::int64_t retention_s = 0;
  std::size_t max_pending = 0;
  std::function<std::int64_t()> now_s;

  std::mutex send_mu;  // sequences are taken and sent in one order
  std::uint64_t epoch = 1, seq = 0;
  std::atomic<bool> bump{false};  // a write failed: the next one starts a new epoch

  mutable std::mutex pending_mu;
  Rows pending;               // rows Redis has not applied, summed
  std::vector<Write> unsure;  // writes sent whose outcome is unknown: resent with their sequence
  std::atomic<std::size_t> waiting{0};  // pending.size() + unsure.size()
  std::atomic<bool> flushing{false};    // a write-back round in flight
  std::atomic<std::uint64_t> dropped{0}, written{0}, resent{0};
  // Writes sent and not answered. Changed under pending_mu wherever rows move between it and
  // pending or unsure, so stats() never sees a row in neither place: "nothing waiting, nothing in
  // flight" means written.
  std::atomic<std::int64_t> inflight{0};

  std::string hash_key(std::int64_t hour) const { return prefix + "usage:" + std::to_string(hour); }

  // Under pending_mu.
  void count_waiting() { waiting = pending.size() + unsure.size(); }

  void to_pending(std::vector<std::pair<RowKey, Sums>> rows) {
    std::lock_guard lock(pending_mu);
    to_pending_locked(std::move(rows));
  }

  // Under pending_mu.
  void to_pending_locked(std::vector<std::pair<RowKey, Sums>> rows) {
    const std::int64_t oldest_kept = hour_of(now_s()) - retention_s + kHour;
    for (auto& [k, s] : rows) {
      auto it = pending.find(k);
      if (it == pending.end()) {
        if (std::get<0>(k) < oldest_kept || pending.size() >= max_pending) {
          dropped += 1;
          continue;
        }
        it = pending.emplace(std::move(k), Sums{}).first;
      }
      it->second.requests += s.requests;
      it->second.prompt += s.prompt;
      it->second.cached += s.cached;
      it->second.completion += s.completion;
    }
    count_waiting();
  }

  // Counted in inflight by the caller: flush() under pending_mu as the rows leave it, add() for a
  // row sent at once.
  void send(Write w, bool last_of_round) {
    std::vector<std::string> args;
    args.reserve(8 + 8 * w.rows.size());
    const std::int64_t ttl_s = std::max<std::int64_t>(1, w.hour + kHour + retention_s - now_s());
    args.insert(args.end(), {"EVAL", scripts::kHincrSeq, "2", hash_key(w.hour),
                             prefix + "usage:seq:" + replica + ":" + std::to_string(w.epoch),
                             std::to_string(w.seq), std::to_string(ttl_s * 1000),
                             std::to_string(retention_s * 1000)});
    for (const auto& [k, s] : w.rows) {
      const auto& [hour, key, model, backend] = k;
      const std::pair<const char*, std::int64_t> measures[] = {{"requests", s.requests},
                                                               {"prompt", s.prompt},
                                                               {"cached", s.cached},
                                                               {"completion", s.completion}};
      for (const auto& [name, v] : measures) {
        if (v == 0) continue;
        args.push_back(RedisUsageLedger::field(key, model, backend, name));
        args.push_back(std::to_string(v));
      }
    }
    redis->fire(std::move(args), [self = shared_from_this(), w = std::move(w),
                                  last_of_round](const RedisReply& r) mutable {
      self->on_reply(std::move(w), r, last_of_round);
    });
  }

  // A write of new rows: the next sequence (a new epoch after a failure).
  void send_fresh(Write w, bool last_of_round) {
    std::lock_guard lock(send_mu);
    if (bump.exchange(false)) {
      ++epoch;
      seq = 0;
    }
    w.epoch = epoch;
    w.seq = ++seq;
    send(std::move(w), last_of_round);  // fire() only queues: cheap under the lock
  }

  void on_reply(Write w, const RedisReply& r, bool last_of_round) {
    bool applied = false, gap = false;
    if (r.kind == RedisReply::Kind::integer && r.integer != 0) {
      applied = true;  // 1: applied now; 2: applied before (a resend)
      ++written;
      --inflight;
    } else if (r.kind == RedisReply::Kind::integer || r.kind == RedisReply::Kind::error) {
      // Definitely not applied (a gap, or refused): new rows, new sequence. A gap means Redis
      // has lost this sender's sequence (it came back empty): the new epoch's writes go through.
      gap = r.kind == RedisReply::Kind::integer;
      bump = true;
      std::lock_guard lock(pending_mu);
      to_pending_locked(std::move(w.rows));
      --inflight;
    } else {
      // No reply (down, refused, or the connection lost with it): maybe applied; the resend
      // under the same sequence decides.
      bump = true;
      std::lock_guard lock(pending_mu);
      unsure.push_back(std::move(w));
      if (unsure.size() > max_pending) {
        dropped += unsure.front().rows.size();
        unsure.erase(unsure.begin());
      }
      count_waiting();
      --inflight;
    }
    if (last_of_round) flushing = false;
    // The next round: after a round that went through, or at once after a gap (else the rows
    // would wait for this replica's next add()). Not after an error: it would come again.
    if (((applied && last_of_round) || gap) && waiting > 0) flush();
  }

  // Writes back unsure writes (their own sequence, in order), then up to kFlushRows pending rows.
  void flush() {
    if (flushing.exchange(true)) return;
    std::vector<Write> resend, fresh;
    {
      std::lock_guard lock(pending_mu);
      resend.swap(unsure);
      std::map<std::int64_t, Write> by_hour;
      std::size_t n = 0;
      while (!pending.empty() && n++ < kFlushRows) {
        auto node = pending.extract(pending.begin());
        Write& w = by_hour[std::get<0>(node.key())];
        w.hour = std::get<0>(node.key());
        w.rows.emplace_back(std::move(node.key()), node.mapped());
      }
      for (auto& [h, w] : by_hour) fresh.push_back(std::move(w));
      count_waiting();
      inflight += static_cast<std::int64_t>(resend.size() + fresh.size());
    }
    std::sort(resend.begin(), resend.end(), [](const Write& a, const Write& b) {
      return std::tie(a.epoch, a.seq) < std::tie(b.epoch, b.seq);
    });
    const std::size_t total = resend.size() + fresh.size();
    if (total == 0) {
      flushing = false;
      return;
    }
    std::size_t i = 0;
    resent += resend.size();
    for (auto& w : resend) send(std::move(w), ++i == total);
    for (auto& w : fresh) send_fresh(std::move(w), ++i == total);
  }
};

RedisUsageLedger::RedisUsageLedger(std::shared_ptr<RedisClient> redis, RedisUsageOptions opts)
    : redis_(std::move(redis)),
      opts_(std::move(opts)),
      local_(opts_.retention, opts_.local_rows),
      core_(std::make_shared<Core>()) {
  if (!opts_.now_s) opts_.now_s = system_s;
  Core& c = *core_;
  c.redis = redis_.get();
  c.prefix = opts_.prefix;
  std::random_device rd;
  c.replica = fmt::format("{:08x}{:08x}", rd(), rd());
  c.retention_s = std::max<std::int64_t>(1, opts_.retention.count()) * kHour;
  c.max_pending = std::max<std::size_t>(1, opts_.max_pending);
  c.now_s = opts_.now_s;
  // Written back each time the connection comes up (on the Redis thread).
  listener_ = redis_->on_up([core = core_] { core->flush(); });
}

RedisUsageLedger::~RedisUsageLedger() {
  redis_->remove_on_up(listener_);
}

std::string RedisUsageLedger::hash_key(std::int64_t hour_s) const {
  return core_->hash_key(hour_s);
}

std::string RedisUsageLedger::field(std::string_view key, std::string_view model,
                                    std::string_view backend, std::string_view measure) {
  std::string f;
  f.reserve(key.size() + model.size() + backend.size() + measure.size() + 3);
  escape(f, key);
  f += kSep;
  escape(f, model);
  f += kSep;
  escape(f, backend);
  f += kSep;
  f += measure;
  return f;
}

void RedisUsageLedger::add(std::string_view key, std::string_view model, std::string_view backend,
                           std::int64_t unix_s, const auth::TokenUsage& usage) {
  local_.add(key, model, backend, unix_s, usage);
  Write w;
  w.hour = hour_of(unix_s);
  w.rows.emplace_back(RowKey(w.hour, std::string(key), std::string(model), std::string(backend)),
                      Sums{1, usage.prompt, usage.cached, usage.completion});
  if (!redis_->up()) {
    core_->to_pending(std::move(w.rows));
    if (!redis_->up()) return;  // else it came up meanwhile: its write-back may have run already
  } else {
    ++core_->inflight;
    core_->send_fresh(std::move(w), false);
  }
  if (core_->waiting > 0) core_->flush();
}

std::vector<auth::UsageRow> RedisUsageLedger::query(const auth::UsageQuery& q) const {
  return local_.query(q);
}

boost::asio::awaitable<std::optional<std::vector<auth::UsageRow>>> RedisUsageLedger::query_shared(
    const auth::UsageQuery& q) {
  if (!redis_->up()) co_return std::nullopt;
  const Core& c = *core_;
  const std::int64_t newest = hour_of(c.now_s());
  const std::int64_t first =
      std::max(q.from == std::numeric_limits<std::int64_t>::min() ? q.from : hour_of(q.from),
               newest - c.retention_s + kHour);
  // An hour or so ahead too: a replica whose clock runs a little fast writes there.
  const std::int64_t end = std::min(q.to, newest + 2 * kHour);
  std::vector<std::string> args{"EVAL", scripts::kHgetallMany, "0"};
  std::vector<std::int64_t> hours;
  for (std::int64_t h = first; h < end; h += kHour) {
    hours.push_back(h);
    args.push_back(c.hash_key(h));
  }
  args[2] = std::to_string(hours.size());
  Rows rows;
  if (!hours.empty()) {
    RedisReply r = co_await redis_->command(std::move(args), opts_.query_timeout);
    if (r.kind != RedisReply::Kind::array || r.elements.size() != hours.size())
      co_return std::nullopt;
    for (std::size_t i = 0; i < hours.size(); ++i) {
      const auto& e = r.elements[i].elements;
      for (std::size_t j = 0; j + 1 < e.size(); j += 2) {
        const std::string_view f = e[j].str;
        const auto v = to_int(e[j + 1].str);
        const auto a = f.find(kSep), b = f.find(kSep, a + 1), m = f.find(kSep, b + 1);
        if (!v || a == f.npos || b == f.npos || m == f.npos) continue;  // not a field of ours
        std::string key = unescape(f.substr(0, a));
        if (!q.key.empty() && key != q.key) continue;
        Sums& s = rows[RowKey(hours[i], std::move(key), unescape(f.substr(a + 1, b - a - 1)),
                              unescape(f.substr(b + 1, m - b - 1)))];
        const std::string_view measure = f.substr(m + 1);
        if (measure == "requests")
          s.requests += *v;
        else if (measure == "prompt")
          s.prompt += *v;
        else if (measure == "cached")
          s.cached += *v;
        else if (measure == "completion")
          s.completion += *v;
      }
    }
    // Pending rows are not in Redis (a row leaves pending only to be sent, and comes back only
    // when Redis did not apply it): read after Redis answered, they are not counted twice.
    std::lock_guard lock(c.pending_mu);
    for (const auto& [k, s] : c.pending) {
      const auto& [hour, key, model, backend] = k;
      if (hour < first || hour >= end || (!q.key.empty() && key != q.key)) continue;
      Sums& t = rows[k];
      t.requests += s.requests;
      t.prompt += s.prompt;
      t.cached += s.cached;
      t.completion += s.completion;
    }
  }
  std::vector<auth::UsageRow> out;
  out.reserve(rows.size());
  for (const auto& [k, s] : rows) {
    const auto& [hour, key, model, backend] = k;
    out.push_back({hour, key, model, backend, s.requests, s.prompt, s.cached, s.completion});
  }
  co_return out;
}

RedisUsageLedger::Stats RedisUsageLedger::stats() const {
  const Core& c = *core_;
  Stats s;
  {
    std::lock_guard lock(c.pending_mu);
    s.pending_rows = c.pending.size();
    s.unsure_writes = c.unsure.size();
    s.inflight = c.inflight.load();  // with the rows (Core::inflight)
  }
  s.dropped_rows = c.dropped.load();
  s.written = c.written.load();
  s.resent = c.resent.load();
  return s;
}

}  // namespace llmux::state
