// SPDX-License-Identifier: Apache-2.0
// The `kv_transfer_params` of vLLM's OpenAI API as NixlConnector reads and writes them, pure:
// what a request asks for, and what a producer answers.
//
// vLLM (read, not copied): the request field `kv_transfer_params: dict | None` of
// CompletionRequest, ChatCompletionRequest and (recent versions) ResponsesRequest; the response
// field of CompletionResponse and ChatCompletionResponse (ResponsesResponse and the stream
// chunks have none). The reference proxy, tests/v1/kv_connector/nixl_integration/
// toy_proxy_server.py at 030ea52e, sends the prefill leg {do_remote_decode: true,
// do_remote_prefill: false, remote_engine_id/block_ids/host/port: null} and the decode leg what
// the prefill answered. The producer's answer, nixl/scheduler.py request_finished at 053da34b:
// {do_remote_prefill: true, do_remote_decode: false, remote_block_ids, remote_engine_id,
// remote_request_id, remote_host, remote_port, tp_size}, only for a request that finished by
// length (FINISHED_LENGTH_CAPPED); the consumer uses the handle only when remote_block_ids is
// non-empty and remote_engine_id, remote_request_id, remote_host and remote_port are present.
#pragma once
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/api.hpp"

namespace llmux::sim {

/// Where a consumer reads a producer's KV: the handle a producer answered with.
struct RemoteHandle {
  std::string request_id;        // remote_request_id
  std::string engine_id;         // remote_engine_id
  std::string host;              // remote_host
  int port = 0;                  // remote_port
  boost::json::value block_ids;  // remote_block_ids, opaque to the consumer
};

/// What a request's kv_transfer_params ask of this instance.
struct KvRequest {
  bool remote_decode = false;   // do_remote_decode: prefill here, hold the KV for a consumer
  bool remote_prefill = false;  // do_remote_prefill: the KV is elsewhere, load it
  /// With remote_prefill: the handle when its fields are complete (vLLM: otherwise "Got
  /// invalid KVTransferParams ... will not utilize KVTransfer", a local prefill).
  std::optional<RemoteHandle> handle;
};

/// The body's kv_transfer_params: nullopt when absent or null; a 400 when not an object.
std::variant<std::optional<KvRequest>, ApiError> read_kv_request(std::string_view body);

/// A producer's answer for its finished request (vLLM's request_finished), as JSON text.
struct ProducerHandle {
  std::string request_id;
  std::string engine_id;
  std::string host;
  int port = 0;
  std::vector<std::int64_t> block_ids;
  int tp_size = 1;
};
std::string producer_params_json(const ProducerHandle& handle);

/// Whether a producer hands over a request that finished with `finish_reason`: only one cut by
/// max_tokens (vLLM's FINISHED_LENGTH_CAPPED); one that stopped on end-of-sequence returns no
/// kv_transfer_params and frees its blocks at once.
inline bool hands_over(std::string_view finish_reason) {
  return finish_reason == "length";
}

/// The sim's stand-in for NIXL's READ of a producer's blocks: the body a consumer posts to the
/// producer's `POST /nixl/read`, and the handle read back from it.
std::string read_request_json(const RemoteHandle& handle);
std::optional<RemoteHandle> parse_read_request(std::string_view body);

}  // namespace llmux::sim
