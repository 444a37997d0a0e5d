// SPDX-License-Identifier: Apache-2.0
// core/block_cache.hpp: a kept block serves only requests it has room for, is handed back whole and
// only for its own class; the caps per class and per thread hold; release() frees and can close;
// a thread's own cache is emptied when the thread ends (LeakSanitizer, in the asan-test job).
#include "core/block_cache.hpp"

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

using llmux::core::BlockCache;

// A block whose usable size is `usable`, written end to end (ASan reports a short one).
void* block(std::size_t usable) {
  void* p = std::malloc(usable);
  std::memset(p, 0x5a, usable);
  return p;
}

TEST(BlockCache, AKeptBlockServesOnlyRequestsItHasRoomFor) {
  // For every usable size and request size: when the block's class is the request's, the block
  // holds the request; and each request size has exactly one class.
  for (std::size_t usable = 1; usable <= BlockCache::kMax + 64; ++usable) {
    const std::size_t kb = BlockCache::class_of_block(usable);
    for (std::size_t n = 1; n <= BlockCache::kMax + 64; ++n) {
      const std::size_t kr = BlockCache::class_for_request(n);
      if (kb != 0 && kb == kr) {
        ASSERT_GE(usable, n) << "usable " << usable << " request " << n;
      }
    }
  }
  EXPECT_EQ(BlockCache::class_of_block(BlockCache::kGranule - 1), 0u);  // too small to keep
  EXPECT_EQ(BlockCache::class_for_request(BlockCache::kMax + 1), 0u);   // too large to serve
  EXPECT_EQ(BlockCache::class_of_block(BlockCache::kMax + BlockCache::kGranule - 1),
            BlockCache::kMax);  // rounds down
  EXPECT_EQ(BlockCache::class_for_request(BlockCache::kMax - BlockCache::kGranule + 1),
            BlockCache::kMax);  // rounds up
}

TEST(BlockCache, ABlockComesBackOnlyForItsOwnClassLastInFirstOut) {
  BlockCache cache;
  void* a = block(800);
  void* b = block(800);
  void* c = block(1024);
  ASSERT_TRUE(cache.keep(a, BlockCache::class_of_block(800)));
  ASSERT_TRUE(cache.keep(b, BlockCache::class_of_block(800)));
  ASSERT_TRUE(cache.keep(c, BlockCache::class_of_block(1024)));
  EXPECT_EQ(cache.bytes(), 800u + 800u + 1024u);
  EXPECT_EQ(cache.take(BlockCache::class_for_request(801)), nullptr);  // 816: none kept
  EXPECT_EQ(cache.take(BlockCache::class_for_request(785)), b);        // 800
  EXPECT_EQ(cache.take(BlockCache::class_for_request(800)), a);
  EXPECT_EQ(cache.take(BlockCache::class_for_request(800)), nullptr);
  EXPECT_EQ(cache.count(800), 0u);
  EXPECT_EQ(cache.count(1024), 1u);
  EXPECT_EQ(cache.bytes(), 1024u);
  cache.release();
  EXPECT_EQ(cache.take(1024), nullptr);
  EXPECT_EQ(cache.bytes(), 0u);
  std::free(a);
  std::free(b);
}

TEST(BlockCache, KeepsAtMostDepthBlocksOfAClassAndBytesInAll) {
  BlockCache cache;
  std::vector<void*> refused;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < BlockCache::kDepth + 3; ++i) {
    void* p = block(256);
    if (cache.keep(p, 256)) {
      ++kept;
    } else {
      refused.push_back(p);
    }
  }
  EXPECT_EQ(kept, BlockCache::kDepth);
  EXPECT_EQ(refused.size(), 3u);
  // The largest class, then the next ones, until the bytes cap refuses: never above it.
  std::size_t k = BlockCache::kMax;
  for (int i = 0; i < 10000 && k > 256; ++i) {
    void* p = block(k);
    if (!cache.keep(p, k)) {
      refused.push_back(p);
      if (cache.count(k) < BlockCache::kDepth) break;  // refused for the bytes, not the depth
      k -= BlockCache::kGranule;
    }
    ASSERT_LE(cache.bytes(), BlockCache::kBytes);
  }
  EXPECT_GT(cache.bytes() + k, BlockCache::kBytes);  // the last refusal was for the bytes
  cache.release(true);                               // closed: keeps none from now on
  EXPECT_EQ(cache.bytes(), 0u);
  void* p = block(256);
  EXPECT_FALSE(cache.keep(p, 256));
  std::free(p);
  for (void* q : refused) std::free(q);
}

TEST(BlockCache, TrimFreesTheClassesNothingWasTakenFromSinceTheLastTrim) {
  BlockCache cache;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache.keep(block(512), 512));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cache.keep(block(1024), 1024));
  void* taken = cache.take(512);  // 512 is in use; 1024 is not
  ASSERT_NE(taken, nullptr);
  cache.trim();
  EXPECT_EQ(cache.count(512), 2u);
  EXPECT_EQ(cache.count(1024), 0u);
  EXPECT_EQ(cache.bytes(), 2u * 512);
  cache.trim();  // nothing taken since the last trim: 512 goes too
  EXPECT_EQ(cache.count(512), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_TRUE(cache.keep(taken, 512));  // the cache still keeps blocks after a trim
  EXPECT_EQ(cache.take(512), taken);
  std::free(taken);
}

TEST(BlockCache, AThreadsOwnCacheIsEmptiedWhenTheThreadEnds) {
  // The blocks a thread keeps are freed as it ends; LeakSanitizer (asan-test) fails this test if
  // they are not. What the thread sees of its cache while it runs is checked here.
  std::size_t seen = 0;
  std::thread t([&] {
    BlockCache& mine = llmux::core::thread_blocks();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(mine.keep(block(512), 512));
    seen = mine.count(512);
  });
  t.join();
  EXPECT_EQ(seen, 10u);
}

}  // namespace
