// SPDX-License-Identifier: Apache-2.0
#pragma once
// The simulator's engine: one vLLM-style scheduler with continuous batching, a paged KV cache
// with prefix caching, chunked prefill and preemption.
//
// It is a pure state machine: no clocks, no I/O, no threads. Time is model time in seconds and
// is only ever given to it. The driver (sim/driver.cpp) asks `deadline()` for the end of the
// step in progress, sleeps until then (scaled by --time-scale) and calls `complete_step()`,
// which returns what happened in that step and plans the next one from the same absolute
// deadline, so a late driver catches up instead of drifting.
//
// Step time (see docs/sim.md):
//   t_step = max(t0·B^batch_exp + m·(B−1), c·B) + ctx_cost·Σ(context of decoding sequences)
//            + prefill_tokens / prefill_rate + (prefill_tokens > 0 ? prefill_overhead : 0)
// where B is the number of sequences in the step (decoding or prefilling); batch_exp is 0 (a
// constant floor) unless a preset fits it.
//
// Not thread-safe: one engine belongs to one thread.
#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/kv_transfer.hpp"

namespace llmux::sim {

struct EngineParams {
  // Step time (seconds).
  double t0 = 0.0199;             // memory-bound floor: one sequence alone
  double batch_exp = 0.0;         // the floor grows as B^batch_exp (0: constant)
  double m = 0.00094;             // memory-bound slope: each further sequence in the batch
  double c = 0.00285;             // compute-bound cost per sequence in the batch
  double ctx_cost = 0.0;          // per context token of every decoding sequence, per step
  double prefill_rate = 8000.0;   // prompt tokens per second of prefill
  double prefill_overhead = 0.0;  // fixed cost of a step that carries prefill work
  // Scheduler.
  int max_num_seqs = 256;
  int max_num_batched_tokens = 8192;  // token budget per step (chunked prefill)
  /// vLLM's --scheduling-policy: false "fcfs"; true "priority", as vLLM v1 does it
  /// (vllm/v1/core/sched/scheduler.py, request_queue.py): waiting requests ordered by
  /// (priority, arrival); when a running request cannot get KV blocks, the running request
  /// with the largest (priority, arrival) is preempted, possibly itself. Either way waiting
  /// requests never preempt, and a step that preempted admits none.
  bool priority_scheduling = false;
  // KV cache.
  int block_size = 16;
  std::int64_t num_kv_blocks = 1 << 20;
  bool enable_prefix_caching = true;
  // KV transfer from a remote producer (prefill/decode disaggregation, sim/kv_transfer.hpp).
  KvLink kv_link;

