// SPDX-License-Identifier: Apache-2.0
// The presets against the figures they were fitted to, on the engine's pure state machine (model
// time only, no clock): N closed-loop or simultaneous decode streams, tokens per model-second.
//
// dgx-spark-qwen3.6-35b-a3b-fp8-atlas: 0xBakeer/inference-atlas's vLLM sweep of the same model
// on one DGX Spark, results/vllm/Qwen/Qwen3.6-35B-A3B/nvidia-gb10-dgx-spark/
// 8cd52c733b36ecb7--sweep-parallel-1-32-i512-o256-v1--77c0d1.json (output_tok_s per level) and
// 8cd52c733b36ecb7--prefill-8k-v1--58bdf6.json (prefill_tok_s), as bench/fit_preset.py replays
// them, and the time to first token of a 547-token prompt alone (the sweep's concurrency 1,
// ttft_ms.mean 272.709), which fits the API server's time before the engine (--api-server-time).
// Tolerance: every level within 8% and the root-mean-square error at most 5% (the fit's own:
// 7.4% at N=4, 3.7% RMS), so a 10% change of t0 or +-0.05 of batch_exp fails.
// dgx-spark-qwen3.6-35b-a3b-fp8: the seed's ~50 / ~300 tok/s at 1 / 8 streams (+-5%).
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <vector>

#include "sim/config.hpp"
#include "sim/engine.hpp"

