// SPDX-License-Identifier: Apache-2.0
// The engine's side of prefill/decode disaggregation: a consumer's request loading its KV over
// the link instead of prefilling it, and a producer's finished request holding its blocks for a
// consumer. As vLLM's scheduler does it (vllm/v1/core/sched/scheduler.py: a request whose KV
// loads asynchronously waits in WAITING_FOR_REMOTE_KVS with its blocks allocated, is skipped
// while it waits, and is scheduled once the load is in with num_computed_tokens = the prompt
// less one token; a connector's request_finished may delay freeing a finished request's blocks).
#include <algorithm>

#include "sim/engine.hpp"

namespace llmux::sim {

Engine::Admission Engine::begin_load(Seq& sequence, std::int32_t hit_tokens, double start,
                                     double& blocking_seconds) {
  const auto len = static_cast<std::int32_t>(sequence.tokens.size());
  // The prompt less its local prefix hit and less its last token: NixlConnector asks for the
  // prompt less the local hit (less the last token for a Mamba/GDN hybrid, whose producer
  // drops it), and the scheduler recomputes the last token after a load in any case.
  std::int32_t covered = len - 1;
  if (sequence.req.remote_tokens > 0) covered = std::min(covered, sequence.req.remote_tokens);
  const std::int32_t external = std::max(covered - hit_tokens, 0);
  stats_.external_prefix_queries += static_cast<std::uint64_t>(len - hit_tokens);
  stats_.external_prefix_hits += static_cast<std::uint64_t>(external);
  sequence.req.remote_prefill = false;  // one transfer per request: a preempted one recomputes
  sequence.admit_order = ++admit_counter_;
  if (external == 0) {  // the local prefix cache had it all
    if (sequence.cached_tokens < 0) sequence.cached_tokens = hit_tokens;
    sequence.running = true;
    return Admission::admitted;
  }
  ++stats_.kv_transfers;
  stats_.kv_transfer_bytes += p_.kv_link.bytes(external);
  sequence.external_tokens = external;
  sequence.loaded_tokens = hit_tokens + external;
  // One link: transfers queue behind each other, so simultaneous ones share its bandwidth.
  const double seconds = p_.kv_link.seconds(external);
  if (!p_.kv_link.overlap) {  // a blocking load: the admitting step waits for it
    blocking_seconds += seconds;
    finish_load(sequence);
    return Admission::admitted;
  }
  link_free_at_ = std::max(link_free_at_, start) + seconds;
  sequence.loading = true;
  sequence.loaded_at = link_free_at_;
  return Admission::loading;
}

void Engine::finish_load(Seq& sequence) {
  sequence.loading = false;
  sequence.computed = sequence.loaded_tokens;
  register_full_blocks(sequence);  // loaded blocks are cached as computed ones (vLLM too)
  if (sequence.cached_tokens < 0) sequence.cached_tokens = sequence.loaded_tokens;
  sequence.running = true;
}

std::optional<double> Engine::first_load_arrival() const {
  std::optional<double> first;
  for (std::uint64_t id : waiting_) {
    const Seq& sequence = seqs_.at(id);
    if (sequence.loading && (!first || sequence.loaded_at < *first)) first = sequence.loaded_at;
  }
  return first;
}

const std::vector<std::int64_t>* Engine::held_blocks(std::uint64_t id) const {
  auto it = held_.find(id);
  return it == held_.end() ? nullptr : &it->second;
}

bool Engine::release_held(std::uint64_t id, double now) {
  auto it = held_.find(id);
  if (it == held_.end()) return false;
  Seq released;
  released.blocks = std::move(it->second);
  held_.erase(it);
  release_blocks(released);
  if (!busy_ && !waiting_.empty()) plan_step(now);  // the freed blocks may admit a waiting one
  return true;
}

}  // namespace llmux::sim
