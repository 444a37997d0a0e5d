// SPDX-License-Identifier: Apache-2.0
#pragma once
// Prefill/decode disaggregation as vLLM's NixlConnector does it, the parts that are pure numbers:
// the instance's role, what a failed KV load does, and how long a KV transfer takes.
//
// vLLM's sources (read, not copied): vllm/distributed/kv_transfer/kv_connector/v1/nixl/
// scheduler.py at 053da34be7ea27d508324a9a286be9907e27b8a6 (request_finished: the producer's
// kv_transfer_params; get_num_new_matched_tokens: the consumer loads the prompt less its local
// prefix hits, less the last token for a hybrid Mamba/GDN model), vllm/config/kv_transfer.py
// (kv_role kv_producer | kv_consumer | kv_both; kv_load_failure_policy recompute | fail, default
// fail), vllm/envs.py (VLLM_NIXL_ABORT_REQUEST_TIMEOUT, 480 s). docs/sim.md has the details.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmux::sim {

/// `--kv-role`: vLLM's kv_role of a NixlConnector instance. `none` is no KV connector at all
/// (vLLM without --kv-transfer-config): kv_transfer_params are ignored, as vLLM ignores them then.
enum class KvRole { none, producer, consumer, both };
std::optional<KvRole> parse_kv_role(std::string_view name);
std::string_view to_string(KvRole role);
/// A producer answers `do_remote_decode` requests with a handle; a consumer loads a handle's KV.
inline bool produces(KvRole role) {
  return role == KvRole::producer || role == KvRole::both;
}
inline bool consumes(KvRole role) {
  return role == KvRole::consumer || role == KvRole::both;
}

/// vLLM's kv_load_failure_policy: `recompute` prefills the request locally, `fail` finishes it
/// with finish_reason "error" (the API answers 500 "Internal server error").
enum class LoadFailurePolicy { recompute, fail };
std::optional<LoadFailurePolicy> parse_load_failure_policy(std::string_view name);
std::string_view to_string(LoadFailurePolicy policy);

/// The link between the two machines and what crosses it. Transfer time of `tokens` prompt
/// tokens: (bytes_per_token × tokens + state_bytes) × 8 / (gbps × 10^9 × efficiency).
struct KvLink {
  double gbps = 200.0;      // --kv-link-gbps: a DGX Spark's ConnectX-7 port
  double efficiency = 0.8;  // --kv-link-efficiency: share of the line rate a transfer achieves
  double bytes_per_token = 10240.0;  // full-attention KV per token (see docs/sim.md)
  double state_bytes = 64389120.0;   // the request's fixed recurrent (GDN) state
  /// --kv-transfer-overlap: NIXL reads are asynchronous, so the consumer's running sequences
  /// keep decoding while a request's KV arrives (true, vLLM's behaviour); false charges the
  /// transfer to the engine step that admits the request, stalling every stream (a blocking
  /// load), for the benchmark's sensitivity table.
  bool overlap = true;

  /// Seconds to transfer the KV of `tokens` prompt tokens (0 when nothing crosses the link).
  double seconds(std::int64_t tokens) const;
  double bytes(std::int64_t tokens) const;
};

/// Everything `llmux sim` is told about KV transfer.
struct KvTransferConfig {
  KvRole role = KvRole::none;
  KvLink link;
  LoadFailurePolicy load_failure_policy = LoadFailurePolicy::fail;  // vLLM's default
  /// VLLM_NIXL_ABORT_REQUEST_TIMEOUT: a producer frees blocks nobody fetched after this many
  /// seconds (model time, like every engine time).
  double abort_timeout_s = 480.0;
  /// vLLM's kv_transfer_config.engine_id (a random UUID when not given).
  std::string engine_id;
  /// --kv-host: the address a producer puts in its handles (remote_host; vLLM's
  /// VLLM_NIXL_SIDE_CHANNEL_HOST); empty: --host. The port is the server's own.
  std::string host;
};

}  // namespace llmux::sim
