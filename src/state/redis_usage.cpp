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
  std::int64_t hour = unix_s / kHour;
  if (unix_s % kHour < 0) --hour;
  return hour * kHour;
}

std::int64_t system_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void escape(std::string& out, std::string_view text) {
  for (char character : text) {
    if (character == '%')
      out += "%25";
    else if (character == kSep)
      out += "%1F";
    else
      out += character;
  }
}

std::string unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, 3) == "%25") {
      out += '%';
      i += 2;
    } else if (text.substr(i, 3) == "%1F") {
      out += kSep;
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<std::int64_t> to_int(std::string_view text) {
  std::int64_t value = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return value;
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
    for (auto& [row_key, sums] : rows) {
      auto it = pending.find(row_key);
      if (it == pending.end()) {
        if (std::get<0>(row_key) < oldest_kept || pending.size() >= max_pending) {
          dropped += 1;
          continue;
        }
        it = pending.emplace(std::move(row_key), Sums{}).first;
      }
      it->second.requests += sums.requests;
      it->second.prompt += sums.prompt;
      it->second.cached += sums.cached;
      it->second.completion += sums.completion;
    }
    count_waiting();
  }

  // Counted in inflight by the caller: flush() under pending_mu as the rows leave it, add() for a
  // row sent at once.
  void send(Write write, bool last_of_round) {
    std::vector<std::string> args;
    args.reserve(8 + 8 * write.rows.size());
    const std::int64_t ttl_s =
        std::max<std::int64_t>(1, write.hour + kHour + retention_s - now_s());
    args.insert(args.end(), {"EVAL", scripts::kHincrSeq, "2", hash_key(write.hour),
                             prefix + "usage:seq:" + replica + ":" + std::to_string(write.epoch),
                             std::to_string(write.seq), std::to_string(ttl_s * 1000),
                             std::to_string(retention_s * 1000)});
    for (const auto& [row_key, sums] : write.rows) {
      const auto& [hour, key, model, backend] = row_key;
      const std::pair<const char*, std::int64_t> measures[] = {{"requests", sums.requests},
                                                               {"prompt", sums.prompt},
                                                               {"cached", sums.cached},
                                                               {"completion", sums.completion}};
      for (const auto& [name, v] : measures) {
        if (v == 0) continue;
        args.push_back(RedisUsageLedger::field(key, model, backend, name));
        args.push_back(std::to_string(v));
      }
    }
    redis->fire(std::move(args), [self = shared_from_this(), write = std::move(write),
                                  last_of_round](const RedisReply& reply) mutable {
      self->on_reply(std::move(write), reply, last_of_round);
    });
  }

  // A write of new rows: the next sequence (a new epoch after a failure).
  void send_fresh(Write write, bool last_of_round) {
    std::lock_guard lock(send_mu);
    if (bump.exchange(false)) {
      ++epoch;
      seq = 0;
    }
    write.epoch = epoch;
    write.seq = ++seq;
    send(std::move(write), last_of_round);  // fire() only queues: cheap under the lock
  }

  void on_reply(Write write, const RedisReply& reply, bool last_of_round) {
    bool applied = false, gap = false;
    if (reply.kind == RedisReply::Kind::integer && reply.integer != 0) {
      applied = true;  // 1: applied now; 2: applied before (a resend)
      ++written;
      --inflight;
    } else if (reply.kind == RedisReply::Kind::integer || reply.kind == RedisReply::Kind::error) {
      // Definitely not applied (a gap, or refused): new rows, new sequence. A gap means Redis
      // has lost this sender's sequence (it came back empty): the new epoch's writes go through.
      gap = reply.kind == RedisReply::Kind::integer;
      bump = true;
      std::lock_guard lock(pending_mu);
      to_pending_locked(std::move(write.rows));
      --inflight;
    } else {
      // No reply (down, refused, or the connection lost with it): maybe applied; the resend
      // under the same sequence decides.
      bump = true;
      std::lock_guard lock(pending_mu);
      unsure.push_back(std::move(write));
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
      std::size_t taken = 0;
      while (!pending.empty() && taken++ < kFlushRows) {
        auto node = pending.extract(pending.begin());
        Write& write = by_hour[std::get<0>(node.key())];
        write.hour = std::get<0>(node.key());
        write.rows.emplace_back(std::move(node.key()), node.mapped());
      }
      for (auto& [hour, write] : by_hour) fresh.push_back(std::move(write));
      count_waiting();
      inflight += static_cast<std::int64_t>(resend.size() + fresh.size());
    }
    std::sort(resend.begin(), resend.end(), [](const Write& left, const Write& right) {
      return std::tie(left.epoch, left.seq) < std::tie(right.epoch, right.seq);
    });
    const std::size_t total = resend.size() + fresh.size();
    if (total == 0) {
      flushing = false;
      return;
    }
    std::size_t sent = 0;
    resent += resend.size();
    for (auto& write : resend) send(std::move(write), ++sent == total);
    for (auto& write : fresh) send_fresh(std::move(write), ++sent == total);
  }
};

