// SPDX-License-Identifier: Apache-2.0
#include "sim/kv_producer.hpp"

#include <boost/json.hpp>

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/use_tuple.hpp"
#include "sim/job.hpp"
#include "sim/kv_params.hpp"

namespace llmux::sim {

namespace net = boost::asio;
namespace json = boost::json;

KvProducer::KvProducer(const SimConfig& cfg, net::io_context& ioc, EngineDriver& driver,
                       SimMetrics& metrics)
    : cfg_(cfg),
      driver_(driver),
      metrics_(metrics),
      timer_(ioc),
      host_(cfg.kv.host.empty() ? cfg.host : cfg.kv.host),
      port_(cfg.port) {
  driver_.on_hold([this](Job& job, std::span<const std::int64_t> blocks) { hold(job, blocks); });
}

void KvProducer::set_address(std::string host, int port) {
  host_ = std::move(host);
  port_ = port;
}

void KvProducer::hold(Job& job, std::span<const std::int64_t> blocks) {
  ProducerHandle handle;
  handle.request_id = job.meta.id;
  handle.engine_id = cfg_.kv.engine_id;
  handle.host = host_;
  handle.port = port_;
  handle.block_ids.assign(blocks.begin(), blocks.end());
  // Completions and chat bodies carry it; Responses, Messages and streams have no such field
  // in vLLM, so there the blocks stay held until the timeout, as in vLLM.
  job.meta.kv_transfer_params = producer_params_json(handle);
  HeldKv held;
  held.request_id = handle.request_id;
  held.seq = job.seq;
  held.block_ids = std::move(handle.block_ids);
  held.tokens = job.usage.prompt_tokens;
  held.expires_at = driver_.model_now() + cfg_.kv.abort_timeout_s;
  job.timing->kv_transfer = "held";
  timings_[held.request_id] = job.timing;
  handles_.add(std::move(held));
  arm();
}

void KvProducer::arm() {
  const auto next = handles_.next_expiry();
  if (!next) return;
  timer_.expires_at(
      net::steady_timer::time_point(std::chrono::nanoseconds(driver_.wall_time_ns(*next))));
  armed_ = true;
  timer_.async_wait([this](boost::system::error_code error) {
    armed_ = false;
    if (error == net::error::operation_aborted) return;
    expire();
    arm();
  });
}

void KvProducer::expire() {
  for (HeldKv& held : handles_.take_expired(driver_.model_now())) {
    spdlog::info("KV of request {} not read within {} s: blocks freed", held.request_id,
                 cfg_.kv.abort_timeout_s);
    driver_.release_held(held.seq);
    metrics_.kv_expired();
    if (auto it = timings_.find(held.request_id); it != timings_.end()) {
      it->second->kv_transfer = "expired";
      timings_.erase(it);
    }
  }
}

net::awaitable<void> KvProducer::handle_read(Conn& connection, Request& req) {
  expire();  // a handle whose time is up is gone, even if the timer has not fired yet
  const auto handle = parse_read_request(req.body());
  std::vector<std::int64_t> blocks;
  bool blocks_ok = handle.has_value();
  if (handle) {
    // One list per KV cache group, or a flat list: the ids in order.
    for (const json::value& group : handle->block_ids.as_array()) {
      const json::array* ids = group.if_array();
      if (!ids) {
        blocks_ok = blocks_ok && group.is_int64();
        if (group.is_int64()) blocks.push_back(group.get_int64());
        continue;
      }
      for (const json::value& id : *ids) {
        blocks_ok = blocks_ok && id.is_int64();
        if (id.is_int64()) blocks.push_back(id.get_int64());
      }
    }
  }
  std::optional<HeldKv> held;
  if (blocks_ok && produces(cfg_.kv.role) && handle->engine_id == cfg_.kv.engine_id)
    held = handles_.take(handle->request_id, blocks);
  if (!held) {
    // (Formatted outside the co_await: g++ 12 destroys a ?: temporary there twice.)
    std::string message = "Unknown or expired KV transfer handle";
    if (handle)
      message += fmt::format(" '{}' of engine '{}'", handle->request_id, handle->engine_id);
    message += '.';
    co_return co_await write_error(connection, 404, message, true, &req, "NotFoundError");
  }
  driver_.release_held(held->seq);  // the consumer's read is done: the producer frees them
  if (auto it = timings_.find(held->request_id); it != timings_.end()) {
    it->second->kv_transfer = "read";
    timings_.erase(it);
  }
  json::object answer;  // (built outside the co_await: g++ 12 fails on initializer lists there)
  answer["remote_request_id"] = held->request_id;
  answer["tokens"] = held->tokens;
  answer["blocks"] = held->block_ids.size();
  co_await write_json(connection, 200, json::serialize(answer), &req);
}

}  // namespace llmux::sim