  /// Step time for a batch of `batch` sequences with `decode_ctx` context tokens being
  /// decoded and `prefill_tokens` prompt tokens prefilled in the step.
  double step_time(int batch, std::int64_t decode_ctx, std::int64_t prefill_tokens) const;
};

/// A request as the engine sees it: token ids in, a fixed list of token ids out.
/// The API layer decides the output (natural stop, max_tokens); the engine decides when.
struct SeqRequest {
  std::uint64_t id = 0;
  std::vector<std::uint32_t> prompt;  // token ids of the prompt (non-empty)
  std::vector<std::uint32_t> output;  // token ids that will be generated (non-empty)
  int priority = 0;                   // with priority_scheduling: lower runs first
  /// A consumer's request whose KV a producer holds for `remote_tokens` prompt tokens: at
  /// admission the prompt less its local prefix hit and less its last token (which the consumer
  /// computes itself, as vLLM does) is loaded over the link instead of prefilled.
  bool remote_prefill = false;
  std::int32_t remote_tokens = 0;
  /// A producer's request (do_remote_decode) that finished by length: its KV blocks stay held
  /// after its last token until release_held(), so a consumer can fetch them.
  bool hold_on_finish = false;
};

struct TokenOut {
  std::uint64_t id;
  std::int32_t index;                // 0-based index in the output
  bool last;                         // the sequence finished with this token
  std::int32_t cached_tokens = 0;    // with index 0: prompt tokens served from the prefix cache
  std::int32_t external_tokens = 0;  // with index 0: of those, loaded from a remote producer
};

/// What one step did, reported when it completes.
struct StepResult {
  double start = 0, end = 0;
  int batch = 0;                         // sequences that ran in the step
  std::int64_t prefill_tokens = 0;       // prompt tokens prefilled in the step
  std::vector<TokenOut> tokens;          // one per sequence that produced a token, in order
  std::vector<std::uint64_t> scheduled;  // sequences that started (or restarted) prefill
  std::vector<std::uint64_t> preempted;  // sequences preempted while planning this step
};

struct SeqInfo {
  std::int32_t prompt_tokens = 0;
  std::int32_t cached_tokens = 0;  // prompt tokens served from the prefix cache (first schedule)
  std::int32_t generated = 0;
  bool running = false;
  int preemptions = 0;
};

struct EngineStats {
  int running = 0;
  int waiting = 0;
  std::int64_t kv_blocks_used = 0;  // blocks referenced by live sequences
  std::int64_t kv_blocks_cached = 0;
  double kv_usage() const;  // fraction of blocks in use (vllm:kv_cache_usage_perc)
  std::int64_t num_kv_blocks = 0;
  // Counters since start.
  std::uint64_t prompt_tokens = 0;  // prompt tokens computed (prefilled), as vLLM counts
  std::uint64_t generation_tokens = 0;
  std::uint64_t preemptions = 0;
  std::uint64_t prefix_queries = 0;  // prompt tokens looked up in the prefix cache
  std::uint64_t prefix_hits = 0;     // of which found cached
  std::uint64_t steps = 0;
  // KV transfer (sim/kv_transfer.hpp).
  std::int64_t kv_blocks_held = 0;            // blocks of finished requests held for a consumer
  int loading = 0;                            // requests whose KV is arriving over the link
  std::uint64_t kv_transfers = 0;             // loads started
  double kv_transfer_bytes = 0;               // bytes they moved
  std::uint64_t external_prefix_queries = 0;  // tokens asked of the connector (vLLM's
  std::uint64_t external_prefix_hits = 0;     // connector prefix-cache stats)
};

class Engine {
 public:
  explicit Engine(EngineParams params);

  const EngineParams& params() const { return p_; }

  /// Queues a request that arrived at `now`. If the engine is idle, a step starts at `now`.
  /// Returns false (and queues nothing) when the request could never fit in the KV cache.
  bool submit(SeqRequest req, double now);

  /// Drops a request wherever it is (waiting, running, in the step in progress) and frees its
  /// KV blocks. Unknown ids are ignored. Returns true if it was found.
  bool abort(std::uint64_t id);

  /// End time of the step in progress; when idle, when the first KV load in flight arrives;
  /// nullopt when there is nothing to wait for.
  std::optional<double> deadline() const;

  /// Completes the step in progress at its deadline and plans the next one starting at that
  /// same instant (when there is work); when idle, plans a step at the load's arrival (an empty
  /// result). Precondition: deadline() has a value.
  StepResult complete_step();

  /// The KV blocks a finished `hold_on_finish` request still holds (null: none held).
  const std::vector<std::int64_t>* held_blocks(std::uint64_t id) const;
  /// Frees a held request's blocks at `now` (fetched by a consumer, or timed out); false when
  /// none are held for it. Waiting requests may start at once.
  bool release_held(std::uint64_t id, double now);

  std::optional<SeqInfo> info(std::uint64_t id) const;
  /// Counters and gauges as of now.
  EngineStats stats() const;

  /// Blocks a prompt of `tokens` tokens (plus one output token) needs; used to refuse requests
  /// that can never be admitted.
  std::int64_t blocks_for(std::int64_t tokens) const;

