// SPDX-License-Identifier: Apache-2.0
#pragma once
// vLLM's `priority` field in the body sent to a backend with `send_priority: true` (config
// `priorities`): the request's class as vLLM's priority (lower runs first), set whatever the
// client wrote. The client's body (as stream_usage.hpp sends it) goes on unchanged after a
// prefix in the usual case; a body that names `priority` itself, or that the usage request
// rewrote already, is rewritten whole.
//
// Pure: no I/O; unit-tested (tests/unit/gateway/priority_field_test.cpp).
#include <cstddef>
#include <string>
#include <string_view>

#include "gateway/request_view.hpp"
#include "gateway/stream_usage.hpp"

namespace llmux::gateway {

/// The three parts of the body to send, in order.
struct PriorityBody {
  std::string prefix;  // `{"priority":N,` (or without the comma before an empty object's end)
  std::string_view first, second;  // the rest of the body as `usage` sends it, brace cut
  std::string owned;               // a whole rewritten body (then `prefix` is it)
  std::size_t size() const { return prefix.size() + first.size() + second.size(); }
};

/// The body for a backend with send_priority; false (and `out` untouched) for a body that is not
/// a JSON object.
bool body_with_priority(const std::string& body, const UsageRequest& usage,
                        const BodyFields& fields, int priority, PriorityBody& out);

}  // namespace llmux::gateway
