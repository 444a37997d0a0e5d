// SPDX-License-Identifier: Apache-2.0
// RedisResponseStore: a local cache in front of `<prefix>resp:<id>` keys (see the header).
#include "state/redis_response_store.hpp"

#include <utility>
#include <vector>

namespace llmux::state {

namespace {
constexpr std::size_t kFlushBatch = 1000;  // pending writes sent per round when Redis returns
}  // namespace

void RedisResponseStore::Pending::push(Write write) {
  std::lock_guard lock(mu);
  writes.push_back(std::move(write));
  while (writes.size() > max) {
    writes.pop_front();
    ++dropped;
  }
}

RedisResponseStore::RedisResponseStore(std::shared_ptr<RedisClient> redis,
                                       RedisResponseStoreOptions opts)
    : redis_(std::move(redis)),
      opts_(std::move(opts)),
      cache_(opts_.cache_entries, opts_.ttl),
      pending_(std::make_shared<Pending>()) {
  pending_->max = std::max<std::size_t>(1, opts_.max_pending);
  // Written back each time the connection comes up (on the Redis thread).
  RedisClient* client = redis_.get();
  listener_ = redis_->on_up([client, pending_list = pending_, prefix = opts_.prefix,
                             ttl = opts_.ttl] { flush(client, pending_list, prefix, ttl); });
}

RedisResponseStore::~RedisResponseStore() {
  redis_->remove_on_up(listener_);
}

std::string RedisResponseStore::key(std::string_view id) const {
  std::string full_key;
  full_key.reserve(opts_.prefix.size() + 5 + id.size());
  full_key.append(opts_.prefix).append("resp:").append(id);
  return full_key;
}

// The callbacks run on the Redis thread, while the client lives (it joins that thread before it
// goes), so they hold it by a plain pointer: a shared one there could end its life on its own
// thread. The pending list is shared: it may outlive the store.
void RedisResponseStore::send(RedisClient* redis, const std::shared_ptr<Pending>& pending_list,
                              const std::string& key, Write write, std::chrono::milliseconds ttl,
                              bool last_of_flush, const std::string& prefix) {
  std::vector<std::string> args;
  if (write.backend)
    args = {"SET", key, *write.backend, "PX",
            std::to_string(std::max<std::int64_t>(1, ttl.count()))};
  else
    args = {"DEL", key};
  redis->fire(std::move(args), [redis, pending_list, write = std::move(write), ttl, last_of_flush,
                                prefix](const RedisReply& reply) mutable {
    if (reply.failed()) {
      pending_list->push(std::move(write));  // not taken: again when the connection returns
      return;
    }
    if (last_of_flush) flush(redis, pending_list, prefix, ttl);  // the next batch
  });
}

void RedisResponseStore::flush(RedisClient* redis, const std::shared_ptr<Pending>& pending_list,
                               const std::string& prefix, std::chrono::milliseconds ttl) {
  std::vector<Write> batch;
  {
    std::lock_guard lock(pending_list->mu);
    while (!pending_list->writes.empty() && batch.size() < kFlushBatch) {
      batch.push_back(std::move(pending_list->writes.front()));
      pending_list->writes.pop_front();
    }
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    std::string key = prefix + "resp:" + batch[i].id;
    send(redis, pending_list, key, std::move(batch[i]), ttl, i + 1 == batch.size(), prefix);
  }
}

boost::asio::awaitable<std::optional<std::string>> RedisResponseStore::owner(std::string_view id) {
  if (auto hit = cache_.find(id)) co_return hit;
  if (!redis_->up()) co_return std::nullopt;  // down: no wait at all
  std::string id_copy(id);
  std::vector<std::string> args{"GET", key(id_copy)};  // named: GCC 12 and init-lists in co_await
  RedisReply reply = co_await redis_->command(std::move(args), opts_.lookup_timeout);
  if (reply.kind != RedisReply::Kind::string) co_return std::nullopt;  // nil, slow, down, error
  cache_.put(id_copy, reply.str);
  co_return std::move(reply.str);
}

void RedisResponseStore::record_owner(std::string_view id, std::string_view backend) {
  cache_.put(id, backend);
  // Through the Redis thread even when down: a write it fails joins the pending list before the
  // connection's return flushes it, never after.
  send(redis_.get(), pending_, key(id), Write{std::string(id), std::string(backend)}, opts_.ttl,
       false, opts_.prefix);
}

void RedisResponseStore::forget(std::string_view id) {
  cache_.forget(id);
  send(redis_.get(), pending_, key(id), Write{std::string(id), std::nullopt}, opts_.ttl, false,
       opts_.prefix);
}

std::size_t RedisResponseStore::size() const {
  return cache_.size();
}

std::size_t RedisResponseStore::pending() const {
  std::lock_guard lock(pending_->mu);
  return pending_->writes.size();
}

std::uint64_t RedisResponseStore::pending_dropped() const {
  std::lock_guard lock(pending_->mu);
  return pending_->dropped;
}

}  // namespace llmux::state