RedisUsageLedger::RedisUsageLedger(std::shared_ptr<RedisClient> redis, RedisUsageOptions opts)
    : redis_(std::move(redis)),
      opts_(std::move(opts)),
      local_(opts_.retention, opts_.local_rows),
      core_(std::make_shared<Core>()) {
  if (!opts_.now_s) opts_.now_s = system_s;
  Core& core = *core_;
  core.redis = redis_.get();
  core.prefix = opts_.prefix;
  std::random_device device;
  core.replica = fmt::format("{:08x}{:08x}", device(), device());
  core.retention_s = std::max<std::int64_t>(1, opts_.retention.count()) * kHour;
  core.max_pending = std::max<std::size_t>(1, opts_.max_pending);
  core.now_s = opts_.now_s;
  // Written back each time the connection comes up (on the Redis thread).
  listener_ = redis_->on_up([shared_core = core_] { shared_core->flush(); });
}

RedisUsageLedger::~RedisUsageLedger() {
  redis_->remove_on_up(listener_);
}

std::string RedisUsageLedger::hash_key(std::int64_t hour_s) const {
  return core_->hash_key(hour_s);
}

std::string RedisUsageLedger::field(std::string_view key, std::string_view model,
                                    std::string_view backend, std::string_view measure) {
  std::string encoded;
  encoded.reserve(key.size() + model.size() + backend.size() + measure.size() + 3);
  escape(encoded, key);
  encoded += kSep;
  escape(encoded, model);
  encoded += kSep;
  escape(encoded, backend);
  encoded += kSep;
  encoded += measure;
  return encoded;
}

void RedisUsageLedger::add(std::string_view key, std::string_view model, std::string_view backend,
                           std::int64_t unix_s, const auth::TokenUsage& usage) {
  local_.add(key, model, backend, unix_s, usage);
  Write write;
  write.hour = hour_of(unix_s);
  write.rows.emplace_back(
      RowKey(write.hour, std::string(key), std::string(model), std::string(backend)),
      Sums{1, usage.prompt, usage.cached, usage.completion});
  if (!redis_->up()) {
    core_->to_pending(std::move(write.rows));
    if (!redis_->up()) return;  // else it came up meanwhile: its write-back may have run already
  } else {
    ++core_->inflight;
    core_->send_fresh(std::move(write), false);
  }
  if (core_->waiting > 0) core_->flush();
}

std::vector<auth::UsageRow> RedisUsageLedger::query(const auth::UsageQuery& filter) const {
  return local_.query(filter);
}

