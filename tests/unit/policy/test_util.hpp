// SPDX-License-Identifier: Apache-2.0
#pragma once
// Backends for policy tests. Backend holds atomics (neither copyable nor movable), so a
// pool owns them and hands out the pointer spans policies take.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace llmux::policy::testing {

class Pool {
 public:
  /// One backend per weight, named "b0", "b1", ..., with index = position and uid = position + 1.
  explicit Pool(std::vector<int> weights) {
    for (std::size_t i = 0; i < weights.size(); ++i) {
      auto b = std::make_unique<Backend>();
      b->name = "b" + std::to_string(i);
      b->index = static_cast<int>(i);
      b->uid = i + 1;
      b->weight = weights[i];
      ptrs_.push_back(b.get());
      owned_.push_back(std::move(b));
    }
  }
  Backend& operator[](std::size_t i) { return *owned_[i]; }
  std::span<Backend* const> all() const { return ptrs_; }
  std::size_t size() const { return ptrs_.size(); }

 private:
  std::vector<std::unique_ptr<Backend>> owned_;
  std::vector<Backend*> ptrs_;
};

inline PickContext request() {
  PickContext ctx;
  ctx.route = "test";
  ctx.method = "POST";
  ctx.path = "/v1/chat/completions";
  ctx.model = "m";
  ctx.stream = true;
  return ctx;
}

}  // namespace llmux::policy::testing
