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

// The class serving a request of `size` bytes, by `size` rounded up to BlockCache::kGranule: the
// class of the bin mimalloc serves that rounded size from (so of every size it rounds from: the
// bins above kSmall are whole multiples of kGranule). Filled as sizes are first asked for
// (mi_good_size costs as much as the rest of an allocation from the cache); written by any thread,
// always the same value.
std::atomic<std::uint16_t> request_class[BlockCache::kMax / BlockCache::kGranule];

std::size_t class_for(std::size_t size) noexcept {
  const std::size_t index = (size - 1) / BlockCache::kGranule;
  std::size_t size_class = request_class[index].load(std::memory_order_relaxed);
  if (size_class == 0) {
    size_class = BlockCache::class_for_request(mi_good_size((index + 1) * BlockCache::kGranule));
    request_class[index].store(static_cast<std::uint16_t>(size_class == 0 ? 1 : size_class),
                               std::memory_order_relaxed);
  }
  return size_class == 1 ? 0 : size_class;  // 1: served by no class
}

void* allocate(std::size_t size) noexcept {
  if (size - (kSmall + 1) < BlockCache::kMax - kSmall) {  // kSmall < size ≤ kMax
    if (const std::size_t size_class = class_for(size)) {
      if (void* block = llmux::core::thread_blocks().take(size_class)) return block;
    }
  }
  return mi_malloc(size);
}

void* allocate_or_throw(std::size_t size) {
  for (;;) {
    if (void* block = allocate(size)) return block;
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) throw std::bad_alloc();
    handler();
  }
}

void free_block(void* block) noexcept {
  if (block == nullptr) return;
  const std::size_t size_class = BlockCache::class_of_block(mi_usable_size(block));
  if (size_class > kSmall && llmux::core::thread_blocks().keep(block, size_class)) return;
  mi_free(block);
}

void free_block(void* block, std::size_t size) noexcept {
  if (size <= kSmall) {
    mi_free(block);  // its bin holds at most kSmall bytes: never kept
    return;
  }
  free_block(block);
}

}  // namespace

void* operator new(std::size_t size) {
  return allocate_or_throw(size);
}
void* operator new[](std::size_t size) {
  return allocate_or_throw(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate_or_throw(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}

void operator delete(void* block) noexcept {
  free_block(block);
}
void operator delete[](void* block) noexcept {
  free_block(block);
}
void operator delete(void* block, const std::nothrow_t&) noexcept {
  free_block(block);
}
void operator delete[](void* block, const std::nothrow_t&) noexcept {
  free_block(block);
}
void operator delete(void* block, std::size_t size) noexcept {
  free_block(block, size);
}
void operator delete[](void* block, std::size_t size) noexcept {
  free_block(block, size);
}

extern "C" void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  if (alignment <= alignof(std::max_align_t) && size > kSmall) {
    void* block = mi_malloc(size);
    if (reinterpret_cast<std::uintptr_t>(block) % alignment == 0)
      return block;  // always, above kSmall
    mi_free(block);
  }
  return mi_aligned_alloc(alignment, size);
}
