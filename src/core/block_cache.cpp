#include "core/block_cache.hpp"

namespace llmux::core {

namespace {
struct ReleaseAtExit {
  ~ReleaseAtExit() { thread_blocks().release(true); }
};
}  // namespace

void BlockCache::release(bool close) noexcept {
  for (std::size_t c = 0; c < kClasses; ++c) {
    while (Node* b = head_[c]) {
      head_[c] = b->next;
      std::free(b);
    }
    count_[c] = 0;
  }
  bytes_ = 0;
  closed_ = close;
}

void BlockCache::trim() noexcept {
  for (std::size_t c = 0; c < kClasses; ++c) {
    if (!taken_[c]) {
      while (Node* b = head_[c]) {
        head_[c] = b->next;
        std::free(b);
        bytes_ -= (c + 1) * kGranule;
      }
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
