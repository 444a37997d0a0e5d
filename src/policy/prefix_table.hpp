// SPDX-License-Identifier: Apache-2.0
#pragma once
// What prompt prefixes a backend has likely cached: an approximate, bounded index of hashed
// prompt blocks, for the prefix_aware policy (policy/prefix_aware.hpp). vLLM keeps a prompt's KV
// blocks after the request (automatic prefix caching) and reuses them for the next prompt that
// starts the same; the gateway cannot see that cache, so it remembers what it sent where.
//
// A prompt is cut into blocks of a fixed number of characters; block i's hash chains the hashes
// of blocks 0..i (so a hit on block i means the whole prefix up to it matched). The table is
// 4-way set associative with an age per entry: a new block replaces the oldest of its set —
// approximately least-recently-used, in a fixed size, lock-free (relaxed atomics; a lost race
// only makes the index a little less exact).
//
// The entries are allocated at the first insert: a table made for a backend the policy never
// sends a prompt to costs a few bytes.
//
// Thread safety: every call from any thread.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace llmux::policy {

/// The chained block hashes of `text` in blocks of `block_chars` (a last partial block is left
/// out: vLLM caches only full blocks), at most `max_blocks` of them, appended to `out`.
void prefix_hashes(std::string_view text, std::size_t block_chars, std::size_t max_blocks,
                   std::vector<std::uint64_t>& out);
/// The hash of a cache hint (a `prompt_cache_key`), apart from every block hash.
std::uint64_t hint_hash(std::string_view key);

class PrefixTable {
 public:
  /// Room for about `blocks` block hashes (rounded up to a power of two, at least 64).
  explicit PrefixTable(std::size_t blocks);
  ~PrefixTable();
  PrefixTable(const PrefixTable&) = delete;
  PrefixTable& operator=(const PrefixTable&) = delete;

  /// How many of `hashes` from the first are in the table (the cached prefix, in blocks).
  std::size_t match(std::span<const std::uint64_t> hashes) const;
  bool contains(std::uint64_t hash) const;
  /// Records `hashes` as cached (again: refreshes their age).
  void insert(std::span<const std::uint64_t> hashes);
  std::size_t capacity() const { return mask_ + 1; }
  /// Prompts inserted whose first block was not there yet, since the table was made: how many
  /// distinct prefixes were placed on this backend (a policy spreads new prefixes by it).
  std::uint64_t starts() const { return starts_.load(std::memory_order_relaxed); }

 private:
  static constexpr int kWays = 4;
  static constexpr int kAgeBits = 24;
  static constexpr std::uint64_t kAgeMask = (1ull << kAgeBits) - 1;
  // An entry: the hash's high 40 bits (its tag) and a 24-bit age stamp; 0 is empty.
  std::size_t set_of(std::uint64_t hash) const { return (hash & mask_) & ~std::size_t(kWays - 1); }
  static std::uint64_t tag_of(std::uint64_t hash) { return (hash | 1) & ~kAgeMask; }
  /// The entries, allocated by the first insert (null before: nothing is found).
  std::atomic<std::uint64_t>* entries() const { return slots_.load(std::memory_order_acquire); }
  std::atomic<std::uint64_t>* entries_for_insert();
  std::size_t mask_;
  std::atomic<std::atomic<std::uint64_t>*> slots_{nullptr};
  mutable std::atomic<std::uint64_t> clock_{1};
  std::atomic<std::uint64_t> starts_{0};
};

}  // namespace llmux::policy