boost::asio::awaitable<std::optional<std::vector<auth::UsageRow>>> RedisUsageLedger::query_shared(
    const auth::UsageQuery& filter) {
  if (!redis_->up()) co_return std::nullopt;
  const Core& core = *core_;
  const std::int64_t newest = hour_of(core.now_s());
  const std::int64_t first = std::max(
      filter.from == std::numeric_limits<std::int64_t>::min() ? filter.from : hour_of(filter.from),
      newest - core.retention_s + kHour);
  // An hour or so ahead too: a replica whose clock runs a little fast writes there.
  const std::int64_t end = std::min(filter.to, newest + 2 * kHour);
  std::vector<std::string> args{"EVAL", scripts::kHgetallMany, "0"};
  std::vector<std::int64_t> hours;
  for (std::int64_t h = first; h < end; h += kHour) {
    hours.push_back(h);
    args.push_back(core.hash_key(h));
  }
  args[2] = std::to_string(hours.size());
  Rows rows;
  if (!hours.empty()) {
    RedisReply reply = co_await redis_->command(std::move(args), opts_.query_timeout);
    if (reply.kind != RedisReply::Kind::array || reply.elements.size() != hours.size())
      co_return std::nullopt;
    for (std::size_t i = 0; i < hours.size(); ++i) {
      const auto& fields = reply.elements[i].elements;
      for (std::size_t j = 0; j + 1 < fields.size(); j += 2) {
        const std::string_view field_name = fields[j].str;
        const auto amount = to_int(fields[j + 1].str);
        const auto key_end = field_name.find(kSep), model_end = field_name.find(kSep, key_end + 1),
                   backend_end = field_name.find(kSep, model_end + 1);
        if (!amount || key_end == field_name.npos || model_end == field_name.npos ||
            backend_end == field_name.npos)
          continue;  // not a field of ours
        std::string key = unescape(field_name.substr(0, key_end));
        if (!filter.key.empty() && key != filter.key) continue;
        Sums& sums =
            rows[RowKey(hours[i], std::move(key),
                        unescape(field_name.substr(key_end + 1, model_end - key_end - 1)),
                        unescape(field_name.substr(model_end + 1, backend_end - model_end - 1)))];
        const std::string_view measure = field_name.substr(backend_end + 1);
        if (measure == "requests")
          sums.requests += *amount;
        else if (measure == "prompt")
          sums.prompt += *amount;
        else if (measure == "cached")
          sums.cached += *amount;
        else if (measure == "completion")
          sums.completion += *amount;
      }
    }
    // Pending rows are not in Redis (a row leaves pending only to be sent, and comes back only
    // when Redis did not apply it): read after Redis answered, they are not counted twice.
    std::lock_guard lock(core.pending_mu);
    for (const auto& [row_key, sums] : core.pending) {
      const auto& [hour, key, model, backend] = row_key;
      if (hour < first || hour >= end || (!filter.key.empty() && key != filter.key)) continue;
      Sums& merged = rows[row_key];
      merged.requests += sums.requests;
      merged.prompt += sums.prompt;
      merged.cached += sums.cached;
      merged.completion += sums.completion;
    }
  }
  std::vector<auth::UsageRow> out;
  out.reserve(rows.size());
  for (const auto& [row_key, sums] : rows) {
    const auto& [hour, key, model, backend] = row_key;
    out.push_back(
        {hour, key, model, backend, sums.requests, sums.prompt, sums.cached, sums.completion});
  }
  co_return out;
}

RedisUsageLedger::Stats RedisUsageLedger::stats() const {
  const Core& core = *core_;
  Stats snapshot;
  {
    std::lock_guard lock(core.pending_mu);
    snapshot.pending_rows = core.pending.size();
    snapshot.unsure_writes = core.unsure.size();
    snapshot.inflight = core.inflight.load();  // with the rows (Core::inflight)
  }
  snapshot.dropped_rows = core.dropped.load();
  snapshot.written = core.written.load();
  snapshot.resent = core.resent.load();
  return snapshot;
}

}  // namespace llmux::state
