// SPDX-License-Identifier: Apache-2.0
#pragma once
// Freed blocks kept per thread, by size class, for the next allocation of the same class: what
// makes a proxied request allocate nothing in the steady state. Each request creates and destroys
// the same few coroutine frames (the session's read_request, proxy, send and relay, 792 to 1,288
// bytes; Asio's frame per awaited read, 232) and reactor operations (224). mimalloc served them at
// ~170 instructions per allocation and free (callgrind, bench/proxy_instructions.sh's harness: its
// pages empty and refill as requests come and go); from a cache it is a pop and a push.
//
// A block is kept under its usable size rounded down to kGranule (class_of_block) and handed out
// only for a request whose size rounded up (class_for_request) is the same class, so it always
// has the room. The binary takes both sizes from mimalloc's size bins (src/core/heap.cpp): a block
// serves requests from its own bin, as in mimalloc, so nothing gets a larger block than mimalloc
// would give it (a held-open stream's frames cost what they did). Nothing is kept above kMax
// bytes, beyond kDepth blocks of a class or kBytes per thread: a thread holds at most kBytes it
// does not use, and trim() frees the classes no request took back (a kept block pins its
// allocator page).
//
// The llmux binary routes the global operator new and delete through its thread's cache
// (src/core/heap.cpp, where mimalloc is the allocator; not in sanitizer or fuzz builds, whose
// runtimes check every allocation and free); Asio's reactor operations come to operator new by
// SizedAllocator (http::Stream binds it to every plain read and write). Elsewhere, e.g. in the
// unit tests, BlockCache is a class like any other.
//
// Thread safety: each thread has its own cache (thread_blocks()); a block may be freed on a thread
// other than the one that allocated it: it is kept there, or given to std::free.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace llmux::core {

class BlockCache {
 public:
  static constexpr std::size_t kGranule = 16;
  static constexpr std::size_t kMax = 2048;  // the largest class (the relay's frame: 1,288)
  // A worker frees and takes back a handful of blocks of each class per request in flight: 16 per
  // class left 0.014 allocator calls per small request (bench/proxy_instructions.sh, wrk -c16).
  // The byte cap is small because a cache fills with the classes no request takes back: at 2,000
  // held-open streams a 256 KiB cache was full of 2 KiB, 768- and 256-byte blocks, and the memory
  // per held stream was ~0.6 KiB higher than without a cache (bench/gateway_vs_peers.sh (d)).
  static constexpr std::size_t kDepth = 16;         // blocks kept per class
  static constexpr std::size_t kBytes = 64 * 1024;  // bytes kept per thread, all classes

  /// The class a block of `usable` bytes is kept under: its size rounded down to kGranule; 0 when
  /// it is kept under none (smaller than kGranule, larger than kMax + kGranule - 1).
  static constexpr std::size_t class_of_block(std::size_t usable) {
    const std::size_t size_class = usable & ~(kGranule - 1);
    return size_class <= kMax ? size_class : 0;
  }
  /// The class whose blocks serve a request for `size` bytes: `size` rounded up to kGranule (every
  /// block of the class has at least that many); 0 when none does.
  static constexpr std::size_t class_for_request(std::size_t size) {
    const std::size_t size_class = (size + kGranule - 1) & ~(kGranule - 1);
    return size_class <= kMax ? size_class : 0;
  }

  /// A kept block of class `size_class` (non-zero, from class_for_request), or nullptr.
  void* take(std::size_t size_class) noexcept {
    const std::size_t index = size_class / kGranule - 1;
    Node* block = head_[index];
    if (block == nullptr) return nullptr;
    head_[index] = block->next;
    --count_[index];
    taken_[index] = true;
    bytes_ -= size_class;
    return block;
  }

  /// Keeps `block`, of class `size_class` (non-zero, from class_of_block of its usable size); false
  /// when the cache is full for that class or in all, or closed: then the caller frees it.
  bool keep(void* block, std::size_t size_class) noexcept {
    const std::size_t index = size_class / kGranule - 1;
    if (count_[index] >= kDepth || bytes_ + size_class > kBytes || closed_) return false;
    if (!registered_) register_exit();
    head_[index] = ::new (block) Node{head_[index]};
    ++count_[index];
    bytes_ += size_class;
    return true;
  }

  /// Frees every kept block with std::free; with `close`, keeps none from then on (the thread is
  /// ending: its thread_local objects are being destroyed).
  void release(bool close = false) noexcept;

  /// Frees the blocks of every class nothing was taken from since the last trim(). A kept block
  /// keeps its allocator page in use, and a page in use can neither serve another size nor go
  /// back to the system: the classes requests take back stay, the rest go (the gateway's workers
  /// call this every 200 ms).
  void trim() noexcept;

  std::size_t bytes() const { return bytes_; }
  std::size_t count(std::size_t size_class) const { return count_[size_class / kGranule - 1]; }

 private:
  struct Node {
    Node* next;
  };
  static constexpr std::size_t kClasses = kMax / kGranule;

  /// For the thread's own cache (tls_block_cache), arranges for release(true) at the thread's
  /// exit; any other cache is emptied by its owner's release().
  void register_exit() noexcept;

  Node* head_[kClasses] = {};
  std::uint16_t count_[kClasses] = {};
  bool taken_[kClasses] = {};  // taken from since the last trim()
  std::size_t bytes_ = 0;
  bool registered_ = false;
  bool closed_ = false;
};
static_assert(BlockCache::kDepth < UINT16_MAX && BlockCache::kMax % BlockCache::kGranule == 0);

/// The calling thread's cache. Trivially destructible, so it can be used while the thread's other
/// thread_local objects are destroyed (release(true) has emptied and closed it by then).
inline constinit thread_local BlockCache tls_block_cache;
inline BlockCache& thread_blocks() {
  return tls_block_cache;
}

/// An allocator for Asio's operations (associated with a handler by boost::asio::bind_allocator):
/// operator new and sized operator delete, so they come from the thread's cache where the binary
/// routes those through it. Asio's default for a handler without one is std::aligned_alloc.
template <typename T>
struct SizedAllocator {
  using value_type = T;

  SizedAllocator() = default;
  template <typename U>
  SizedAllocator(const SizedAllocator<U>&) noexcept {}

  T* allocate(std::size_t count) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    return static_cast<T*>(::operator new(count * sizeof(T)));
  }
  void deallocate(T* objects, std::size_t count) noexcept {
#if defined(__cpp_sized_deallocation)
    ::operator delete(objects, count * sizeof(T));
#else  // clang before 19 declares the sized form only with -fsized-deallocation (the fuzz build)
    (void)count;
    ::operator delete(objects);
#endif
  }

  template <typename U>
  bool operator==(const SizedAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace llmux::core
