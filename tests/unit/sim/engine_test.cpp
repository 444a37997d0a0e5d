// SPDX-License-Identifier: Apache-2.0
// The simulator's engine on a fake clock: time only moves when the test completes a step.
#include "sim/engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "core/tokenizer.hpp"
#include "sim/textgen.hpp"

namespace llmux::sim {
namespace {

EngineParams simple_params() {
  EngineParams p;
  p.t0 = 0.020;
  p.m = 0.001;
  p.c = 0.003;
  p.ctx_cost = 0.0;
  p.prefill_rate = 10000.0;
  p.prefill_overhead = 0.0;
  p.max_num_seqs = 256;
  p.max_num_batched_tokens = 8192;
  p.block_size = 16;
  p.num_kv_blocks = 100000;
  return p;
}

SeqRequest make_req(std::uint64_t id, int prompt_len, int out_len, std::uint32_t salt = 0) {
  SeqRequest r;
  r.id = id;
  for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(salt * 1000003u + i + 1);
  for (int i = 0; i < out_len; ++i) r.output.push_back(900000 + i);
  return r;
}

struct Emitted {
  double time;
  int index;
  bool last;
  int cached;
};

// Runs the engine until idle; returns every token's emit time by sequence.
std::map<std::uint64_t, std::vector<Emitted>> run_all(Engine& e,
                                                      std::vector<StepResult>* steps = nullptr) {
  std::map<std::uint64_t, std::vector<Emitted>> out;
  int guard = 0;
  while (e.deadline() && ++guard < 1000000) {
    StepResult r = e.complete_step();
    for (auto& t : r.tokens) out[t.id].push_back({r.end, t.index, t.last, t.cached_tokens});
    if (steps) steps->push_back(std::move(r));
  }
  return out;
}

TEST(StepTime, MemoryBoundFloorThenComputeBoundSlope) {
  EngineParams p = simple_params();
  EXPECT_DOUBLE_EQ(p.step_time(0, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(p.step_time(1, 0, 0), 0.020);
  EXPECT_DOUBLE_EQ(p.step_time(8, 0, 0), 0.020 + 7 * 0.001);  // 0.027 > 8*0.003
  EXPECT_DOUBLE_EQ(p.step_time(16, 0, 0), 16 * 0.003);        // 0.048 > 0.035
  // Context and prefill add to it.
  p.ctx_cost = 1e-6;
  p.prefill_overhead = 0.002;
  EXPECT_DOUBLE_EQ(p.step_time(1, 1000, 0), 0.020 + 0.001);
  EXPECT_DOUBLE_EQ(p.step_time(1, 0, 500), 0.020 + 0.05 + 0.002);
}

TEST(Engine, SingleSequenceTiming) {
  Engine e(simple_params());
  ASSERT_TRUE(e.submit(make_req(1, 100, 5), 10.0));
  ASSERT_TRUE(e.deadline());
  auto out = run_all(e);
  ASSERT_EQ(out[1].size(), 5u);
  // First token after the prefill step: t0 + 100 / 10000.
  EXPECT_NEAR(out[1][0].time, 10.0 + 0.020 + 0.01, 1e-12);
  for (int i = 1; i < 5; ++i) EXPECT_NEAR(out[1][i].time - out[1][i - 1].time, 0.020, 1e-12);
  EXPECT_TRUE(out[1].back().last);
  EXPECT_FALSE(out[1][3].last);
  EXPECT_FALSE(e.deadline());  // idle again
  const auto st = e.stats();
  EXPECT_EQ(st.generation_tokens, 5u);
  EXPECT_EQ(st.prompt_tokens, 100u);
  EXPECT_EQ(st.kv_blocks_used, 0);
}

TEST(Engine, ContinuousBatchingAdvancesEverySequenceEachStep) {
  Engine e(simple_params());
  // The first request starts a step at once; the seven that arrive while it runs join at the
  // next step boundary, and from then on every step advances all eight by one token.
  for (int i = 1; i <= 8; ++i) ASSERT_TRUE(e.submit(make_req(i, 10, 20, i), 0.0));
  std::vector<StepResult> steps;
  auto out = run_all(e, &steps);
  EXPECT_EQ(steps[0].scheduled.size(), 1u);
  EXPECT_EQ(steps[1].scheduled.size(), 7u);
  for (std::size_t s = 1; s < 20; ++s) {
    EXPECT_EQ(steps[s].tokens.size(), 8u) << "step " << s;
    EXPECT_EQ(steps[s].batch, 8);
  }
  // Decode steps of a batch of 8 take t0 + 7m.
  EXPECT_NEAR(out[3][5].time - out[3][4].time, 0.027, 1e-12);
  // Aggregate throughput grows sub-linearly with the batch: 8 streams are < 8x one stream.
  const double one_stream = 1.0 / 0.020, eight = 8.0 / 0.027;
  EXPECT_GT(eight, 5 * one_stream);
  EXPECT_LT(eight, 8 * one_stream);
}

TEST(Engine, ArrivalDuringAStepJoinsAtTheNextBoundary) {
  Engine e(simple_params());
  ASSERT_TRUE(e.submit(make_req(1, 10, 10), 0.0));
  const double first_end = *e.deadline();
  ASSERT_TRUE(e.submit(make_req(2, 10, 3, 2), first_end / 2));  // mid-step
  EXPECT_DOUBLE_EQ(*e.deadline(), first_end);                   // the step in progress is unchanged
  StepResult r1 = e.complete_step();
  EXPECT_TRUE(r1.scheduled.size() == 1 && r1.scheduled[0] == 1);
  StepResult r2 = e.complete_step();
  ASSERT_EQ(r2.scheduled.size(), 1u);
  EXPECT_EQ(r2.scheduled[0], 2u);
  EXPECT_EQ(r2.batch, 2);
  EXPECT_DOUBLE_EQ(r2.start, r1.end);  // absolute deadlines: no gap, no drift
}

TEST(Engine, PrefillIsChargedToTheStepsItRunsIn) {
  EngineParams p = simple_params();
  Engine e(p);
  ASSERT_TRUE(e.submit(make_req(1, 10, 50), 0.0));
  for (int i = 0; i < 5; ++i) e.complete_step();  // now decoding alone
  const double before = *e.deadline() - e.complete_step().start;
  EXPECT_NEAR(before, 0.020, 1e-12);
  // A 2000-token prompt arrives: the next step carries its prefill and every decode waits.
  const double now = *e.deadline();
  ASSERT_TRUE(e.submit(make_req(2, 2000, 5, 7), now - 1e-6));
  StepResult r = e.complete_step();  // the step planned before the arrival
  StepResult with_prefill = e.complete_step();
  EXPECT_EQ(with_prefill.prefill_tokens, 2000);
  EXPECT_NEAR(with_prefill.end - with_prefill.start, p.step_time(2, 0, 2000), 1e-12);
  EXPECT_GT(with_prefill.end - with_prefill.start, 0.2);  // a decode token delayed by prefill
  (void)r;
}

TEST(Engine, ChunkedPrefillSpreadsALongPromptOverSteps) {
  EngineParams p = simple_params();
  p.max_num_batched_tokens = 512;
  Engine e(p);
  ASSERT_TRUE(e.submit(make_req(1, 2000, 2), 0.0));
  std::vector<StepResult> steps;
  auto out = run_all(e, &steps);
  // ceil(2000 / 512) = 4 prefill steps; the first token comes at the end of the 4th.
  ASSERT_GE(steps.size(), 5u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(steps[i].prefill_tokens, 512);
    EXPECT_TRUE(steps[i].tokens.empty());
  }
  EXPECT_EQ(steps[3].prefill_tokens, 2000 - 3 * 512);
  ASSERT_EQ(steps[3].tokens.size(), 1u);
  EXPECT_EQ(steps[3].tokens[0].index, 0);
}

TEST(Engine, MaxNumSeqsMakesOthersWait) {
  EngineParams p = simple_params();
  p.max_num_seqs = 2;
  Engine e(p);
  ASSERT_TRUE(e.submit(make_req(1, 10, 3, 1), 0.0));
  ASSERT_TRUE(e.submit(make_req(2, 10, 6, 2), 0.0));
  ASSERT_TRUE(e.submit(make_req(3, 10, 3, 3), 0.0));
  e.complete_step();  // the step that started with the first arrival
  EXPECT_EQ(e.stats().running, 2);
  EXPECT_EQ(e.stats().waiting, 1);
  auto out = run_all(e);
  // The third starts only once the first finished.
  EXPECT_GT(out[3][0].time, out[1].back().time);
  EXPECT_EQ(out[3].size(), 3u);
}

TEST(Engine, KvAdmissionWaitsForFreeBlocks) {
  EngineParams p = simple_params();
  p.num_kv_blocks = 10;  // 160 tokens
  p.enable_prefix_caching = false;
  Engine e(p);
  ASSERT_TRUE(e.submit(make_req(1, 100, 10, 1), 0.0));  // 7 blocks, up to 8 while decoding
  ASSERT_TRUE(e.submit(make_req(2, 100, 10, 2), 0.0));  // does not fit next to it
  EXPECT_EQ(e.stats().running, 1);
  EXPECT_EQ(e.stats().waiting, 1);
  EXPECT_GT(e.stats().kv_usage(), 0.6);
  auto out = run_all(e);
  EXPECT_GT(out[2][0].time, out[1].back().time);
  EXPECT_EQ(e.stats().kv_blocks_used, 0);
  // A request that could never fit is refused outright.
  EXPECT_FALSE(e.submit(make_req(3, 200, 10, 3), 0.0));
}

TEST(Engine, OutOfKvMidDecodePreemptsTheNewest) {
  EngineParams p = simple_params();
  p.num_kv_blocks = 8;  // 128 tokens
  p.enable_prefix_caching = false;
  Engine e(p);
  ASSERT_TRUE(e.submit(make_req(1, 32, 40, 1), 0.0));  // grows to 72 tokens: 5 blocks
  ASSERT_TRUE(e.submit(make_req(2, 32, 40, 2), 0.0));  // both admitted (2 + 2 blocks)
  std::vector<StepResult> steps;
  steps.push_back(e.complete_step());
  EXPECT_EQ(e.stats().running, 2);
  auto out = run_all(e, &steps);
  out[1].insert(out[1].begin(), {steps[0].end, 0, false, 0});
  std::size_t preempted = 0;
  for (auto& s : steps) {
    for (auto id : s.preempted) {
      EXPECT_EQ(id, 2u);  // the newest goes
      ++preempted;
    }
  }
  EXPECT_GE(preempted, 1u);
  EXPECT_EQ(e.stats().preemptions, preempted);
  // Both still produce every token, in order.
  for (std::uint64_t id : {1u, 2u}) {
    ASSERT_EQ(out[id].size(), 40u);
    for (int i = 0; i < 40; ++i) EXPECT_EQ(out[id][i].index, i);
  }
  EXPECT_GT(out[2].back().time, out[1].back().time);
}

// vLLM's priority policy (vllm/v1/core/sched/scheduler.py): out of KV, the running request
// with the largest (priority, arrival) goes, even an older one; under fcfs the newest went
// (the test above, same load).
TEST(Engine, PriorityPolicyPreemptsTheLowestPriorityNotTheNewest) {
  EngineParams p = simple_params();
  p.num_kv_blocks = 8;
  p.enable_prefix_caching = false;
  p.priority_scheduling = true;
  Engine e(p);
  SeqRequest low = make_req(1, 32, 40, 1);
  low.priority = 5;
  SeqRequest high = make_req(2, 32, 40, 2);
  high.priority = -1;
  ASSERT_TRUE(e.submit(std::move(low), 0.0));
  ASSERT_TRUE(e.submit(std::move(high), 0.0));
  std::vector<StepResult> steps;
  auto out = run_all(e, &steps);
  std::size_t preempted = 0;
  for (const auto& step : steps) {
    for (auto id : step.preempted) {
      EXPECT_EQ(id, 1u) << "the older but lower-priority request goes";
      ++preempted;
    }
    // A step that preempted admits no waiting request.
    if (!step.preempted.empty()) {
      EXPECT_TRUE(step.scheduled.empty());
    }
  }
  EXPECT_GE(preempted, 1u);
  ASSERT_EQ(out[2].size(), 40u);
  ASSERT_EQ(out[1].size(), 40u);
  EXPECT_LT(out[2].back().time, out[1].back().time) << "the high-priority request ends first";
}

TEST(Engine, PriorityPolicyAdmitsWaitingRequestsByPriorityThenArrival) {
  EngineParams p = simple_params();
  p.max_num_seqs = 1;
  p.priority_scheduling = true;
  Engine e(p);
  ASSERT_TRUE(e.submit(make_req(1, 16, 3, 1), 0.0));  // runs alone
  SeqRequest batch = make_req(2, 16, 3, 2);
  batch.priority = 1;
  SeqRequest later_batch = make_req(3, 16, 3, 3);
  later_batch.priority = 1;
  SeqRequest interactive = make_req(4, 16, 3, 4);
  interactive.priority = -1;
  ASSERT_TRUE(e.submit(std::move(batch), 0.001));
  ASSERT_TRUE(e.submit(std::move(later_batch), 0.002));
  ASSERT_TRUE(e.submit(std::move(interactive), 0.003));
  std::vector<StepResult> steps;
  run_all(e, &steps);
  std::vector<std::uint64_t> order;
  for (const auto& step : steps)
    for (auto id : step.scheduled) order.push_back(id);
  EXPECT_EQ(order, (std::vector<std::uint64_t>{1, 4, 2, 3}));

  // The same under fcfs: arrival order.
  p.priority_scheduling = false;
  Engine fcfs(p);
  ASSERT_TRUE(fcfs.submit(make_req(1, 16, 3, 1), 0.0));
  for (std::uint64_t id : {2u, 3u, 4u}) {
    SeqRequest request = make_req(id, 16, 3, static_cast<std::uint32_t>(id));
    request.priority = id == 4 ? -1 : 1;
    ASSERT_TRUE(fcfs.submit(std::move(request), 0.001 * static_cast<double>(id)));
  }
  steps.clear();
  run_all(fcfs, &steps);
  order.clear();
  for (const auto& step : steps)
    for (auto id : step.scheduled) order.push_back(id);
  EXPECT_EQ(order, (std::vector<std::uint64_t>{1, 2, 3, 4}));
}

TEST(Engine, PrefixCacheHitSkipsPrefill) {
  EngineParams p = simple_params();
  p.prefill_rate = 1000.0;  // make prefill expensive enough to see
  Engine e(p);
  ASSERT_TRUE(e.submit(make_req(1, 1000, 2, 42), 0.0));
  auto a = run_all(e);
  const double ttft_cold = a[1][0].time - 0.0;
  EXPECT_EQ(a[1][0].cached, 0);
  const double t = a[1].back().time + 1.0;
  ASSERT_TRUE(e.submit(make_req(2, 1000, 2, 42), t));  // same prompt
  auto b = run_all(e);
  const double ttft_warm = b[2][0].time - t;
  // All but the last partial block: floor(999 / 16) * 16 = 992 tokens cached.
  EXPECT_EQ(b[2][0].cached, 992);
  EXPECT_LT(ttft_warm, ttft_cold / 5);
  const auto st = e.stats();
  EXPECT_EQ(st.prefix_queries, 2000u);
  EXPECT_EQ(st.prefix_hits, 992u);
}

TEST(Engine, PrefixCacheSharesOnlyTheCommonPrefix) {
  Engine e(simple_params());
  SeqRequest a = make_req(1, 64, 1, 5);
  SeqRequest b = make_req(2, 64, 1, 5);
  for (int i = 40; i < 64; ++i) b.prompt[i] += 77;  // diverges inside block 2
  ASSERT_TRUE(e.submit(std::move(a), 0.0));
  run_all(e);
  ASSERT_TRUE(e.submit(std::move(b), 10.0));
  auto out = run_all(e);
  EXPECT_EQ(out[2][0].cached, 32);  // blocks 0 and 1
}

TEST(Engine, CachedBlocksAreEvictedLeastRecentlyUsedFirst) {
  EngineParams p = simple_params();
  p.num_kv_blocks = 12;
  Engine e(p);
  // A then B each leave 4 full cached blocks (65-token prompts, 1 token out).
  ASSERT_TRUE(e.submit(make_req(1, 65, 1, 1), 0.0));
  run_all(e);
  ASSERT_TRUE(e.submit(make_req(2, 65, 1, 2), 1.0));
  run_all(e);
  EXPECT_EQ(e.stats().kv_blocks_cached, 8);
  // C needs 5 fresh blocks: 12 - 8 = 4 never-used + 1 evicted, the oldest: from A.
  ASSERT_TRUE(e.submit(make_req(3, 65, 1, 3), 2.0));
  run_all(e);
  // B still fully cached; A lost a block (its tail first: A's head survives).
  ASSERT_TRUE(e.submit(make_req(4, 65, 1, 2), 3.0));
  auto b = run_all(e);
  EXPECT_EQ(b[4][0].cached, 64);
  ASSERT_TRUE(e.submit(make_req(5, 65, 1, 1), 4.0));
  auto a = run_all(e);
  EXPECT_LT(a[5][0].cached, 64);
}

TEST(Engine, AbortFreesTheSequenceAtOnce) {
  Engine e(simple_params());
  ASSERT_TRUE(e.submit(make_req(1, 100, 100, 1), 0.0));
  ASSERT_TRUE(e.submit(make_req(2, 100, 100, 2), 0.0));
  e.complete_step();
  const auto used_before = e.stats().kv_blocks_used;
  EXPECT_TRUE(e.abort(2));
  EXPECT_FALSE(e.abort(2));
  EXPECT_LT(e.stats().kv_blocks_used, used_before);
  EXPECT_EQ(e.stats().running, 1);
  auto out = run_all(e);
  EXPECT_TRUE(out.find(2) == out.end());
  EXPECT_EQ(out[1].size(), 99u);  // the 100th came from the first step... minus the one before
}

TEST(Engine, DeadlinesArePureFunctionsOfState) {
  // Two engines fed the same requests at the same times agree on every deadline, however
  // late their drivers complete the steps.
  Engine a(simple_params()), b(simple_params());
  for (auto* e : {&a, &b}) {
    ASSERT_TRUE(e->submit(make_req(1, 50, 10, 1), 0.0));
    ASSERT_TRUE(e->submit(make_req(2, 80, 7, 2), 0.0));
  }
  std::vector<StepResult> sa, sb;
  run_all(a, &sa);
  run_all(b, &sb);
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) EXPECT_DOUBLE_EQ(sa[i].end, sb[i].end);
}

TEST(NaturalStop, DeterministicAndShapedByTheDistribution) {
  OutputLenDist d = OutputLenDist::parse("lognormal:200:0.5");
  EXPECT_EQ(d.draw(12345), d.draw(12345));
  std::vector<std::int64_t> v;
  for (std::uint64_t s = 1; s <= 4001; ++s) v.push_back(d.draw(s * 7919));
  std::sort(v.begin(), v.end());
  EXPECT_NEAR(static_cast<double>(v[v.size() / 2]), 200.0, 20.0);  // median
  EXPECT_GT(v[v.size() * 9 / 10], 300);  // spread: exp(0.5 * 1.28) * 200 = 379
  EXPECT_GE(v.front(), d.floor);

  auto u = OutputLenDist::parse("uniform:10:20");
  for (std::uint64_t s = 1; s < 500; ++s) {
    EXPECT_GE(u.draw(s), 10);
    EXPECT_LE(u.draw(s), 20);
  }
  EXPECT_EQ(OutputLenDist::parse("fixed:77").draw(3), 77);
  EXPECT_THROW(OutputLenDist::parse("gauss:1:2"), std::invalid_argument);
  EXPECT_THROW(OutputLenDist::parse("uniform:5:1"), std::invalid_argument);
  EXPECT_THROW(OutputLenDist::parse("fixed:x"), std::invalid_argument);
}

TEST(TextGen, EveryVocabularyPieceIsOneTokenAndOutputsAreDeterministic) {
  for (std::size_t i = 0; i < vocab_size(); ++i) {
    EXPECT_EQ(Tokenizer::count(vocab_piece(static_cast<std::uint16_t>(i))), 1u) << vocab_piece(i);
  }
  auto a = generate_words(99, 300), b = generate_words(99, 300), c = generate_words(100, 300);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::string text;
  for (auto w : a) text += vocab_piece(w);
  EXPECT_EQ(Tokenizer::count(text), 300u);
}

}  // namespace
}  // namespace llmux::sim
