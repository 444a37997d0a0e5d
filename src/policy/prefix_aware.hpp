// SPDX-License-Identifier: Apache-2.0
#pragma once
// prefix_aware: a request goes to the backend that has most likely cached the start of its
// prompt (vLLM's automatic prefix caching then skips that part of the prefill), unless the fleet
// is out of balance, when load wins.
//
// The policy keeps, for each backend of its route, an approximate index of the prompt blocks
// sent to it (policy/prefix_table.hpp: `block_chars` characters a block — vLLM's 16-token blocks
// are about 64 — `table_blocks` entries, oldest replaced first). The tables are made by build()
// and carried over to the route's next configuration for the backends that stay (same settings):
// a reload does not forget what each backend has cached. A request's prompt (its text, read from
// the body: gateway/request_view.hpp) is matched block by block against each candidate:
//   * imbalanced — the busiest candidate has more than `balance_abs` requests in flight and more
//     than `balance_rel` times the least busy one's: least_inflight (SGLang's router guard);
//   * the best match covers at least `min_match` of the prompt (or the backend holds the
//     request's `prompt_cache_key`): that backend (ties: the less loaded);
//   * otherwise (a new prefix): of the backends within four requests of the least loaded, the
//     one given the fewest distinct prefixes so far — new prefixes spread evenly over the caches.
// The chosen backend then records the prompt's blocks (and its prompt_cache_key).
#include <array>
#include <atomic>
#include <cstddef>
#include <memory>

#include "policy/least_inflight.hpp"
#include "policy/policy.hpp"
#include "policy/prefix_table.hpp"

namespace llmux::policy {

class PrefixAware final : public Policy {
 public:
  struct Settings {
    std::size_t block_chars = 64;
    std::size_t table_blocks = 1 << 18;
    std::size_t max_blocks = 4096;  // of one prompt (256 Ki characters by default)
    double min_match = 0.5;
    int balance_abs = 16;
    double balance_rel = 1.5;
  };
  explicit PrefixAware(Settings settings) : settings_(settings) {}
  /// The policy with its options (`block_chars`, `table_blocks`, `min_match`, `balance_abs`,
  /// `balance_rel`); nullptr and the reason in `*error` for an unknown option or a bad value.
  static std::unique_ptr<Policy> from_options(const Options& options, std::string* error);
  std::string_view name() const override { return "prefix_aware"; }
  bool needs_prompt() const override { return true; }
  /// A table for each of `backends`: the one `previous` kept for it, else a new one.
  void build(std::span<Backend* const> backends, const Policy* previous) override;
  Backend* select(const PickContext& ctx, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;
  /// The best match of the prompt's blocks among the candidates' tables, over its blocks.
  double cached_share(const PickContext& ctx, std::span<Backend* const> candidates) const override;

  /// How the last choices were made (tests, /admin): by prefix, by load (no match), by the guard.
  struct Counts {
    std::atomic<std::uint64_t> by_prefix{0}, by_load{0}, by_guard{0};
  };
  const Counts& counts() const { return counts_; }
  /// The table of `backend` (null when build() did not include it).
  const PrefixTable* table_of(const Backend& backend) const;

 private:
  /// A backend's table, made by build(); shared with the route's next configuration.
  struct BackendTable {
    std::uint64_t uid = 0;  // Backend::uid: a slot index is reused by later backends
    std::shared_ptr<PrefixTable> table;
  };
  PrefixTable* table_for(const Backend& backend) const;
  Settings settings_;
  std::array<BackendTable, 64> tables_;  // by Backend::index
  LeastInflight least_;
  Counts counts_;
};

}  // namespace llmux::policy
