// SPDX-License-Identifier: Apache-2.0
// Prefill/decode disaggregation in the engine, on a fake clock: the transfer time of a KV load,
// a consumer's request loading its KV instead of prefilling it (overlapping the other streams'
// decode, or blocking them), and a producer's finished request holding its blocks.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "sim/engine.hpp"
#include "sim/kv_transfer.hpp"

namespace llmux::sim {
namespace {

EngineParams params() {
  EngineParams p;
  p.t0 = 0.020;
  p.m = 0.0;
  p.c = 0.0;
  p.prefill_rate = 1000.0;  // 1 ms per prompt token: a prefill is easy to tell from a transfer
  p.max_num_batched_tokens = 100000;
  p.block_size = 16;
  p.num_kv_blocks = 10000;
  p.kv_link.gbps = 8.0;  // 1 GB/s
  p.kv_link.efficiency = 1.0;
  p.kv_link.bytes_per_token = 1e5;  // 0.1 ms per token
  p.kv_link.state_bytes = 1e7;      // 10 ms
  return p;
}

SeqRequest request(std::uint64_t id, int prompt_len, int out_len, std::uint32_t salt = 0) {
  SeqRequest r;
  r.id = id;
  for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(salt * 1000003u + i + 1);
  for (int i = 0; i < out_len; ++i) r.output.push_back(900000 + i);
  return r;
}

struct Outcome {
  std::map<std::uint64_t, std::vector<double>> token_times;
  std::map<std::uint64_t, TokenOut> first;
};

Outcome run_until_idle(Engine& engine) {
  Outcome run;
  for (int guard = 0; engine.deadline() && guard < 100000; ++guard) {
    StepResult step = engine.complete_step();
    for (const TokenOut& token : step.tokens) {
      run.token_times[token.id].push_back(step.end);
      if (token.index == 0) run.first[token.id] = token;
    }
  }
  return run;
}

TEST(KvLink, TransferTimeIsBytesOverTheEffectiveRate) {
  KvLink link;
  link.gbps = 200;
  link.efficiency = 0.8;
  link.bytes_per_token = 10240;
  link.state_bytes = 64389120;
  // 10,000 tokens: 102.4 MB + 64.4 MB over 20 GB/s.
  EXPECT_DOUBLE_EQ(link.bytes(10000), 10240.0 * 10000 + 64389120.0);
  EXPECT_NEAR(link.seconds(10000), (10240.0 * 10000 + 64389120.0) / 20e9, 1e-12);
  // Half the link, twice the time; nothing to move, no time (not even the state).
  link.gbps = 100;
  EXPECT_NEAR(link.seconds(10000), 2 * (10240.0 * 10000 + 64389120.0) / 20e9, 1e-12);
  EXPECT_EQ(link.seconds(0), 0.0);
  link.gbps = 0;  // --zero-cost
  EXPECT_EQ(link.seconds(10000), 0.0);
}

TEST(KvRoleNames, ParseAndPrint) {
  for (auto role : {KvRole::none, KvRole::producer, KvRole::consumer, KvRole::both})
    EXPECT_EQ(parse_kv_role(to_string(role)), role);
  EXPECT_FALSE(parse_kv_role("kv_producer"));
  EXPECT_TRUE(produces(KvRole::both) && consumes(KvRole::both));
  EXPECT_FALSE(produces(KvRole::consumer) || consumes(KvRole::producer));
  for (auto policy : {LoadFailurePolicy::recompute, LoadFailurePolicy::fail})
    EXPECT_EQ(parse_load_failure_policy(to_string(policy)), policy);
  EXPECT_FALSE(parse_load_failure_policy("retry"));
}

TEST(KvLoad, FirstTokenAfterTheTransferAndOneTokenNotThePrefill) {
  const EngineParams p = params();
  Engine engine(p);
  SeqRequest r = request(1, 1000, 3);
  r.remote_prefill = true;
  r.remote_tokens = 1000;
  ASSERT_TRUE(engine.submit(r, 0.0));
  Outcome run = run_until_idle(engine);
  // 999 tokens cross the link (the last one is computed here): 99.9 ms + 10 ms; then one step
  // computing one token: t0 + 1 ms. A local prefill would have taken t0 + 1 s.
  const double transfer = p.kv_link.seconds(999);
  EXPECT_NEAR(transfer, 0.1099, 1e-9);
  ASSERT_EQ(run.token_times[1].size(), 3u);
  EXPECT_NEAR(run.token_times[1][0], transfer + p.step_time(1, 0, 1), 1e-9);
  EXPECT_EQ(run.first[1].cached_tokens, 999);  // vLLM: num_cached_tokens = num_computed_tokens
  EXPECT_EQ(run.first[1].external_tokens, 999);
  const EngineStats stats = engine.stats();
  EXPECT_EQ(stats.kv_transfers, 1u);
  EXPECT_DOUBLE_EQ(stats.kv_transfer_bytes, p.kv_link.bytes(999));
  EXPECT_EQ(stats.external_prefix_hits, 999u);
  EXPECT_EQ(stats.prompt_tokens, 1000u);
}

TEST(KvLoad, LocalPrefixHitsAreNotTransferred) {
  const EngineParams p = params();
  Engine engine(p);
  ASSERT_TRUE(engine.submit(request(1, 640, 1), 0.0));  // caches 40 blocks of the prompt
  run_until_idle(engine);
  SeqRequest r = request(2, 1000, 1);  // same first 640 tokens
  r.remote_prefill = true;
  r.remote_tokens = 1000;
  const double start = 10.0;
  ASSERT_TRUE(engine.submit(r, start));
  Outcome run = run_until_idle(engine);
  // Request 1's 640 tokens fill 40 cached blocks: those hit, the rest of 999 crosses the link.
  const std::int32_t hit = 40 * 16;
  EXPECT_EQ(run.first[2].external_tokens, 999 - hit);
  EXPECT_EQ(run.first[2].cached_tokens, 999);
  EXPECT_NEAR(run.token_times[2][0], start + p.kv_link.seconds(999 - hit) + p.step_time(1, 0, 1),
              1e-9);
}

TEST(KvLoad, OverlapsOtherStreamsUnlessBlocking) {
  for (bool overlap : {true, false}) {
    SCOPED_TRACE(overlap ? "overlap" : "blocking");
    EngineParams p = params();
    p.kv_link.state_bytes = 1e8;  // a 100 ms transfer at least
    p.kv_link.overlap = overlap;
    Engine both(p);
    ASSERT_TRUE(both.submit(request(1, 16, 50, 7), 0.0));  // a decoding stream
    SeqRequest r = request(2, 1000, 2);
    r.remote_prefill = true;
    r.remote_tokens = 1000;
    ASSERT_TRUE(both.submit(r, 0.001));
    Outcome run = run_until_idle(both);
    // The largest gap between two tokens of the decoding stream: one step when the transfer
    // overlaps; the whole transfer when it blocks.
    double gap = 0;
    const auto& times = run.token_times[1];
    for (std::size_t i = 1; i < times.size(); ++i) gap = std::max(gap, times[i] - times[i - 1]);
    const double transfer = p.kv_link.seconds(999);
    if (overlap) {
      EXPECT_LT(gap, transfer / 2);
    } else {
      EXPECT_GT(gap, transfer);
    }
    EXPECT_GT(run.token_times[2][0], transfer);
  }
}

TEST(KvLoad, SimultaneousTransfersShareTheLink) {
  const EngineParams p = params();
  Engine engine(p);
  for (std::uint64_t id : {1u, 2u}) {
    SeqRequest r = request(id, 1000, 1, static_cast<std::uint32_t>(id));
    r.remote_prefill = true;
    r.remote_tokens = 1000;
    ASSERT_TRUE(engine.submit(r, 0.0));
  }
  Outcome run = run_until_idle(engine);
  const double one = p.kv_link.seconds(999);
  EXPECT_NEAR(std::max(run.token_times[1][0], run.token_times[2][0]),
              2 * one + p.step_time(1, 0, 1), 1e-9);
}

TEST(KvLoad, HandleCoveringPartOfThePromptLoadsOnlyThat) {
  const EngineParams p = params();
  Engine engine(p);
  SeqRequest r = request(1, 1000, 1);
  r.remote_prefill = true;
  r.remote_tokens = 400;  // the producer computed fewer tokens than this prompt has
  ASSERT_TRUE(engine.submit(r, 0.0));
  Outcome run = run_until_idle(engine);
  EXPECT_EQ(run.first[1].external_tokens, 400);
  EXPECT_NEAR(run.token_times[1][0], p.kv_link.seconds(400) + p.step_time(1, 0, 600), 1e-9);
}

TEST(KvHold, FinishedProducerRequestKeepsItsBlocksUntilReleased) {
  const EngineParams p = params();
  Engine engine(p);
  SeqRequest r = request(1, 100, 1);
  r.hold_on_finish = true;
  ASSERT_TRUE(engine.submit(r, 0.0));
  run_until_idle(engine);
  const std::vector<std::int64_t>* held = engine.held_blocks(1);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->size(), 7u);  // 100 prompt tokens in blocks of 16
  EXPECT_EQ(engine.stats().kv_blocks_used, 7);
  EXPECT_EQ(engine.stats().kv_blocks_held, 7);
  EXPECT_TRUE(engine.release_held(1, 1.0));
  EXPECT_EQ(engine.held_blocks(1), nullptr);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  EXPECT_FALSE(engine.release_held(1, 1.0));
  // Without the flag nothing is held.
  ASSERT_TRUE(engine.submit(request(2, 100, 1, 3), 2.0));
  run_until_idle(engine);
  EXPECT_EQ(engine.held_blocks(2), nullptr);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

TEST(KvHold, HeldBlocksCountAgainstCapacityAndReleasingAdmitsWaiting) {
  EngineParams p = params();
  p.num_kv_blocks = 10;
  Engine engine(p);
  SeqRequest held = request(1, 100, 1);  // 7 blocks
  held.hold_on_finish = true;
  ASSERT_TRUE(engine.submit(held, 0.0));
  run_until_idle(engine);
  ASSERT_TRUE(engine.submit(request(2, 100, 1, 5), 1.0));  // needs 7: only 3 free
  Outcome before = run_until_idle(engine);
  EXPECT_TRUE(before.token_times[2].empty());
  EXPECT_FALSE(engine.deadline());  // nothing can run until the blocks are released
  ASSERT_TRUE(engine.release_held(1, 5.0));
  Outcome after = run_until_idle(engine);
  ASSERT_EQ(after.token_times[2].size(), 1u);
  EXPECT_NEAR(after.token_times[2][0], 5.0 + p.step_time(1, 0, 100), 1e-9);
}

TEST(KvLoad, AbortWhileLoadingFreesTheBlocks) {
  const EngineParams p = params();
  Engine engine(p);
  SeqRequest r = request(1, 1000, 1);
  r.remote_prefill = true;
  r.remote_tokens = 1000;
  ASSERT_TRUE(engine.submit(r, 0.0));
  EXPECT_EQ(engine.stats().loading, 1);
  EXPECT_GT(engine.stats().kv_blocks_used, 0);
  ASSERT_TRUE(engine.deadline());
  EXPECT_TRUE(engine.abort(1));
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.stats().loading, 0);
}

}  // namespace
}  // namespace llmux::sim
