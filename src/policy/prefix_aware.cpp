// SPDX-License-Identifier: Apache-2.0
#include "policy/prefix_aware.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "policy/options.hpp"

namespace llmux::policy {

namespace {
/// How many requests more than the least loaded a backend may hold and still take a new prefix.
constexpr int kNewPrefixSlack = 4;
}  // namespace

std::unique_ptr<Policy> PrefixAware::from_options(const Options& options, std::string* error) {
  Settings settings;
  OptionReader reader("prefix_aware", options, error);
  reader.know({"block_chars", "table_blocks", "min_match", "balance_abs", "balance_rel"});
  reader.number("block_chars", settings.block_chars, 8, 65536);
  reader.number("table_blocks", settings.table_blocks, 64, 1 << 26);
  reader.number("min_match", settings.min_match, 0, 1);
  reader.number("balance_abs", settings.balance_abs, 0, 1000000);
  reader.number("balance_rel", settings.balance_rel, 1, 1000);
  if (!reader.done()) return nullptr;
  return std::make_unique<PrefixAware>(settings);
}

void PrefixAware::build(std::span<Backend* const> backends, const Policy* previous) {
  const auto* before = dynamic_cast<const PrefixAware*>(previous);
  if (before && (before->settings_.block_chars != settings_.block_chars ||
                 before->settings_.table_blocks != settings_.table_blocks))
    before = nullptr;  // hashed or sized otherwise: nothing to carry over
  for (const Backend* backend : backends) {
    BackendTable& slot = tables_[static_cast<std::size_t>(backend->index) % tables_.size()];
    slot.uid = backend->uid;
    slot.table = nullptr;
    if (before) {
      for (const BackendTable& kept : before->tables_)
        if (kept.table && kept.uid == backend->uid) slot.table = kept.table;
    }
    if (!slot.table) slot.table = std::make_shared<PrefixTable>(settings_.table_blocks);
  }
}

PrefixTable* PrefixAware::table_for(const Backend& backend) const {
  const BackendTable& slot = tables_[static_cast<std::size_t>(backend.index) % tables_.size()];
  return slot.uid == backend.uid ? slot.table.get() : nullptr;
}

const PrefixTable* PrefixAware::table_of(const Backend& backend) const {
  return table_for(backend);
}

double PrefixAware::cached_share(const PickContext& ctx,
                                 std::span<Backend* const> candidates) const {
  thread_local std::vector<std::uint64_t> hashes;
  hashes.clear();
  prefix_hashes(ctx.prompt, settings_.block_chars, settings_.max_blocks, hashes);
  if (hashes.empty()) return 0.0;
  std::size_t best = 0;
  for (const Backend* backend : candidates)
    if (const PrefixTable* table = table_for(*backend)) best = std::max(best, table->match(hashes));
  return static_cast<double>(best) / static_cast<double>(hashes.size());
}

Backend* PrefixAware::select(const PickContext& ctx, std::span<Backend* const> candidates,
                             FunctionRef<bool(const Backend&)> accept) {
  // The guard: a fleet out of balance is balanced first, whatever is cached where.
  int lowest_inflight = -1, highest_inflight = 0;
  for (const Backend* backend : candidates) {
    if (!accept(*backend)) continue;
    const int inflight = backend->inflight.load(std::memory_order_relaxed);
    lowest_inflight = lowest_inflight < 0 ? inflight : std::min(lowest_inflight, inflight);
    highest_inflight = std::max(highest_inflight, inflight);
  }
  if (lowest_inflight < 0) return nullptr;
  thread_local std::vector<std::uint64_t> hashes;
  hashes.clear();
  prefix_hashes(ctx.prompt, settings_.block_chars, settings_.max_blocks, hashes);
  const bool hint = !ctx.prompt_cache_key.empty();
  const std::uint64_t hint_h = hint ? hint_hash(ctx.prompt_cache_key) : 0;

  Backend* chosen = nullptr;
  if (highest_inflight > settings_.balance_abs &&
      highest_inflight > settings_.balance_rel * lowest_inflight) {
    chosen = least_.select(ctx, candidates, accept);
    counts_.by_guard.fetch_add(1, std::memory_order_relaxed);
  } else {
    Backend* best = nullptr;
    std::size_t best_match = 0;
    bool best_hint = false;
    for (Backend* backend : candidates) {
      if (!accept(*backend)) continue;
      const PrefixTable* table = table_for(*backend);
      if (!table) continue;
      const std::size_t matched = table->match(hashes);
      const bool holds_hint = hint && table->contains(hint_h);
      // A held cache hint counts as the longest match; then blocks matched; then load.
      const bool better =
          !best || (holds_hint && !best_hint) ||
          (holds_hint == best_hint &&
           (matched > best_match || (matched == best_match && compare_load(*backend, *best) < 0)));
      if (better) {
        best = backend;
        best_match = matched;
        best_hint = holds_hint;
      }
    }
    const double covered =
        hashes.empty() ? 0.0 : static_cast<double>(best_match) / static_cast<double>(hashes.size());
    if (best && (best_hint || (best_match > 0 && covered >= settings_.min_match))) {
      chosen = best;
      counts_.by_prefix.fetch_add(1, std::memory_order_relaxed);
    } else {
      // A new prefix: of the backends within a few requests of the least loaded, the one given
      // the fewest distinct prefixes so far — new prefixes spread evenly, so each backend's cache
      // holds its share (SGLang's router takes the smallest tree likewise).
      auto starts = [this](const Backend* backend) -> std::uint64_t {
        const PrefixTable* table = table_for(*backend);
        return table ? table->starts() : 0;
      };
      auto eligible = [&](const Backend& backend) {
        return accept(backend) && backend.inflight.load(std::memory_order_relaxed) <=
                                      lowest_inflight + kNewPrefixSlack;
      };
      std::uint64_t fewest = UINT64_MAX;
      for (const Backend* backend : candidates)
        if (eligible(*backend)) fewest = std::min(fewest, starts(backend));
      // Ties as least_inflight breaks them (load, then in turn).
      chosen = least_.select(ctx, candidates, [&](const Backend& backend) {
        return eligible(backend) && starts(&backend) == fewest;
      });
      counts_.by_load.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (PrefixTable* table = chosen ? table_for(*chosen) : nullptr) {
    table->insert(hashes);
    if (hint) table->insert(std::span(&hint_h, 1));
  }
  return chosen;
}

}  // namespace llmux::policy
