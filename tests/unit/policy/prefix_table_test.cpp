// SPDX-License-Identifier: Apache-2.0
// The approximate index of cached prompt blocks: chained block hashes (a shared prefix gives
// shared leading hashes, and only those), matches counted from the first block, bounded size
// with the oldest entries replaced first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/prefix_table.hpp"

namespace llmux::policy {
namespace {

std::string text(char c, std::size_t n) {
  return std::string(n, c);
}

std::vector<std::uint64_t> hashes(const std::string& t, std::size_t block = 64) {
  std::vector<std::uint64_t> h;
  prefix_hashes(t, block, 1 << 20, h);
  return h;
}

TEST(PrefixHashes, FullBlocksOnlyChainedSoAPrefixSharesLeadingHashesOnly) {
  const std::string sys = text('s', 640);  // 10 blocks
  const auto a = hashes(sys + text('a', 100));
  const auto b = hashes(sys + text('b', 100));
  ASSERT_EQ(a.size(), 11u);  // 740 chars: 11 full blocks, the rest left out
  ASSERT_EQ(b.size(), 11u);
  for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(a[i], b[i]) << i;
  EXPECT_NE(a[10], b[10]);
  // The same block text after a different prefix hashes differently (chained).
  const auto c = hashes(text('x', 64) + text('s', 64));
  const auto d = hashes(text('y', 64) + text('s', 64));
  EXPECT_NE(c[1], d[1]);
  std::vector<std::uint64_t> capped;
  prefix_hashes(sys, 64, 3, capped);
  EXPECT_EQ(capped.size(), 3u);
}

TEST(PrefixTable, MatchCountsLeadingBlocksFound) {
  PrefixTable t(1024);
  const std::string sys = text('s', 640);
  t.insert(hashes(sys + text('a', 128)));
  EXPECT_EQ(t.match(hashes(sys + text('a', 128))), 12u);
  EXPECT_EQ(t.match(hashes(sys + text('b', 128))), 10u);  // the shared system prompt
  EXPECT_EQ(t.match(hashes(text('z', 640))), 0u);
  EXPECT_TRUE(t.contains(hint_hash("conv-1")) == false);
  const std::uint64_t h = hint_hash("conv-1");
  t.insert(std::span(&h, 1));
  EXPECT_TRUE(t.contains(h));
}

TEST(PrefixTable, BoundedTheOldestGoFirst) {
  PrefixTable t(256);
  EXPECT_EQ(t.capacity(), 256u);
  // 64 prompts of 16 blocks (1024 blocks: four times the room), in order.
  std::vector<std::vector<std::uint64_t>> prompts;
  for (int i = 0; i < 64; ++i) {
    prompts.push_back(hashes(std::to_string(i) + text('p', 16 * 64)));
    t.insert(prompts.back());
  }
  // The last ones inserted are mostly there, the first ones mostly gone.
  std::size_t recent = 0, old = 0;
  for (int i = 0; i < 8; ++i) old += t.match(prompts[i]);
  for (int i = 56; i < 64; ++i) recent += t.match(prompts[i]);
  EXPECT_GT(recent, 8u * 16 * 3 / 4);
  EXPECT_LT(old, 8u * 16 / 4);
}

TEST(PrefixTable, RefreshedEntriesSurviveNewOnes) {
  PrefixTable t(64);
  const auto hot = hashes(text('h', 8 * 64));
  t.insert(hot);
  for (int i = 0; i < 40; ++i) {
    t.insert(hot);  // used again and again: refreshed
    t.insert(hashes(std::to_string(i) + text('c', 2 * 64)));
  }
  EXPECT_EQ(t.match(hot), hot.size());
}

TEST(PrefixTable, NothingIsFoundBeforeTheFirstInsert) {
  PrefixTable t(1000);
  EXPECT_EQ(t.capacity(), 1024u);
  const auto h = hashes(text('q', 256));
  EXPECT_EQ(t.match(h), 0u);
  EXPECT_FALSE(t.contains(h[0]));
  EXPECT_EQ(t.starts(), 0u);
  t.insert(h);
  EXPECT_EQ(t.match(h), h.size());
  EXPECT_EQ(t.starts(), 1u);
}

}  // namespace
}  // namespace llmux::policy
