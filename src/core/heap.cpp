// SPDX-License-Identifier: Apache-2.0
// The global operator new and delete of the llmux binary: mimalloc's, with each thread's
// core::BlockCache in front for blocks of kSmall to BlockCache::kMax bytes (core/block_cache.hpp
// says why). A block is kept under its usable size (mi_usable_size: what its size bin holds) and
// handed out for a request whose bin (mi_good_size) is the same, so frees need no size: GCC frees a
// coroutine frame with the unsized operator delete. Every form of new and delete that can meet a
// cached block (plain, nothrow, array, sized) is replaced here; the aligned forms
// (std::align_val_t) stay mimalloc's own, and their blocks never enter the cache.
//
// And aligned_alloc, for the default alignment: Asio takes every operation and coroutine frame of
// its own from std::aligned_alloc(16, n) (n rounded up to 16). Debian's mimalloc (2.0.9) serves an
// aligned request from the current page of its size bin only when that page's free list has a
// block at hand; otherwise, above 128 bytes, it over-allocates n + 15 bytes, one bin up
// (alloc-aligned.c, mi_heap_malloc_zero_aligned_at_fallback; later versions try a plain
// allocation first). The block cache keeps the frees of those bins away from mimalloc, whose free
// lists there then rarely refill: with it, a held stream's 192-byte wait operation sat in a
// 224-byte block and the freed 192-byte blocks stayed behind in their pages. Every block mimalloc
// hands out above 128 bytes is 16-aligned (its bins there are multiples of 16), so such a request
// is served as a plain one.
//
// Linked into the binary only where mimalloc is (src/cli/CMakeLists.txt): sanitizer and fuzz
// builds keep their runtime's new and delete, which check every allocation and free.
#include <mimalloc.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "core/block_cache.hpp"

namespace {

using llmux::core::BlockCache;

// Below this, mimalloc's own thread-local free lists are as cheap as the cache (its bins there
// are 8 bytes apart, finer than the cache's classes).
constexpr std::size_t kSmall = 128;

// The class serving a request of n bytes, by n rounded up to BlockCache::kGranule: the class of
// the bin mimalloc serves that rounded size from (so of every n it rounds from: the bins above
// kSmall are whole multiples of kGranule). Filled as sizes are first asked for (mi_good_size costs
// as much as the rest of an allocation from the cache); written by any thread, always the same
// value.
std::atomic<std::uint16_t> request_class[BlockCache::kMax / BlockCache::kGranule];

std::size_t class_for(std::size_t n) noexcept {
  const std::size_t i = (n - 1) / BlockCache::kGranule;
  std::size_t k = request_class[i].load(std::memory_order_relaxed);
  if (k == 0) {
    k = BlockCache::class_for_request(mi_good_size((i + 1) * BlockCache::kGranule));
    request_class[i].store(static_cast<std::uint16_t>(k == 0 ? 1 : k), std::memory_order_relaxed);
  }
  return k == 1 ? 0 : k;  // 1: served by no class
}

void* allocate(std::size_t n) noexcept {
  if (n - (kSmall + 1) < BlockCache::kMax - kSmall) {  // kSmall < n ≤ kMax
    if (const std::size_t k = class_for(n)) {
      if (void* p = llmux::core::thread_blocks().take(k)) return p;
    }
  }
  return mi_malloc(n);
}

void* allocate_or_throw(std::size_t n) {
  for (;;) {
    if (void* p = allocate(n)) return p;
    std::new_handler h = std::get_new_handler();
    if (h == nullptr) throw std::bad_alloc();
    h();
  }
}

void free_block(void* p) noexcept {
  if (p == nullptr) return;
  const std::size_t k = BlockCache::class_of_block(mi_usable_size(p));
  if (k > kSmall && llmux::core::thread_blocks().keep(p, k)) return;
  mi_free(p);
}

void free_block(void* p, std::size_t n) noexcept {
  if (n <= kSmall) {
    mi_free(p);  // its bin holds at most kSmall bytes: never kept
    return;
  }
  free_block(p);
}

}  // namespace

void* operator new(std::size_t n) {
  return allocate_or_throw(n);
}
void* operator new[](std::size_t n) {
  return allocate_or_throw(n);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate_or_throw(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
  return operator new(n, tag);
}

void operator delete(void* p) noexcept {
  free_block(p);
}
void operator delete[](void* p) noexcept {
  free_block(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  free_block(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  free_block(p);
}
void operator delete(void* p, std::size_t n) noexcept {
  free_block(p, n);
}
void operator delete[](void* p, std::size_t n) noexcept {
  free_block(p, n);
}

extern "C" void* aligned_alloc(std::size_t alignment, std::size_t n) noexcept {
  if (alignment <= alignof(std::max_align_t) && n > kSmall) {
    void* p = mi_malloc(n);
    if (reinterpret_cast<std::uintptr_t>(p) % alignment == 0) return p;  // always, above kSmall
    mi_free(p);
  }
  return mi_aligned_alloc(alignment, n);
}
