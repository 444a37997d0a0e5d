// SPDX-License-Identifier: Apache-2.0
#include "policy/prefix_table.hpp"

#include <xxhash.h>

#include <bit>

namespace llmux::policy {

void prefix_hashes(std::string_view text, std::size_t block_chars, std::size_t max_blocks,
                   std::vector<std::uint64_t>& out) {
  if (block_chars == 0) return;
  std::uint64_t hash = 0x9e3779b97f4a7c15ull;
  for (std::size_t at = 0, n = 0; at + block_chars <= text.size() && n < max_blocks;
       at += block_chars, ++n) {
    hash = XXH3_64bits_withSeed(text.data() + at, block_chars, hash);
    out.push_back(hash);
  }
}

std::uint64_t hint_hash(std::string_view key) {
  return XXH3_64bits_withSeed(key.data(), key.size(), 0x6b43a9b5d1e3f027ull);
}

PrefixTable::PrefixTable(std::size_t blocks)
    : mask_(std::bit_ceil(std::max<std::size_t>(blocks, 64)) - 1) {}

PrefixTable::~PrefixTable() {
  delete[] slots_.load(std::memory_order_relaxed);
}

std::atomic<std::uint64_t>* PrefixTable::entries_for_insert() {
  if (std::atomic<std::uint64_t>* made = entries()) return made;
  auto* fresh = new std::atomic<std::uint64_t>[mask_ + 1];
  for (std::size_t i = 0; i <= mask_; ++i) fresh[i].store(0, std::memory_order_relaxed);
  std::atomic<std::uint64_t>* expected = nullptr;
  if (slots_.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) return fresh;
  delete[] fresh;  // another thread made them first
  return expected;
}

bool PrefixTable::contains(std::uint64_t hash) const {
  const std::atomic<std::uint64_t>* slots = entries();
  if (!slots) return false;
  const std::size_t set = set_of(hash);
  const std::uint64_t tag = tag_of(hash);
  for (int w = 0; w < kWays; ++w)
    if ((slots[set + w].load(std::memory_order_relaxed) & ~kAgeMask) == tag) return true;
  return false;
}

std::size_t PrefixTable::match(std::span<const std::uint64_t> hashes) const {
  std::size_t matched = 0;
  while (matched < hashes.size() && contains(hashes[matched])) ++matched;
  return matched;
}

void PrefixTable::insert(std::span<const std::uint64_t> hashes) {
  if (hashes.empty()) return;
  if (!contains(hashes[0])) starts_.fetch_add(1, std::memory_order_relaxed);
  std::atomic<std::uint64_t>* slots = entries_for_insert();
  for (const std::uint64_t hash : hashes) {
    const std::uint64_t now = clock_.fetch_add(1, std::memory_order_relaxed) & kAgeMask;
    const std::size_t set = set_of(hash);
    const std::uint64_t tag = tag_of(hash);
    int victim = 0;
    std::uint64_t oldest = 0;
    bool found = false;
    for (int w = 0; w < kWays; ++w) {
      const std::uint64_t entry = slots[set + w].load(std::memory_order_relaxed);
      if ((entry & ~kAgeMask) == tag) {
        victim = w;
        found = true;
        break;
      }
      // Age in stamps (mod 2^24); an empty slot is the oldest of all.
      const std::uint64_t age = entry == 0 ? kAgeMask + 1 : ((now - (entry & kAgeMask)) & kAgeMask);
      if (age > oldest || w == 0) {
        oldest = age;
        victim = w;
      }
    }
    (void)found;
    slots[set + victim].store(tag | now, std::memory_order_relaxed);
  }
}

}  // namespace llmux::policy
