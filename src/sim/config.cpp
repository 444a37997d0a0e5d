// SPDX-License-Identifier: Apache-2.0
#include "sim/config.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/ids.hpp"

namespace llmux::sim {

double MemoryBudget::kv_gb() const {
  return total_gb * gpu_memory_utilization - weights_gb - overhead_gb;
}

std::int64_t MemoryBudget::kv_blocks(int block_size) const {
  const double bytes = kv_gb() * 1e9;
  if (bytes <= 0 || kv_bytes_per_token <= 0) return 1;
  const double per_block = static_cast<double>(kv_bytes_per_token) * block_size;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(bytes / per_block)));
}

std::vector<std::string> preset_names() {
  return {"dgx-spark-qwen3.6-35b-a3b-fp8", "dgx-spark-qwen3.6-35b-a3b-fp8-atlas", "none"};
}

void SimConfig::apply_preset(const std::string& name) {
  if (name == "dgx-spark-qwen3.6-35b-a3b-fp8") {
    // Calibrated against the seed's measurements (bench/sim_calibration.py): one stream
    // ~50 tok/s, 8 streams ~300 tok/s, compute-bound near 350 tok/s from ~12 streams.
    preset = name;
    served_model_name = "Qwen3.6-35B-A3B";
    model_root = "Qwen/Qwen3.6-35B-A3B-FP8";
    max_model_len = 262144;
    engine = EngineParams{};
    engine.t0 = 0.0198;
    engine.m = 0.00088;
    engine.c = 0.00285;
    engine.ctx_cost = 0.36e-6;  // reading 96 KiB of KV per context token at ~273 GB/s
    engine.prefill_rate = 8000.0;
    engine.prefill_overhead = 0.002;
    engine.max_num_seqs = 256;
    engine.max_num_batched_tokens = 8192;
    engine.block_size = 16;
    memory = MemoryBudget{};
    api_server_seconds = 0.0;  // not measured by the seed
  } else if (name == "dgx-spark-qwen3.6-35b-a3b-fp8-atlas") {
    // Fitted by bench/fit_preset.py to 0xBakeer/inference-atlas's vLLM sweeps of the same model
    // on one Spark (MTP-2, FP8 KV; docs/sim.md): ~54 / 111 / 174 / 249 / 294 tok/s at 1 / 4 /
    // 8 / 16 / 32 closed-loop streams (24 running), a first token after 273 ms at a 547-token
    // prompt and 2,101 ms at a 10k one (4,833 prompt tok/s).
    preset = name;
    served_model_name = "Qwen3.6-35B-A3B";
    model_root = "Qwen/Qwen3.6-35B-A3B-FP8";
    max_model_len = 262144;
    engine = EngineParams{};
    engine.t0 = 0.0173;
    engine.batch_exp = 0.427;  // the floor grows as B^0.427; no compute ceiling was measured
    engine.m = 0.0;
    engine.c = 0.0;
    engine.ctx_cost = 0.05e-6;  // the seed preset's 0.36 us scaled to ~13 KB of KV per token
    engine.prefill_rate = 5250.0;
    engine.prefill_overhead = 0.002;
    // What the first token takes beyond the engine's step at a short prompt (273 ms measured,
    // 124 ms of step): the API server's time, or the first tokens of the thinking block that
    // vLLM's reasoning parser keeps back (docs/sim.md); outside the engine either way.
    api_server_seconds = 0.149;
    engine.max_num_seqs = 24;  // as measured
    engine.max_num_batched_tokens = 32768;
    engine.block_size = 16;
    memory = MemoryBudget{};
    memory.gpu_memory_utilization = 0.80;
    memory.weights_gb = 37.5;           // 42 shards, 37.49 GB
    memory.kv_bytes_per_token = 12982;  // vLLM reported 4,690,997 KV tokens at 0.80
  } else if (name == "none") {
    preset = name;
  } else {
    throw std::invalid_argument(
        fmt::format("unknown preset '{}' (known: {})", name, fmt::join(preset_names(), ", ")));
  }
}

void SimConfig::finalize() {
  if (zero_cost) {
    api_server_seconds = 0.0;
    engine.t0 = engine.m = engine.c = engine.ctx_cost = engine.prefill_overhead = 0.0;
    engine.prefill_rate = 0.0;  // 0 means free
  }
  if (no_prefix_caching) engine.enable_prefix_caching = false;
  engine.priority_scheduling = scheduling_policy == "priority";
  engine.num_kv_blocks =
      kv_blocks_override > 0 ? kv_blocks_override : memory.kv_blocks(engine.block_size);
  engine.kv_link = kv.link;
  if (zero_cost) engine.kv_link.gbps = 0.0;  // 0 means free, as prefill_rate
  if (kv.engine_id.empty()) {                // a UUID's shape, as vLLM's str(uuid.uuid4())
    const std::string hex = random_id("", 32);
    kv.engine_id = fmt::format("{}-{}-4{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4),
                               hex.substr(13, 3), hex.substr(16, 4), hex.substr(20, 12));
  }
}

}  // namespace llmux::sim
