// SPDX-License-Identifier: Apache-2.0
// core/heap.cpp, the llmux binary's operator new and delete (linked here as there): a block freed
// by sized or unsized delete serves the next request of its size bin, never one it is too small
// for; repeating the same allocations reuses the same blocks (no allocation in the steady state);
// sizes outside the cached range never enter the cache; a block freed on another thread is kept
// there; an aligned_alloc of the default alignment (Asio's, for its operations and frames) gets a
// block of its own size bin, never one a bin up.
#include <mimalloc.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/block_cache.hpp"

namespace {

using llmux::core::BlockCache;
using llmux::core::thread_blocks;

TEST(Heap, AFreedBlockServesTheNextRequestOfItsSizeSizedOrNot) {
  void* a = ::operator new(900);
  ::operator delete(a);  // unsized, as GCC frees a coroutine frame
  void* b = ::operator new(900);
  EXPECT_EQ(b, a);
  ::operator delete(b, 900);      // sized
  void* c = ::operator new(897);  // the same size bin
  EXPECT_EQ(c, a);
  ::operator delete(c, 897);
}

TEST(Heap, NoBlockIsHandedOutForMoreThanItHolds) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::size_t> size(1, 2 * BlockCache::kMax);
  std::vector<std::pair<void*, std::size_t>> live;
  for (int i = 0; i < 20000; ++i) {
    if (live.size() < 200 && (live.empty() || rng() % 2 == 0)) {
      const std::size_t n = size(rng);
      void* p = ::operator new(n);
      ASSERT_GE(mi_usable_size(p), n) << n;
      std::memset(p, 0x33, n);
      live.emplace_back(p, n);
    } else {
      const std::size_t j = rng() % live.size();
      if (rng() % 2 == 0) {
        ::operator delete(live[j].first, live[j].second);
      } else {
        ::operator delete(live[j].first);
      }
      live[j] = live.back();
      live.pop_back();
    }
  }
  for (auto [p, n] : live) ::operator delete(p, n);
  EXPECT_LE(thread_blocks().bytes(), BlockCache::kBytes);
}

TEST(Heap, RepeatingTheSameAllocationsReusesTheSameBlocks) {
  // A request's frames and operations, as the gateway makes them: the same sizes each time.
  const std::size_t sizes[] = {224, 232, 232, 792, 896, 968, 1288};
  std::set<void*> seen;
  for (int round = 0; round < 1000; ++round) {
    std::vector<void*> got;
    for (std::size_t n : sizes) got.push_back(::operator new(n));
    for (void* p : got) seen.insert(p);
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (i % 2 == 0) {
        ::operator delete(got[i]);
      } else {
        ::operator delete(got[i], sizes[i]);
      }
    }
  }
  EXPECT_EQ(seen.size(), std::size(sizes));  // after the first round, only kept blocks
}

TEST(Heap, SizesOutsideTheCachedRangeAreNeverKept) {
  const std::size_t before = thread_blocks().bytes();
  for (std::size_t n : {std::size_t{8}, std::size_t{64}, std::size_t{128}, BlockCache::kMax + 1,
                        std::size_t{3000}, std::size_t{70000}}) {
    void* p = ::operator new(n);
    ::operator delete(p, n);
    void* q = ::operator new[](n);
    ::operator delete[](q);
    EXPECT_EQ(thread_blocks().bytes(), before) << n;
  }
}

TEST(Heap, ABlockFreedOnAnotherThreadIsKeptThere) {
  void* p = ::operator new(1500);
  void* again = nullptr;
  std::thread t([&] {
    ::operator delete(p);
    again = ::operator new(1500);  // that thread's cache now holds p
    ::operator delete(again, 1500);
  });
  t.join();
  EXPECT_EQ(again, p);
}

TEST(Heap, NothrowAndArrayFormsShareTheCache) {
  void* a = ::operator new(700, std::nothrow);
  ASSERT_NE(a, nullptr);
  ::operator delete(a, std::nothrow);
  void* b = ::operator new[](700);
  EXPECT_EQ(b, a);
  ::operator delete[](b, 700);
  void* c = ::operator new[](700, std::nothrow);
  EXPECT_EQ(c, a);
  ::operator delete[](c);
}

TEST(Heap, AlignedAllocOfTheDefaultAlignmentGetsABlockOfItsOwnBin) {
  // Many at once, so the bin's current page runs out of blocks at hand (where Debian's mimalloc
  // took n + 15 bytes, a bin up), for the sizes Asio asks (multiples of 16).
  for (std::size_t n = 144; n <= 4096; n += 16) {
    SCOPED_TRACE(n);
    std::vector<void*> held;
    for (int i = 0; i < 600; ++i) {
      void* p = std::aligned_alloc(16, n);
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
      ASSERT_EQ(mi_usable_size(p), mi_good_size(n)) << "allocation " << i;
      std::memset(p, 0x44, n);
      held.push_back(p);
      if (i % 3 == 2) {  // some freed along the way, as operations end
        std::free(held[held.size() - 2]);
        held.erase(held.end() - 2);
      }
    }
    for (void* p : held) std::free(p);
  }
  // Larger alignments are still honoured.
  for (std::size_t a : {32, 64, 4096}) {
    void* p = std::aligned_alloc(a, 3 * a);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % a, 0u) << a;
    std::free(p);
  }
}

}  // namespace
