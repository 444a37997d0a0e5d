// SPDX-License-Identifier: Apache-2.0
#include "sim/engine.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <tuple>

namespace llmux::sim {

double EngineParams::step_time(int batch, std::int64_t decode_ctx,
                               std::int64_t prefill_tokens) const {
  if (batch <= 0) return 0.0;
  const double base = batch_exp == 0.0 ? t0 : t0 * std::pow(static_cast<double>(batch), batch_exp);
  double seconds = std::max(base + m * (batch - 1), c * batch);
  seconds += ctx_cost * static_cast<double>(decode_ctx);
  if (prefill_tokens > 0) {
    if (prefill_rate > 0) seconds += static_cast<double>(prefill_tokens) / prefill_rate;
    seconds += prefill_overhead;
  }
  return std::max(seconds, 0.0);
}

double EngineStats::kv_usage() const {
  return num_kv_blocks > 0 ? static_cast<double>(kv_blocks_used) / num_kv_blocks : 0.0;
}

Engine::Engine(EngineParams params) : p_(params) {
  if (p_.block_size < 1) p_.block_size = 1;
  if (p_.max_num_seqs < 1) p_.max_num_seqs = 1;
  if (p_.max_num_batched_tokens < 1) p_.max_num_batched_tokens = 1;
  if (p_.num_kv_blocks < 1) p_.num_kv_blocks = 1;
  blocks_.resize(static_cast<std::size_t>(p_.num_kv_blocks));
  free_list_.reserve(blocks_.size());
  for (std::int64_t b = p_.num_kv_blocks - 1; b >= 0; --b) free_list_.push_back(b);
  stats_.num_kv_blocks = p_.num_kv_blocks;
}

std::int64_t Engine::blocks_for(std::int64_t tokens) const {
  return (tokens + p_.block_size - 1) / p_.block_size;
}

std::int64_t Engine::free_blocks() const {
  return static_cast<std::int64_t>(free_list_.size() + lru_.size());
}

bool Engine::submit(SeqRequest req, double now) {
  if (req.prompt.empty() || req.output.empty()) return false;
  const auto ctx = static_cast<std::int64_t>(req.prompt.size() + req.output.size() - 1);
  if (blocks_for(ctx) > p_.num_kv_blocks) return false;
  const auto id = req.id;
  if (seqs_.count(id)) return false;
  Seq sequence;
  sequence.tokens = req.prompt;
  sequence.target = static_cast<std::int32_t>(sequence.tokens.size());
  sequence.req = std::move(req);
  sequence.arrival = now;
  const Seq& stored = seqs_.emplace(id, std::move(sequence)).first->second;
  enqueue_waiting(stored, false);
  if (!busy_) plan_step(now);
  return true;
}

bool Engine::abort(std::uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  Seq& sequence = it->second;
  release_blocks(sequence);  // a waiting sequence holds blocks while its KV loads
  if (sequence.running) {
    running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
  } else {
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
  }
  seqs_.erase(it);
  return true;
}

std::optional<double> Engine::deadline() const {
  if (!busy_) return first_load_arrival();
  return step_end_;
}

std::optional<SeqInfo> Engine::info(std::uint64_t id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return std::nullopt;
  const Seq& sequence = it->second;
  SeqInfo sequence_info;
  sequence_info.prompt_tokens = static_cast<std::int32_t>(sequence.req.prompt.size());
  sequence_info.cached_tokens = std::max(sequence.cached_tokens, 0);
  sequence_info.generated = sequence.generated;
  sequence_info.running = sequence.running;
  sequence_info.preemptions = sequence.preemptions;
  return sequence_info;
}

std::uint64_t Engine::block_hash(const Seq& sequence, std::int32_t block_index) const {
  // Chained hash: a block's identity includes every token before it, as in vLLM.
  std::uint64_t chained = 0x9e3779b97f4a7c15ull;
  for (std::int32_t i = 0; i <= block_index; ++i) {
    chained =
        XXH3_64bits_withSeed(sequence.tokens.data() + static_cast<std::size_t>(i) * p_.block_size,
                             sizeof(std::uint32_t) * p_.block_size, chained);
  }
  return chained;
}

std::optional<std::int64_t> Engine::alloc_block() {
  std::int64_t block;
  if (!free_list_.empty()) {
    block = free_list_.back();
    free_list_.pop_back();
  } else if (!lru_.empty()) {
    block = lru_.front();  // evict the least recently used cached block
    lru_.pop_front();
    Block& blk = blocks_[block];
    auto it = cached_.find(blk.hash);
    if (it != cached_.end() && it->second == block) cached_.erase(it);
    blk.has_hash = false;
  } else {
    return std::nullopt;
  }
  blocks_[block].ref = 1;
  ++used_blocks_;
  return block;
}

void Engine::release_blocks(Seq& sequence) {
  // Last blocks first, so a prompt's tail is evicted before its head.
  for (auto it = sequence.blocks.rbegin(); it != sequence.blocks.rend(); ++it) {
    Block& blk = blocks_[*it];
    if (--blk.ref == 0) {
      --used_blocks_;
      if (blk.has_hash) {
        blk.lru = lru_.insert(lru_.end(), *it);
      } else {
        free_list_.push_back(*it);
      }
    }
  }
  sequence.blocks.clear();
  sequence.hashed_blocks = 0;
}

bool Engine::ensure_blocks(Seq& sequence, std::int32_t upto_tokens) {
  const auto need = blocks_for(upto_tokens);
  while (static_cast<std::int64_t>(sequence.blocks.size()) < need) {
    auto block = alloc_block();
    if (!block) return false;
    sequence.blocks.push_back(*block);
  }
  return true;
}

void Engine::register_full_blocks(Seq& sequence) {
  if (!p_.enable_prefix_caching) return;
  const std::int32_t full = sequence.computed / p_.block_size;
  if (full <= sequence.hashed_blocks) return;
  std::uint64_t chained = sequence.hashed_blocks > 0
                              ? block_hash(sequence, sequence.hashed_blocks - 1)
                              : 0x9e3779b97f4a7c15ull;
  for (std::int32_t i = sequence.hashed_blocks; i < full; ++i) {
    chained =
        XXH3_64bits_withSeed(sequence.tokens.data() + static_cast<std::size_t>(i) * p_.block_size,
                             sizeof(std::uint32_t) * p_.block_size, chained);
    Block& blk = blocks_[sequence.blocks[i]];
    if (!blk.has_hash && !cached_.count(chained)) {
      blk.hash = chained;
      blk.has_hash = true;
      cached_.emplace(chained, sequence.blocks[i]);
    }
  }
  sequence.hashed_blocks = full;
}

Engine::Admission Engine::try_admit(Seq& sequence, double start, double& blocking_seconds) {
  const auto len = static_cast<std::int32_t>(sequence.tokens.size());
  // Longest cached prefix, in whole blocks; at least one token is always computed.
  std::vector<std::int64_t> hits;
  if (p_.enable_prefix_caching) {
    const std::int32_t max_hit = (len - 1) / p_.block_size;
    std::uint64_t chained = 0x9e3779b97f4a7c15ull;
    for (std::int32_t i = 0; i < max_hit; ++i) {
      chained =
          XXH3_64bits_withSeed(sequence.tokens.data() + static_cast<std::size_t>(i) * p_.block_size,
                               sizeof(std::uint32_t) * p_.block_size, chained);
      auto it = cached_.find(chained);
      if (it == cached_.end()) break;
      hits.push_back(it->second);
    }
  }
  std::int64_t hits_evictable = 0;
  for (auto block : hits) hits_evictable += blocks_[block].ref == 0;
  const std::int64_t needed = blocks_for(len) - static_cast<std::int64_t>(hits.size());
  if (free_blocks() - hits_evictable < needed) return Admission::no_room;

  for (auto block : hits) {
    Block& blk = blocks_[block];
    if (blk.ref++ == 0) {
      lru_.erase(blk.lru);
      ++used_blocks_;
    }
    sequence.blocks.push_back(block);
  }
  const auto hit_tokens = static_cast<std::int32_t>(hits.size()) * p_.block_size;
  sequence.computed = hit_tokens;
  sequence.hashed_blocks = static_cast<std::int32_t>(hits.size());
  [[maybe_unused]] bool ok = ensure_blocks(sequence, len);
  assert(ok);
  if (p_.enable_prefix_caching) {
    stats_.prefix_queries += static_cast<std::uint64_t>(len);
    stats_.prefix_hits += static_cast<std::uint64_t>(hit_tokens);
  }
  if (sequence.req.remote_prefill) return begin_load(sequence, hit_tokens, start, blocking_seconds);
  if (sequence.cached_tokens < 0) sequence.cached_tokens = hit_tokens;
  sequence.running = true;
  sequence.admit_order = ++admit_counter_;
  return Admission::admitted;
}

void Engine::preempt(Seq& sequence) {
  // Recompute mode (vLLM's default): drop the KV, keep the tokens generated so far, go back
  // to the head of the queue. Blocks already hashed stay in the prefix cache until evicted.
  release_blocks(sequence);
  sequence.computed = 0;
  sequence.target = static_cast<std::int32_t>(sequence.tokens.size());
  sequence.running = false;
  ++sequence.preemptions;
  ++stats_.preemptions;
  running_.erase(std::remove(running_.begin(), running_.end(), sequence.req.id), running_.end());
  enqueue_waiting(sequence, true);
  pending_.preempted.push_back(sequence.req.id);
}

std::uint64_t Engine::preemption_victim() const {
  if (!p_.priority_scheduling) return running_.back();
  // vLLM: max(self.running, key=lambda r: (r.priority, r.arrival_time)); the first of equals.
  std::uint64_t victim = running_.front();
  const Seq* worst = &seqs_.at(victim);
  for (std::uint64_t id : running_) {
    const Seq& sequence = seqs_.at(id);
    if (std::tie(sequence.req.priority, sequence.arrival) >
        std::tie(worst->req.priority, worst->arrival)) {
      victim = id;
      worst = &sequence;
    }
  }
  return victim;
}

void Engine::enqueue_waiting(const Seq& sequence, bool preempted) {
  if (!p_.priority_scheduling) {
    if (preempted)
      waiting_.push_front(sequence.req.id);
    else
      waiting_.push_back(sequence.req.id);
    return;
  }
  // Ordered by (priority, arrival), a preempted request back among them by its own.
  const auto before = std::find_if(waiting_.begin(), waiting_.end(), [&](std::uint64_t id) {
    const Seq& other = seqs_.at(id);
    return std::tie(sequence.req.priority, sequence.arrival) <
           std::tie(other.req.priority, other.arrival);
  });
  waiting_.insert(before, sequence.req.id);
}

void Engine::plan_step(double start) {
  pending_ = StepResult{};
  pending_.start = start;
  planned_.clear();
  std::int32_t budget = p_.max_num_batched_tokens;
  std::int64_t decode_ctx = 0, prefill_tokens = 0;

  // 1. Running sequences first (decode one token, or the next chunk of their prefill).
  for (std::size_t k = 0; k < running_.size() && budget > 0;) {
    Seq& sequence = seqs_.at(running_[k]);
    const std::int32_t chunk = std::min(sequence.target - sequence.computed, budget);
    bool preempted_self = false;
    while (!ensure_blocks(sequence, sequence.computed + chunk)) {
      // Out of KV: preempt the newest running sequence, or the lowest in priority (possibly
      // this one).
      const std::uint64_t victim_id = preemption_victim();
      Seq& victim = seqs_.at(victim_id);
      if (&victim == &sequence) {
        preempt(sequence);
        preempted_self = true;
        break;
      }
      // One planned earlier in this step leaves the step: its work and budget are undone.
      const auto position = std::find(running_.begin(), running_.end(), victim_id);
      if (static_cast<std::size_t>(position - running_.begin()) < k) {
        const auto planned =
            std::find_if(planned_.begin(), planned_.end(),
                         [&](const Planned& entry) { return entry.id == victim_id; });
        if (planned != planned_.end()) {
          budget += planned->tokens;
          if (planned->decode_context > 0)
            decode_ctx -= planned->decode_context;
          else
            prefill_tokens -= planned->tokens;
          planned_.erase(planned);
        }
        --k;  // running_ shifts down by one below sequence
      }
      preempt(victim);
    }
    if (preempted_self) continue;  // running_[k] is now the next sequence
    const bool decoding = sequence.generated > 0 && sequence.target - sequence.computed == 1;
    std::int64_t decode_context = 0;
    if (decoding) {
      decode_context = sequence.computed + 1;
      decode_ctx += decode_context;
    } else {
      prefill_tokens += chunk;
    }
    planned_.push_back({sequence.req.id, chunk, decode_context});
    budget -= chunk;
    ++k;
  }

  // 2. Waiting sequences in their queue's order, while there is room — unless this step
  // preempted a running one (vLLM v1: `if not preempted_reqs`). A sequence whose KV is still
  // arriving is skipped (vLLM: WAITING_FOR_REMOTE_KVS), one whose KV is in starts running.
  double blocking_seconds = 0;
  for (std::size_t w = 0; pending_.preempted.empty() && w < waiting_.size() && budget > 0 &&
                          static_cast<int>(running_.size()) < p_.max_num_seqs;) {
    Seq& sequence = seqs_.at(waiting_[w]);
    if (sequence.loading) {
      if (sequence.loaded_at > start) {
        ++w;
        continue;
      }
      finish_load(sequence);
    } else {
      const Admission admission = try_admit(sequence, start, blocking_seconds);
      if (admission == Admission::no_room) break;
      if (admission == Admission::loading) {
        ++w;
        continue;
      }
    }
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(w));
    running_.push_back(sequence.req.id);
    const std::int32_t chunk = std::min(sequence.target - sequence.computed, budget);
    prefill_tokens += chunk;
    planned_.push_back({sequence.req.id, chunk});
    pending_.scheduled.push_back(sequence.req.id);
    budget -= chunk;
  }