 private:
  struct Seq {
    SeqRequest req;
    std::vector<std::uint32_t> tokens;  // prompt + generated so far (the context)
    std::int32_t generated = 0;
    std::int32_t computed = 0;       // context tokens whose KV is in the cache
    std::int32_t target = 0;         // tokens to compute before the next token is sampled
    std::int32_t hashed_blocks = 0;  // leading full blocks registered in the prefix cache
    std::vector<std::int64_t> blocks;
    std::int32_t cached_tokens = -1;
    int preemptions = 0;
    bool running = false;
    std::uint64_t admit_order = 0;
    double arrival = 0;  // when it was submitted (model time)
    // KV arriving from a remote producer: blocks allocated, waiting (not running) until then.
    bool loading = false;
    double loaded_at = 0;
    std::int32_t loaded_tokens = 0;    // computed once the load is in
    std::int32_t external_tokens = 0;  // of which loaded over the link
  };
  struct Planned {
    std::uint64_t id;
    std::int32_t tokens;              // tokens computed for it in this step
    std::int64_t decode_context = 0;  // its context, when it decodes in this step (else 0)
  };
  struct Block {
    std::uint64_t hash = 0;
    bool has_hash = false;
    int ref = 0;
    std::list<std::int64_t>::iterator lru;
  };

  void plan_step(double start);
  /// Admission of a waiting sequence at `start`: blocks for its whole prompt (reusing cached
  /// leading blocks), or a KV load begun (sequence.loading), or no room.
  enum class Admission { no_room, admitted, loading };
  Admission try_admit(Seq& sequence, double start, double& blocking_seconds);
  /// A remote-prefill sequence given its blocks: how many prompt tokens cross the link, and
  /// either the load begins (overlapping) or it is done within the admitting step, whose extra
  /// time is returned through `blocking_seconds`.
  Admission begin_load(Seq& sequence, std::int32_t hit_tokens, double start,
                       double& blocking_seconds);
  void finish_load(Seq& sequence);
  std::optional<double> first_load_arrival() const;
  bool ensure_blocks(Seq& sequence, std::int32_t upto_tokens);
  std::optional<std::int64_t> alloc_block();
  void release_blocks(Seq& sequence);
  void register_full_blocks(Seq& sequence);
  void preempt(Seq& sequence);
  /// The running sequence to preempt when one is out of KV blocks: the newest (fcfs), or the
  /// one with the largest (priority, arrival).
  std::uint64_t preemption_victim() const;
  /// Queues a waiting sequence: at the back (fcfs; a preempted one at the front), or in
  /// (priority, arrival) order.
  void enqueue_waiting(const Seq& sequence, bool preempted);
  std::uint64_t block_hash(const Seq& sequence, std::int32_t block_index) const;
  std::int64_t free_blocks() const;

  EngineParams p_;
  std::unordered_map<std::uint64_t, Seq> seqs_;
  std::deque<std::uint64_t> waiting_;
  std::vector<std::uint64_t> running_;  // in admission order
  std::uint64_t admit_counter_ = 0;

  // KV cache.
  std::vector<Block> blocks_;
  std::vector<std::int64_t> free_list_;  // never-hashed free blocks
  std::list<std::int64_t> lru_;          // hashed blocks with ref == 0, oldest first
  std::unordered_map<std::uint64_t, std::int64_t> cached_;             // hash -> block
  std::int64_t used_blocks_ = 0;                                       // blocks with ref > 0
  std::unordered_map<std::uint64_t, std::vector<std::int64_t>> held_;  // finished, held
  double link_free_at_ = 0;  // when the KV link finishes the loads queued on it

  // Step in progress.
  bool busy_ = false;
  double step_start_ = 0, step_end_ = 0;
  std::vector<Planned> planned_;
  StepResult pending_;
  EngineStats stats_;
};

}  // namespace llmux::sim
