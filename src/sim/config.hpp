// SPDX-License-Identifier: Apache-2.0
#pragma once
// Everything `llmux sim` can be told, with the DGX Spark preset's derivation of KV capacity.
// Plain values: built by the CLI, then read-only (the server copies it).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/kv_transfer.hpp"
#include "sim/textgen.hpp"

namespace llmux::sim {

struct Script;  // sim/script.hpp

/// Faults injected by flag (every request) or per request by the `X-Llmux-Fault` header.
struct FaultConfig {
  double error_rate = 0.0;               // fraction of requests answered with an error status
  std::vector<int> error_statuses{500};  // picked uniformly when a request errors
  std::int64_t close_after = -1;         // close the connection after N output tokens (-1: off)
  double close_rate = 1.0;               // fraction of requests the close fault applies to
  std::int64_t stall_after = -1;         // stop sending after N output tokens, keep socket open
  double stall_rate = 1.0;
  double added_latency_ms = 0.0;  // added before the request reaches the engine
  double not_ready_for_s = 0.0;   // /health answers 503 this long after start (wall seconds)
};

/// Memory budget of one machine; the KV capacity follows from it.
struct MemoryBudget {
  double total_gb = 128.0;                  // unified memory of a DGX Spark (GB10)
  double gpu_memory_utilization = 0.70;     // the seed's conservative value
  double weights_gb = 35.0;                 // Qwen3.6-35B-A3B in FP8: ~1 byte per parameter
  double overhead_gb = 4.0;                 // activations, CUDA graphs, runtime
  std::int64_t kv_bytes_per_token = 98304;  // 48 layers x 4 KV heads x 128 dim x (K,V) x 2 bytes

  double kv_gb() const;
  /// KV blocks of `block_size` tokens that fit in the budget (at least 1).
  std::int64_t kv_blocks(int block_size) const;
};

struct SimConfig {
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string preset = "dgx-spark-qwen3.6-35b-a3b-fp8";
  std::string served_model_name = "Qwen3.6-35B-A3B";
  std::string model_root = "Qwen/Qwen3.6-35B-A3B-FP8";
  std::int64_t max_model_len = 262144;
  EngineParams engine;
  MemoryBudget memory;
  std::int64_t kv_blocks_override = -1;  // --num-kv-blocks (skips the memory derivation)
  OutputLenDist output_len;
  double time_scale = 1.0;  // model clock runs this many times faster than wall
  /// --api-server-time: the API server's own time before a request reaches the engine (model
  /// seconds): part of every time to first token that the engine's steps do not hold
  double api_server_seconds = 0.0;
  FaultConfig faults;
  std::size_t response_store_max = 100000;  // oldest evicted first
  std::size_t debug_timings_max = 20000;    // per-request timing records kept
  /// --max-body-bytes: largest request body accepted (413 above); 0 = no limit, as vLLM has none
  std::int64_t max_body_bytes = 0;
  /// --keep-alive-timeout: an idle keep-alive connection is closed this long after its last
  /// response (uvicorn's --timeout-keep-alive, 5 s, which vLLM's server runs with); 0 = never
  double keep_alive_timeout_s = 5.0;
  bool zero_cost = false;                  // --zero-cost: every model cost is 0
  bool no_prefix_caching = false;          // --no-enable-prefix-caching
  std::string scheduling_policy = "fcfs";  // --scheduling-policy: fcfs or priority
  /// --enable-prompt-tokens-details: usage.prompt_tokens_details.cached_tokens on completions and
  /// chat (vLLM leaves it null without the flag)
  bool enable_prompt_tokens_details = false;
  bool print_ready_json = true;
  std::string admin_token;  // --admin-token: /admin/faults needs `Authorization: Bearer <it>`
  /// --script FILE: what the simulator says (sim/script.hpp), read at start; null: generated text
  std::shared_ptr<const Script> script;
  /// --tool-call-share X: that share of chat/Responses requests with function tools get a call
  double tool_call_share = 0.0;
  /// --kv-role and the other --kv-* flags: prefill/decode disaggregation (sim/kv_transfer.hpp)
  KvTransferConfig kv;

  /// Applies a preset's values (model, calibration, memory); throws on an unknown name.
  void apply_preset(const std::string& name);
  /// Derives the engine's KV blocks from the memory budget (or the override), hands the KV link
  /// to the engine and draws an engine id when none was given.
  void finalize();
};

/// Names of the known presets.
std::vector<std::string> preset_names();

}  // namespace llmux::sim
