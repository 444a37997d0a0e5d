// SPDX-License-Identifier: Apache-2.0
#include "policy/prefix_aware.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "upstream/prefix_table.hpp"

namespace llmux::policy {

namespace {
/// How many requests more than the least loaded a backend may hold and still take a new prefix.
constexpr int kNewPrefixSlack = 4;
}  // namespace

Backend* PrefixAware::select(const PickContext& ctx, std::span<Backend* const> candidates,
                             FunctionRef<bool(const Backend&)> accept) {
  // The guard: a fleet out of balance is balanced first, whatever is cached where.
  int lo = -1, hi = 0;
  for (const Backend* b : candidates) {
    if (!accept(*b)) continue;
    const int n = b->inflight.load(std::memory_order_relaxed);
    lo = lo < 0 ? n : std::min(lo, n);
    hi = std::max(hi, n);
  }
  if (lo < 0) return nullptr;
  thread_local std::vector<std::uint64_t> hashes;
  hashes.clear();
  upstream::prefix_hashes(ctx.prompt, s_.block_chars, s_.max_blocks, hashes);
  const bool hint = !ctx.prompt_cache_key.empty();
  const std::uint64_t hint_h = hint ? upstream::hint_hash(ctx.prompt_cache_key) : 0;

  Backend* chosen = nullptr;
  if (hi > s_.balance_abs && hi > s_.balance_rel * lo) {
    chosen = least_.select(ctx, candidates, accept);
    counts_.by_guard.fetch_add(1, std::memory_order_relaxed);
  } else {
    Backend* best = nullptr;
    std::size_t best_match = 0;
    bool best_hint = false;
    for (Backend* b : candidates) {
      if (!accept(*b)) continue;
      const upstream::PrefixTable* t = b->prefix.load(std::memory_order_acquire);
      if (!t) continue;
      const std::size_t m = t->match(hashes);
      const bool h = hint && t->contains(hint_h);
      // A held cache hint counts as the longest match; then blocks matched; then load.
      const bool better =
          !best || (h && !best_hint) ||
          (h == best_hint && (m > best_match || (m == best_match && compare_load(*b, *best) < 0)));
      if (better) {
        best = b;
        best_match = m;
        best_hint = h;
      }
    }
    const double covered =
        hashes.empty() ? 0.0 : static_cast<double>(best_match) / static_cast<double>(hashes.size());
    if (best && (best_hint || (best_match > 0 && covered >= s_.min_match))) {
      chosen = best;
      counts_.by_prefix.fetch_add(1, std::memory_order_relaxed);
    } else {
      // A new prefix: of the backends within a few requests of the least loaded, the one given
      // the fewest distinct prefixes so far — new prefixes spread evenly, so each backend's cache
      // holds its share (SGLang's router takes the smallest tree likewise).
      auto starts = [](const Backend* b) -> std::uint64_t {
        const upstream::PrefixTable* t = b ? b->prefix.load(std::memory_order_acquire) : nullptr;
        return t ? t->starts() : 0;
      };
      auto eligible = [&](const Backend& b) {
        return accept(b) && b.inflight.load(std::memory_order_relaxed) <= lo + kNewPrefixSlack;
      };
      std::uint64_t fewest = UINT64_MAX;
      for (const Backend* b : candidates)
        if (eligible(*b)) fewest = std::min(fewest, starts(b));
      // Ties as least_inflight breaks them (load, then in turn).
      chosen = least_.select(ctx, candidates,
                             [&](const Backend& b) { return eligible(b) && starts(&b) == fewest; });
      counts_.by_load.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (chosen) {
    upstream::PrefixTable& t = upstream::prefix_table(chosen->prefix, s_.table_blocks);
    t.insert(hashes);
    if (hint) t.insert(std::span(&hint_h, 1));
  }
  return chosen;
}

}  // namespace llmux::policy
