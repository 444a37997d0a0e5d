// SPDX-License-Identifier: Apache-2.0
#pragma once
// least_inflight: the backend with the fewest requests outstanding at this gateway, relative to
// its weight (a weight-2 backend is as loaded with 4 as a weight-1 one with 2); ties go to the one
// with fewer outstanding tokens (prompt plus requested output, Backend::outstanding_tokens), and
// remaining ties rotate, so an idle fleet is not served by its first backend alone.
//
// In-flight counts are the backends' own (taken with the request's slot when it is sent, given
// back when its response ends or its client leaves). Lock-free; no allocation.
#include <atomic>
#include <cstdint>

#include "policy/policy.hpp"

namespace llmux::policy {

class LeastInflight final : public Policy {
 public:
  std::string_view name() const override { return "least_inflight"; }
  Backend* select(const PickContext&, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;

 private:
  std::atomic<std::uint64_t> rotate_{0};
};

/// True when `left` is less loaded than `right`: in-flight per weight, then outstanding tokens per
/// weight (0: equal). Used by least_inflight and power_of_two.
int compare_load(const Backend& left, const Backend& right);

}  // namespace llmux::policy
