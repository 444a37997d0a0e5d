// RedisCounters: windowed counters and hash counters shared by replicas (quotas, usage).
#include <string>
#include <vector>

#include "state/redis_response_store.hpp"

namespace llmux::state {

namespace {

// INCRBY, and the expiry set when the key has none (the first increment of a window, or a key
// that lost it), in one step.
constexpr const char* kIncrWindow =
    "local v = redis.call('INCRBY', KEYS[1], ARGV[1])\n"
    "if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
    "return v\n";
constexpr const char* kHincrTtl =
    "local v = redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])\n"
    "if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end\n"
    "return v\n";

std::string ms(std::chrono::milliseconds d) {
  return std::to_string(std::max<std::int64_t>(1, d.count()));
}

}  // namespace

RedisCounters::RedisCounters(std::shared_ptr<RedisClient> redis, std::string prefix,
                             std::chrono::milliseconds timeout)
    : redis_(std::move(redis)), prefix_(std::move(prefix)), timeout_(timeout) {}

boost::asio::awaitable<std::optional<std::int64_t>> RedisCounters::incr_window(
    std::string_view key, std::int64_t amount, std::chrono::milliseconds window) {
  if (!redis_->up()) co_return std::nullopt;
  std::vector<std::string> args{
      "EVAL", kIncrWindow, "1", prefix_ + std::string(key), std::to_string(amount), ms(window)};
  RedisReply r = co_await redis_->command(std::move(args), timeout_);
  if (r.kind != RedisReply::Kind::integer) co_return std::nullopt;
  co_return r.integer;
}

bool RedisCounters::fire_hincrby(std::string_view hash_key, std::string_view field,
                                 std::int64_t amount, std::chrono::milliseconds ttl) {
  if (!redis_->up()) return false;
  redis_->fire({"EVAL", kHincrTtl, "1", prefix_ + std::string(hash_key), std::string(field),
                std::to_string(amount), ms(ttl)});
  return true;
}

}  // namespace llmux::state