namespace llmux::sim {
namespace {

SimConfig preset_config(const std::string& name) {
  SimConfig cfg;
  cfg.apply_preset(name);
  cfg.finalize();
  return cfg;
}
EngineParams preset_params(const std::string& name) {
  return preset_config(name).engine;
}
const char* const kAtlasName = "dgx-spark-qwen3.6-35b-a3b-fp8-atlas";

SeqRequest request(std::uint64_t id, int prompt, int out) {
  SeqRequest r;
  r.id = id;
  // Distinct prompts: no prefix-cache hit (inference-atlas ran with prefix caching off).
  for (int i = 0; i < prompt; ++i)
    r.prompt.push_back(static_cast<std::uint32_t>(id * 1000003u + i));
  for (int i = 0; i < out; ++i) r.output.push_back(900000u + i);
  return r;
}

// `clients` closed-loop clients send `requests` requests in all, each client its next one when
// its previous one ends; a request reaches the engine `api` seconds after it is sent (the API
// server's time) and joins at the next step boundary, as with the server. Output tokens / model
// seconds until the last ends (inference-atlas's output_tok_s).
double closed_loop_tok_s(const EngineParams& p, int clients, int requests, int prompt, int out,
                         double api = 0.0) {
  Engine e(p);
  std::uint64_t id = 0;
  int sent = 0;
  std::deque<double> arriving;  // when sent requests reach the engine, in order
  for (; sent < std::min(clients, requests); ++sent) arriving.push_back(api);
  std::int64_t tokens = 0;
  double end = 0;
  for (;;) {
    const auto deadline = e.deadline();
    if (!arriving.empty() && (!deadline || arriving.front() <= *deadline)) {
      EXPECT_TRUE(e.submit(request(++id, prompt, out), arriving.front()));
      arriving.pop_front();
      continue;
    }
    if (!deadline) break;
    const StepResult r = e.complete_step();
    int finished = 0;
    for (const TokenOut& t : r.tokens) {
      ++tokens;
      finished += t.last ? 1 : 0;
    }
    for (; finished > 0 && sent < requests; --finished, ++sent) arriving.push_back(r.end + api);
    end = r.end;
  }
  EXPECT_EQ(tokens, static_cast<std::int64_t>(requests) * out);
  return static_cast<double>(tokens) / end;
}

// The seed's method: N requests sent together, aggregate = their tokens / time to the last.
double burst_tok_s(const EngineParams& p, int n, int prompt, int out) {
  return closed_loop_tok_s(p, n, n, prompt, out);
}

struct Point {
  int clients, requests, prompt;
  double measured;  // output tok/s
};
// sweep-parallel-1-32-i512-o256-v1: levels 1..32, 256 output tokens; prompt = the level's
// input_tokens_total / requests (17498/32, 34937/64, 83797/128); 24 of the 32 run at once.
const std::vector<Point> kAtlas = {{1, 32, 547, 54.497},   {2, 32, 547, 85.155},
                                   {4, 32, 547, 110.856},  {8, 32, 547, 174.326},
                                   {16, 64, 546, 248.621}, {32, 128, 655, 293.701}};

struct Fit {
  double max_err = 0, rms = 0;
};
Fit fit(const EngineParams& p, bool print = false) {
  const double api = preset_config(kAtlasName).api_server_seconds;
  Fit f;
  double sq = 0;
  for (const Point& pt : kAtlas) {
    const double sim = closed_loop_tok_s(p, pt.clients, pt.requests, pt.prompt, 256, api);
    const double err = sim / pt.measured - 1;
    if (print)
      std::printf("N=%-3d sim %6.1f tok/s, measured %6.1f (%+.1f%%)\n", pt.clients, sim,
                  pt.measured, err * 100);
    f.max_err = std::max(f.max_err, std::abs(err));
    sq += std::log(sim / pt.measured) * std::log(sim / pt.measured);
  }
  f.rms = std::sqrt(sq / kAtlas.size());
  return f;
}
bool fits(const Fit& f) {
  return f.max_err <= 0.08 && f.rms <= 0.05;
}

TEST(StepTime, FloorGrowsAsAPowerOfTheBatch) {
  EngineParams p;
  p.t0 = 0.02;
  p.m = p.c = p.ctx_cost = 0.0;
  p.batch_exp = 0.5;
  EXPECT_DOUBLE_EQ(p.step_time(1, 0, 0), 0.02);
  EXPECT_DOUBLE_EQ(p.step_time(16, 0, 0), 0.08);
  p.batch_exp = 0.0;  // the seed's constant floor
  EXPECT_DOUBLE_EQ(p.step_time(16, 0, 0), 0.02);
}

TEST(AtlasPreset, ReproducesThePublishedSweep) {
  const EngineParams p = preset_params(kAtlasName);
  EXPECT_EQ(p.max_num_seqs, 24);
  const Fit f = fit(p, true);
  EXPECT_LE(f.max_err, 0.08);
  EXPECT_LE(f.rms, 0.05);
}

// Time to first token of a prompt alone: the API server's time, then the engine's step.
double ttft_alone(const SimConfig& cfg, int prompt) {
  Engine e(cfg.engine);
  EXPECT_TRUE(e.submit(request(1, prompt, 1), cfg.api_server_seconds));
  const StepResult r = e.complete_step();
  EXPECT_EQ(r.tokens.size(), 1u);
  return r.end;
}

TEST(AtlasPreset, PrefillOfA10kPrompt) {
  // prefill-8k-v1: 10,154-token prompts alone, prefill_tok_s = sum(prompt) / sum(TTFT) = 4,833.
  EXPECT_NEAR(10154 / ttft_alone(preset_config(kAtlasName), 10154), 4833.0, 4833.0 * 0.03);
}

TEST(AtlasPreset, FirstTokenOfAShortPromptHoldsTheApiServersTime) {
  // sweep-parallel-1-32-i512-o256-v1, concurrency 1: ttft_ms.mean 272.709 at 547 tokens, where
  // the engine's step alone is ~124 ms.
  const SimConfig cfg = preset_config(kAtlasName);
  EXPECT_NEAR(ttft_alone(cfg, 547), 0.2727, 0.2727 * 0.03);
  SimConfig without = cfg;
  without.api_server_seconds = 0;
  EXPECT_LT(ttft_alone(without, 547), 0.2727 * 0.6);
}

TEST(AtlasPreset, FailsWhenTheParametersChangeMaterially) {
  const EngineParams base = preset_params(kAtlasName);
  ASSERT_TRUE(fits(fit(base)));
  for (double scale : {0.9, 1.1}) {
    EngineParams p = base;
    p.t0 *= scale;
    EXPECT_FALSE(fits(fit(p))) << "t0 x" << scale;
  }
  for (double d : {-0.05, 0.05}) {
    EngineParams p = base;
    p.batch_exp += d;
    EXPECT_FALSE(fits(fit(p))) << "batch_exp " << d;
  }
  EngineParams seed_form = base;  // the seed's constant floor with the atlas t0
  seed_form.batch_exp = 0;
  EXPECT_FALSE(fits(fit(seed_form)));
}

TEST(SeedPreset, StillFiftyAndThreeHundred) {
  // bench/sim_calibration.py's method: a 113-token prompt, max_tokens 128.
  const EngineParams p = preset_params("dgx-spark-qwen3.6-35b-a3b-fp8");
  EXPECT_EQ(p.batch_exp, 0.0);
  EXPECT_NEAR(burst_tok_s(p, 1, 113, 128), 50.0, 2.5);
  EXPECT_NEAR(burst_tok_s(p, 8, 113, 128), 300.0, 15.0);
  EXPECT_LE(burst_tok_s(p, 16, 113, 128), 1.2 * burst_tok_s(p, 8, 113, 128));
}

}  // namespace
}  // namespace llmux::sim
