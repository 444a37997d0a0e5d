// SPDX-License-Identifier: Apache-2.0
#pragma once
// A consumer's side of prefill/decode disaggregation (--kv-role consumer or both): reading a
// producer's handle before the request is queued. The read is a real HTTP call to the producer
// named in the handle (`POST /nixl/read` on remote_host:remote_port, sim/kv_producer.hpp), so
// the producer frees the blocks, and an unknown or expired handle, or a producer that is gone,
// is a failed load; the request then follows --kv-load-failure-policy.
//
// Unlike vLLM, whose read starts when the scheduler admits the request (its blocks allocated),
// the sim reads when the request arrives: with a queue on the consumer the producer's blocks
// are freed earlier than vLLM frees them. The transfer's time is paid at admission either way
// (sim/engine_kv_transfer.cpp).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "sim/api.hpp"
#include "sim/http_io.hpp"
#include "sim/kv_params.hpp"

namespace llmux::sim {

struct KvReadResult {
  bool ok = false;
  std::int64_t tokens = 0;  // prompt tokens whose KV the producer held
  std::string error;        // why the read failed
};

/// Reads `handle` from its producer; never throws.
boost::asio::awaitable<KvReadResult> read_remote_kv(boost::asio::any_io_executor executor,
                                                    const RemoteHandle& handle,
                                                    std::chrono::milliseconds timeout);

/// vLLM's answer to a request whose KV load failed under kv_load_failure_policy `fail`: the
/// request finishes with finish_reason "error", which the serving layer raises as
/// GenerationError("Internal server error"), 500, type InternalServerError
/// (vllm/entrypoints/openai/engine/serving.py at 00bd1493, _raise_if_error). A completions or
/// chat stream has begun by then: a 200 stream of that error's frame, then `data: [DONE]`;
/// everything else is the 500 body (Anthropic's shape on /v1/messages).
boost::asio::awaitable<void> write_kv_load_failure(Conn& connection, const Request& req,
                                                   const GenRequest& request);

}  // namespace llmux::sim
