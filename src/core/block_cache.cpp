// SPDX-License-Identifier: Apache-2.0
#include "core/block_cache.hpp"

namespace llmux::core {

namespace {
struct ReleaseAtExit {
  ~ReleaseAtExit() { thread_blocks().release(true); }
};

/// Frees every block of one class's list with std::free; how many there were.
template <typename Node>
std::size_t free_all(Node*& head) noexcept {
  std::size_t freed = 0;
  while (Node* block = head) {
    head = block->next;
    std::free(block);
    ++freed;
  }
  return freed;
}
}  // namespace

void BlockCache::release(bool close) noexcept {
  for (std::size_t c = 0; c < kClasses; ++c) {
    free_all(head_[c]);
    count_[c] = 0;
  }
  bytes_ = 0;
  closed_ = close;
}

void BlockCache::trim() noexcept {
  for (std::size_t c = 0; c < kClasses; ++c) {
    if (!taken_[c]) {
      bytes_ -= free_all(head_[c]) * (c + 1) * kGranule;
      count_[c] = 0;
    }
    taken_[c] = false;
  }
}

void BlockCache::register_exit() noexcept {
  registered_ = true;
  if (this == &tls_block_cache) {
    // Constructed here, on the thread's first kept block; destroyed when the thread ends.
    static thread_local ReleaseAtExit at_exit;
  }
}

}  // namespace llmux::core
