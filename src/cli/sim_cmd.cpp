// SPDX-License-Identifier: Apache-2.0
// `llmux sim`: flags → SimConfig → run_server. Every model parameter is a flag; a preset sets
// them all, and flags given explicitly win over the preset whatever their order.
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "sim/script.hpp"
#include "sim/server.hpp"

namespace llmux::cli {
namespace {

struct SimFlags {
  sim::SimConfig cfg;
  std::string output_len = "lognormal:512:0.6";
  std::string script;  // --script FILE
  std::vector<std::pair<CLI::Option*, std::function<void(sim::SimConfig&, sim::SimConfig&)>>>
      copies;

  template <typename Get>
  CLI::Option* add(CLI::App* app, const std::string& name, Get get, const std::string& desc) {
    auto* opt = app->add_option(name, get(cfg), desc)->capture_default_str();
    copies.emplace_back(opt,
                        [get](sim::SimConfig& dst, sim::SimConfig& src) { get(dst) = get(src); });
    return opt;
  }
  /// An enum option, given by name (`names`), its default shown as `shown`.
  template <typename Get, typename Enum>
  CLI::Option* choice(CLI::App* app, const std::string& name, Get get,
                      const std::map<std::string, Enum>& names, const std::string& shown,
                      const std::string& desc) {
    auto* opt = app->add_option<Enum, int>(name, get(cfg), desc)
                    ->transform(CLI::CheckedTransformer(names))
                    ->default_str(shown);
    copies.emplace_back(opt,
                        [get](sim::SimConfig& dst, sim::SimConfig& src) { get(dst) = get(src); });
    return opt;
  }
  template <typename Get>
  CLI::Option* flag(CLI::App* app, const std::string& name, Get get, const std::string& desc) {
    auto* opt = app->add_flag(name, get(cfg), desc);
    copies.emplace_back(opt,
                        [get](sim::SimConfig& dst, sim::SimConfig& src) { get(dst) = get(src); });
    return opt;
  }
};

}  // namespace

Runner add_sim(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "sim",
      "Run a vLLM stand-in: an OpenAI-compatible server whose speed follows a continuous-batching "
      "model of a real machine (default: a DGX Spark serving Qwen3.6-35B-A3B-FP8).");
  auto flags = std::make_shared<SimFlags>();
  flags->cfg.apply_preset(flags->cfg.preset);
  using C = sim::SimConfig;

  sub->add_option("--preset", flags->cfg.preset,
                  "Model/machine preset: dgx-spark-qwen3.6-35b-a3b-fp8 (the seed's machines), "
                  "dgx-spark-qwen3.6-35b-a3b-fp8-atlas (fitted to inference-atlas's published "
                  "sweeps) or none. Flags given explicitly override the preset.")
      ->capture_default_str()
      ->check(CLI::IsMember(sim::preset_names()));
  flags->add(
      sub, "--host", [](C & config) -> auto& { return config.host; }, "Address to listen on");
  flags->add(
      sub, "--port", [](C & config) -> auto& { return config.port; },
      "Port to listen on; 0 picks a free port (see the ready line on stdout)");
  flags->add(
      sub, "--served-model-name", [](C & config) -> auto& { return config.served_model_name; },
      "Model name clients must send (others get vLLM's 404)");
  flags->add(
      sub, "--max-model-len", [](C & config) -> auto& { return config.max_model_len; },
      "Context length limit (prompt + completion tokens)");

