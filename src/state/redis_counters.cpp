// SPDX-License-Identifier: Apache-2.0
// RedisCounters: windowed counters and hash counters shared by replicas (quotas, usage).
#include <string>
#include <vector>

#include "state/redis_response_store.hpp"
#include "state/redis_scripts.hpp"

namespace llmux::state {

namespace {

std::string ms(std::chrono::milliseconds duration) {
  return std::to_string(std::max<std::int64_t>(1, duration.count()));
}

}  // namespace

RedisCounters::RedisCounters(std::shared_ptr<RedisClient> redis, std::string prefix,
                             std::chrono::milliseconds timeout)
    : redis_(std::move(redis)), prefix_(std::move(prefix)), timeout_(timeout) {}

boost::asio::awaitable<std::optional<std::int64_t>> RedisCounters::incr_window(
    std::string_view key, std::int64_t amount, std::chrono::milliseconds window) {
  if (!redis_->up()) co_return std::nullopt;
  std::vector<std::string> args{
      "EVAL",    scripts::kIncrWindow, "1", prefix_ + std::string(key), std::to_string(amount),
      ms(window)};
  RedisReply reply = co_await redis_->command(std::move(args), timeout_);
  if (reply.kind != RedisReply::Kind::integer) co_return std::nullopt;
  co_return reply.integer;
}

bool RedisCounters::fire_hincrby(std::string_view hash_key, std::string_view field,
                                 std::int64_t amount, std::chrono::milliseconds ttl) {
  if (!redis_->up()) return false;
  redis_->fire({"EVAL", scripts::kHincrTtl, "1", prefix_ + std::string(hash_key),
                std::string(field), std::to_string(amount), ms(ttl)});
  return true;
}

}  // namespace llmux::state
