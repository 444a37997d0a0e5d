// SPDX-License-Identifier: Apache-2.0
#pragma once
// Bytes built by appending pieces: the header the gateway writes (the upstream request's head,
// the client's response header) and the request's staged header. An append checks the room once
// and copies; std::string's resize() zero-fills what the copy then overwrites, and its append()
// updates the length and the terminator per call (appending to std::string cost ~2,200
// instructions per small proxied request, measured with callgrind as bench/proxy_instructions.sh
// runs it; ~700 after this and the whole-line copies). The storage grows geometrically and is
// kept by clear(), so a pooled builder (gateway/worker.hpp) allocates nothing in the steady state.
//
// Thread safety: none (one owner).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace llmux {

/// memcpy for the short pieces of a header (a name, ": ", a value), inline: two overlapping
/// fixed-size moves up to 16 bytes instead of a call into libc per piece.
inline void copy_bytes(char* into, const char* from, std::size_t count) {
  if (count >= 16) {
    std::memcpy(into, from, count);
  } else if (count >= 8) {
    std::uint64_t head, tail;
    std::memcpy(&head, from, 8);
    std::memcpy(&tail, from + count - 8, 8);
    std::memcpy(into, &head, 8);
    std::memcpy(into + count - 8, &tail, 8);
  } else if (count >= 4) {
    std::uint32_t head, tail;
    std::memcpy(&head, from, 4);
    std::memcpy(&tail, from + count - 4, 4);
    std::memcpy(into, &head, 4);
    std::memcpy(into + count - 4, &tail, 4);
  } else if (count > 0) {
    into[0] = from[0];
    into[count / 2] = from[count / 2];
    into[count - 1] = from[count - 1];
  }
}

class ByteBuilder {
 public:
  ByteBuilder() = default;
  ByteBuilder(ByteBuilder&& other) noexcept
      : storage_(std::move(other.storage_)), size_(other.size_), cap_(other.cap_) {
    other.size_ = other.cap_ = 0;
  }
  ByteBuilder& operator=(ByteBuilder&& other) noexcept {
    storage_ = std::move(other.storage_);
    size_ = other.size_;
    cap_ = other.cap_;
    other.size_ = other.cap_ = 0;
    return *this;
  }
  ByteBuilder(const ByteBuilder&) = delete;
  ByteBuilder& operator=(const ByteBuilder&) = delete;

  const char* data() const { return storage_.get(); }
  char* data() { return storage_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return cap_; }
  std::string_view view() const { return {storage_.get(), size_}; }
  std::string str() const { return std::string(view()); }

  /// Empty; the storage is kept.
  void clear() { size_ = 0; }
  /// Room for `count` bytes in all, the content kept.
  void reserve(std::size_t count) {
    if (count > cap_) grow_to(count);
  }

  /// `count` more bytes at the end, their content the caller's to write.
  char* extend(std::size_t count) {
    if (cap_ - size_ < count) grow_to(size_ + count);
    char* end = storage_.get() + size_;
    size_ += count;
    return end;
  }
  /// Every piece in order (string views, strings, string literals): one room check for all.
  template <class... Pieces>
  void append(const Pieces&... pieces) {
    char* end = extend((piece_size(pieces) + ...));
    ((end = put(end, pieces)), ...);
  }

 private:
  static std::size_t piece_size(std::string_view piece) { return piece.size(); }
  template <std::size_t N>
  static constexpr std::size_t piece_size(const char (&)[N]) {
    return N - 1;
  }
  static char* put(char* into, std::string_view piece) {
    copy_bytes(into, piece.data(), piece.size());
    return into + piece.size();
  }
  template <std::size_t N>
  static char* put(char* into, const char (&piece)[N]) {
    if constexpr (N > 1)
      std::memcpy(into, piece, N - 1);  // ("" into an empty builder: no memcpy(null))
    return into + N - 1;
  }

  void grow_to(std::size_t wanted) {
    std::size_t cap = cap_ < 256 ? 256 : cap_ * 2;
    if (cap < wanted) cap = wanted;
    auto storage = std::make_unique_for_overwrite<char[]>(cap);
    if (size_ > 0) std::memcpy(storage.get(), storage_.get(), size_);
    storage_ = std::move(storage);
    cap_ = cap;
  }

  std::unique_ptr<char[]> storage_;
  std::size_t size_ = 0, cap_ = 0;
};

}  // namespace llmux