  auto* perf = "Performance model (seconds; see docs/sim.md)";
  flags
      ->add(
          sub, "--t0", [](C & config) -> auto& { return config.engine.t0; },
          "Step time of a batch of one (memory-bound floor), seconds")
      ->group(perf);
  flags
      ->add(
          sub, "--batch-exp", [](C & config) -> auto& { return config.engine.batch_exp; },
          "The memory-bound floor grows as t0 x batch^batch-exp (0: constant)")
      ->group(perf)
      ->check(CLI::Range(0.0, 1.0));
  flags
      ->add(
          sub, "--m", [](C & config) -> auto& { return config.engine.m; },
          "Memory-bound step time added per further sequence in the batch, seconds")
      ->group(perf);
  flags
      ->add(
          sub, "--c", [](C & config) -> auto& { return config.engine.c; },
          "Compute-bound step time per sequence in the batch, seconds")
      ->group(perf);
  flags
      ->add(
          sub, "--ctx-cost", [](C & config) -> auto& { return config.engine.ctx_cost; },
          "Step time per context token of each decoding sequence (KV reads), seconds")
      ->group(perf);
  flags
      ->add(
          sub, "--prefill-rate", [](C & config) -> auto& { return config.engine.prefill_rate; },
          "Prefill speed, prompt tokens per second (0 = free)")
      ->group(perf);
  flags
      ->add(
          sub, "--prefill-overhead",
          [](C & config) -> auto& { return config.engine.prefill_overhead; },
          "Fixed time added to a step that carries prefill work, seconds")
      ->group(perf);
  flags
      ->flag(
          sub, "--zero-cost", [](C & config) -> auto& { return config.zero_cost; },
          "Set every model cost to zero: tokens come as fast as the process can send them")
      ->group(perf);
  flags
      ->add(
          sub, "--time-scale", [](C & config) -> auto& { return config.time_scale; },
          "Run the model clock this many times faster than the wall clock (times clients see "
          "shrink by the same factor)")
      ->group(perf)
      ->check(CLI::PositiveNumber);
  flags
      ->add(
          sub, "--api-server-time", [](C & config) -> auto& { return config.api_server_seconds; },
          "Time the API server takes before a request reaches the engine, seconds (model time): "
          "part of every time to first token")
      ->group(perf)
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--output-len", flags->output_len,
                  "Natural output length (tokens until end of sequence), drawn per prompt: "
                  "lognormal:MEDIAN:SIGMA, uniform:MIN:MAX or fixed:N; capped by max_tokens "
                  "unless ignore_eos")
      ->capture_default_str()
      ->group(perf);

  auto* sched = "Scheduler and KV cache";
  flags
      ->add(
          sub, "--max-num-seqs", [](C & config) -> auto& { return config.engine.max_num_seqs; },
          "Most sequences in a batch")
      ->group(sched);
  flags
      ->add(
          sub, "--max-num-batched-tokens",
          [](C & config) -> auto& { return config.engine.max_num_batched_tokens; },
          "Token budget of one step (chunked prefill)")
      ->group(sched);
  flags
      ->add(
          sub, "--block-size", [](C & config) -> auto& { return config.engine.block_size; },
          "KV cache block size, tokens")
      ->group(sched);
  flags
      ->add(
          sub, "--num-kv-blocks", [](C & config) -> auto& { return config.kv_blocks_override; },
          "KV cache blocks; -1 derives them from the memory budget below")
      ->group(sched);
  flags
      ->add(
          sub, "--scheduling-policy", [](C & config) -> auto& { return config.scheduling_policy; },
          "fcfs, or priority: waiting requests by their `priority` (lower first), the lowest "
          "preempted first (vLLM's --scheduling-policy)")
      ->check(CLI::IsMember({"fcfs", "priority"}))
      ->group(sched);
  flags
      ->flag(
          sub, "--no-enable-prefix-caching",
          [](C & config) -> auto& { return config.no_prefix_caching; },
          "Turn prefix caching off (vLLM has it on by default)")
      ->group(sched);
  flags
      ->flag(
          sub, "--enable-prompt-tokens-details",
          [](C & config) -> auto& { return config.enable_prompt_tokens_details; },
          "Report prefix-cache hits in usage.prompt_tokens_details.cached_tokens of "
          "/v1/completions and /v1/chat/completions, as vLLM does with this flag (without it: "
          "null; /v1/responses always reports input_tokens_details)")
      ->group(sched);

  auto* mem = "Memory budget (derives the KV capacity)";
  flags
      ->add(
          sub, "--memory-gb", [](C & config) -> auto& { return config.memory.total_gb; },
          "Memory of the machine, GB (a DGX Spark has 128 GB unified)")
      ->group(mem);
  flags
      ->add(
          sub, "--gpu-memory-utilization",
          [](C & config) -> auto& { return config.memory.gpu_memory_utilization; },
          "Fraction of memory vLLM may take (above 0.9 a Spark runs out of memory for the OS)")
      ->group(mem)
      ->check(CLI::Range(0.01, 1.0));
  flags
      ->add(
          sub, "--weights-gb", [](C & config) -> auto& { return config.memory.weights_gb; },
          "Model weights, GB")
      ->group(mem);
  flags
      ->add(
          sub, "--overhead-gb", [](C & config) -> auto& { return config.memory.overhead_gb; },
          "Activations, CUDA graphs and runtime, GB")
      ->group(mem);
  flags
      ->add(
          sub, "--kv-bytes-per-token",
          [](C & config) -> auto& { return config.memory.kv_bytes_per_token; },
          "KV cache bytes per token")
      ->group(mem);

  auto* faults =
      "Faults (also per request: header X-Llmux-Fault: error=503, close-after=N, "
      "stall-after=N, latency-ms=X; and at run time: GET/POST /admin/faults)";
  flags
      ->add(
          sub, "--fault-error-rate", [](C & config) -> auto& { return config.faults.error_rate; },
          "Fraction of requests answered with an error status")
      ->group(faults)
      ->check(CLI::Range(0.0, 1.0));
  flags
      ->add(
          sub, "--fault-error-status",
          [](C & config) -> auto& { return config.faults.error_statuses; },
          "Statuses to answer with (picked at random), e.g. 429 500 503")
      ->group(faults);
  flags
      ->add(
          sub, "--fault-close-after", [](C & config) -> auto& { return config.faults.close_after; },
          "Close the connection after N output tokens (-1: never)")
      ->group(faults);
  flags
      ->add(
          sub, "--fault-close-rate", [](C & config) -> auto& { return config.faults.close_rate; },
          "Fraction of requests --fault-close-after applies to")
      ->group(faults)
      ->check(CLI::Range(0.0, 1.0));
  flags
      ->add(
          sub, "--fault-stall-after", [](C & config) -> auto& { return config.faults.stall_after; },
          "Stop sending after N output tokens, keeping the connection open (-1: never)")
      ->group(faults);
  flags
      ->add(
          sub, "--fault-stall-rate", [](C & config) -> auto& { return config.faults.stall_rate; },
          "Fraction of requests --fault-stall-after applies to")
      ->group(faults)
      ->check(CLI::Range(0.0, 1.0));
  flags
      ->add(
          sub, "--fault-latency-ms",
          [](C & config) -> auto& { return config.faults.added_latency_ms; },
          "Latency added before each request reaches the engine, milliseconds")
      ->group(faults);
  flags
      ->add(
          sub, "--not-ready-for", [](C & config) -> auto& { return config.faults.not_ready_for_s; },
          "GET /health answers 503 for this many seconds after start (vLLM loading its model); "
          "other requests are served")
      ->group(faults)
      ->check(CLI::Range(0.0, 1e7));
  flags
      ->add(
          sub, "--admin-token", [](C & config) -> auto& { return config.admin_token; },
          "Require `Authorization: Bearer TOKEN` on /admin/faults (runtime faults: see "
          "docs/sim.md), "
          "from any client; without it only loopback clients may use it")
      ->group(faults);

  auto* says = "What the simulator says (see docs/sim.md, Tool calls and reasoning)";
  sub->add_option("--script", flags->script,
                  "A file of turns (JSON or YAML: reasoning, text, tool_calls, match) played to "
                  "chat and Responses requests instead of generated words")
      ->check(CLI::ExistingFile)
      ->group(says);
  flags
      ->add(
          sub, "--tool-call-share", [](C & config) -> auto& { return config.tool_call_share; },
          "Share (0-1) of chat/Responses requests with function tools answered by a call to one of "
          "them, with arguments valid for its JSON schema (load tests)")
      ->group(says)
      ->check(CLI::Range(0.0, 1.0));

  auto* kv =
      "Prefill/decode disaggregation (vLLM's NixlConnector, --kv-transfer-config; see docs/sim.md)";
  const std::map<std::string, sim::KvRole> roles{{"none", sim::KvRole::none},
                                                 {"producer", sim::KvRole::producer},
                                                 {"consumer", sim::KvRole::consumer},
                                                 {"both", sim::KvRole::both}};
  flags
      ->choice(
          sub, "--kv-role", [](C & config) -> auto& { return config.kv.role; }, roles, "none",
          "none (no KV connector: kv_transfer_params are ignored), producer (a request with "
          "do_remote_decode that finishes by length holds its KV and answers with "
          "kv_transfer_params a consumer can load), consumer (a request with do_remote_prefill "
          "loads the producer's KV over the link instead of prefilling), or both")
      ->group(kv);
  flags
      ->add(
          sub, "--kv-link-gbps", [](C & config) -> auto& { return config.kv.link.gbps; },
          "Bandwidth of the link KV crosses, Gb/s (a DGX Spark's ConnectX-7: 200)")
      ->check(CLI::PositiveNumber)
      ->group(kv);
  flags
      ->add(
          sub, "--kv-link-efficiency",
          [](C & config) -> auto& { return config.kv.link.efficiency; },
          "Share of the line rate a transfer achieves (assumed, not measured)")
      ->check(CLI::Range(0.01, 1.0))
      ->group(kv);
  flags
      ->add(
          sub, "--kv-transfer-overlap", [](C & config) -> auto& { return config.kv.link.overlap; },
          "true: a transfer overlaps the other streams' decode (NIXL reads are asynchronous); "
          "false: it stalls the engine step that admits the request")
      ->group(kv);
  flags
      ->add(
          sub, "--kv-transfer-bytes-per-token",
          [](C & config) -> auto& { return config.kv.link.bytes_per_token; },
          "KV bytes crossing the link per prompt token (Qwen3.6-35B-A3B: 10 full-attention "
          "layers x 2 KV heads x 256 x K,V x 1 byte FP8)")
      ->check(CLI::NonNegativeNumber)
      ->group(kv);
  flags
      ->add(
          sub, "--kv-transfer-state-bytes",
          [](C & config) -> auto& { return config.kv.link.state_bytes; },
          "Fixed bytes per transfer: the request's recurrent state (30 Gated DeltaNet layers' "
          "conv and temporal state)")
      ->check(CLI::NonNegativeNumber)
      ->group(kv);
  flags
      ->add(
          sub, "--kv-abort-timeout", [](C & config) -> auto& { return config.kv.abort_timeout_s; },
          "Seconds a producer holds KV nobody read before freeing it "
          "(VLLM_NIXL_ABORT_REQUEST_TIMEOUT; model time, scaled by --time-scale)")
      ->check(CLI::PositiveNumber)
      ->group(kv);
  const std::map<std::string, sim::LoadFailurePolicy> policies{
      {"recompute", sim::LoadFailurePolicy::recompute}, {"fail", sim::LoadFailurePolicy::fail}};
  flags
      ->choice(
          sub, "--kv-load-failure-policy",
          [](C & config) -> auto& { return config.kv.load_failure_policy; }, policies, "fail",
          "A handle that cannot be read (unknown, expired, producer gone): fail (vLLM's "
          "default: 500 Internal server error) or recompute (prefill it here)")
      ->group(kv);
  flags
      ->add(
          sub, "--kv-engine-id", [](C & config) -> auto& { return config.kv.engine_id; },
          "This instance's engine id in handles (remote_engine_id); default: a random UUID")
      ->group(kv);
  flags
      ->add(
          sub, "--kv-host", [](C & config) -> auto& { return config.kv.host; },
          "Address a producer puts in its handles (remote_host) for consumers to reach it; "
          "default: --host")
      ->group(kv);

  flags->add(
      sub, "--response-store-max", [](C & config) -> auto& { return config.response_store_max; },
      "Responses kept for previous_response_id (oldest evicted first)");
  flags->add(
      sub, "--max-body-bytes", [](C & config) -> auto& { return config.max_body_bytes; },
      "Largest request body accepted (413 above); 0: no limit (vLLM has none)");
  flags->add(
      sub, "--keep-alive-timeout", [](C & config) -> auto& { return config.keep_alive_timeout_s; },
      "Seconds an idle keep-alive connection stays open after its last response (uvicorn's "
      "--timeout-keep-alive, as vLLM runs it); 0: never closed");

  return [flags, sub]() -> int {
    sim::SimConfig cfg = flags->cfg;
    if (sub->get_option("--preset")->count() > 0) {
      sim::SimConfig fresh;
      fresh.apply_preset(flags->cfg.preset);
      for (auto& [opt, copy] : flags->copies)
        if (opt->count() > 0) copy(fresh, flags->cfg);
      cfg = fresh;
    }
    try {
      cfg.output_len = sim::OutputLenDist::parse(flags->output_len);
    } catch (const std::exception& error) {
      spdlog::error("--output-len: {}", error.what());
      return 2;
    }
    if (cfg.memory.gpu_memory_utilization > 0.9) {
      spdlog::warn(
          "--gpu-memory-utilization {} leaves the OS almost nothing on a unified-memory machine: "
          "on a DGX Spark 0.9 drove the whole system (sshd included) out of memory; the seed "
          "uses 0.70",
          cfg.memory.gpu_memory_utilization);
    }
    if (!flags->script.empty()) {
      try {
        cfg.script = std::make_shared<const sim::Script>(sim::load_script(flags->script));
      } catch (const std::exception& error) {
        spdlog::error("--script {}: {}", flags->script, error.what());
        return 2;
      }
    }
    cfg.finalize();
    if (cfg.kv_blocks_override <= 0 && cfg.memory.kv_gb() <= 0) {
      spdlog::error("memory budget leaves no room for the KV cache ({:.1f} GB)",
                    cfg.memory.kv_gb());
      return 2;
    }
    return sim::run_server(std::move(cfg));
  };
}

}  // namespace llmux::cli
