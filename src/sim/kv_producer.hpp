// SPDX-License-Identifier: Apache-2.0
#pragma once
// A producer's side of prefill/decode disaggregation (--kv-role producer or both): a request
// with `do_remote_decode` that finished by length keeps its KV blocks and answers with a handle
// (sim/kv_params); a consumer reads the handle with `POST /nixl/read`, which frees the blocks;
// nobody reading it, they are freed after --kv-abort-timeout (VLLM_NIXL_ABORT_REQUEST_TIMEOUT).
//
// `/nixl/read` is the sim's stand-in for NIXL: vLLM's consumer reads the blocks by RDMA after a
// ZMQ handshake on the producer's side channel (remote_host:remote_port), then notifies the
// producer, which frees them. The sim's side channel is its own HTTP port, so an unknown or
// expired handle is a real answer the consumer gets (404).
// Thread safety: the server's one thread.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "sim/config.hpp"
#include "sim/driver.hpp"
#include "sim/http_io.hpp"
#include "sim/kv_handles.hpp"
#include "sim/metrics.hpp"
#include "sim/timings.hpp"

namespace llmux::sim {

inline constexpr std::string_view kNixlReadPath = "/nixl/read";

class KvProducer {
 public:
  /// Registers itself with the driver for held requests; all must outlive it.
  KvProducer(const SimConfig& cfg, boost::asio::io_context& ioc, EngineDriver& driver,
             SimMetrics& metrics);
  /// The address put in handles (remote_host, remote_port): where consumers reach this server.
  void set_address(std::string host, int port);
  /// POST /nixl/read: a consumer reads a handle (404 when unknown or expired).
  boost::asio::awaitable<void> handle_read(Conn& connection, Request& req);
  std::size_t held() const { return handles_.size(); }

 private:
  void hold(Job& job, std::span<const std::int64_t> blocks);
  void arm();
  void expire();

  const SimConfig& cfg_;
  EngineDriver& driver_;
  SimMetrics& metrics_;
  boost::asio::steady_timer timer_;
  bool armed_ = false;
  std::string host_;
  int port_ = 0;
  KvHandles handles_;
  std::unordered_map<std::string, std::shared_ptr<Timing>> timings_;  // of held handles
};

}  // namespace llmux::sim