  if (planned_.empty()) {
    busy_ = false;
    return;
  }
  pending_.batch = static_cast<int>(planned_.size());
  pending_.prefill_tokens = prefill_tokens;
  step_start_ = start;
  step_end_ = start + p_.step_time(pending_.batch, decode_ctx, prefill_tokens) + blocking_seconds;
  busy_ = true;
}

StepResult Engine::complete_step() {
  if (!busy_) {  // idle until a KV load arrived: plan from then on
    const double arrival = first_load_arrival().value_or(step_end_);
    StepResult woke;
    woke.start = woke.end = arrival;
    plan_step(arrival);
    return woke;
  }
  StepResult result = std::move(pending_);
  result.end = step_end_;
  ++stats_.steps;
  for (const Planned& entry : planned_) {
    auto it = seqs_.find(entry.id);
    if (it == seqs_.end()) continue;  // aborted during the step
    Seq& sequence = it->second;
    if (!sequence.running) continue;
    sequence.computed += entry.tokens;
    register_full_blocks(sequence);
    if (sequence.computed < sequence.target) continue;  // prefill not finished yet
    const std::int32_t idx = sequence.generated;
    if (idx == 0) stats_.prompt_tokens += sequence.req.prompt.size();
    ++sequence.generated;
    ++stats_.generation_tokens;
    const bool last = sequence.generated >= static_cast<std::int32_t>(sequence.req.output.size());
    result.tokens.push_back({entry.id, idx, last,
                             idx == 0 ? std::max(sequence.cached_tokens, 0) : 0,
                             idx == 0 ? sequence.external_tokens : 0});
    if (last) {
      if (sequence.req.hold_on_finish) {
        held_[entry.id] = std::move(sequence.blocks);  // still referenced: counted as used
        sequence.blocks.clear();
      }
      release_blocks(sequence);
      running_.erase(std::remove(running_.begin(), running_.end(), entry.id), running_.end());
      seqs_.erase(it);
    } else {
      sequence.tokens.push_back(sequence.req.output[idx]);
      sequence.target = static_cast<std::int32_t>(sequence.tokens.size());
    }
  }
  busy_ = false;
  planned_.clear();
  pending_ = StepResult{};
  if (!running_.empty() || !waiting_.empty()) plan_step(step_end_);
  return result;
}

EngineStats Engine::stats() const {
  EngineStats snapshot = stats_;
  snapshot.running = static_cast<int>(running_.size());
  snapshot.waiting = static_cast<int>(waiting_.size());
  snapshot.kv_blocks_used = used_blocks_;
  snapshot.kv_blocks_cached = static_cast<std::int64_t>(cached_.size());
  for (const auto& [id, blocks] : held_)
    snapshot.kv_blocks_held += static_cast<std::int64_t>(blocks.size());
  for (const auto& [id, sequence] : seqs_) snapshot.loading += sequence.loading ? 1 : 0;
  return snapshot;
}

}  // namespace llmux::sim
