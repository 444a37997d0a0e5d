// SPDX-License-Identifier: Apache-2.0
#pragma once
// Token counts for every stream: a streaming chat or completions request whose client did not
// ask for `stream_options.include_usage` is sent upstream asking for it, and the usage-only chunk
// that answer ends with (`"choices":[]` and a `usage` object, just before `data: [DONE]`) is
// removed before the client sees it. The gateway's taps then count every stream's tokens
// (metrics, the adaptive policy) while the client gets exactly the stream it asked for.
//
// Pure functions: no I/O, no state; unit-tested and fuzzed (tests/fuzz/body_fuzz.cpp).
#include <cstddef>
#include <string>
#include <string_view>

#include "gateway/request_view.hpp"

namespace llmux::gateway {

/// What goes before the client's body, whose first '{' it replaces.
inline constexpr std::string_view kUsagePrefix = R"({"stream_options":{"include_usage":true},)";

/// The body sent upstream when the gateway asks for usage: kUsagePrefix then the client's body
/// after its opening brace (no copy), or a whole new body (`owned`) when the client's already had
/// a `stream_options` field, which is then re-serialised with `include_usage: true` added.
struct UsageRequest {
  bool asked = false;  // false: the client's body goes unchanged
  std::size_t skip = 0;
  std::string owned;
  /// The bytes to send in place of `body`, in order (the second may be empty).
  std::string_view first(const std::string& body) const {
    return !asked           ? std::string_view(body)
           : !owned.empty() ? std::string_view(owned)
                            : kUsagePrefix;
  }
  std::string_view second(const std::string& body) const {
    return asked && owned.empty() ? std::string_view(body).substr(skip) : std::string_view();
  }
  std::size_t size(const std::string& body) const {
    return first(body).size() + second(body).size();
  }
};

/// True for the paths whose streams end with a usage chunk when asked (chat, completions).
bool streams_usage_on_request(std::string_view path);

/// For a streaming request to such a path whose client did not ask for usage: the body that
/// asks for it. Nothing (asked false) for anything else, or a body that is not a JSON object.
UsageRequest ask_for_usage(std::string_view method, std::string_view path, const std::string& body,
                           const BodyFields& fields);

/// In `data[0, size)` (whole SSE events, as the relay cuts them): the byte range [begin, end) of
/// the first event that carries usage only — its data a JSON object whose `choices` is an empty
/// array and whose `usage` is an object. {size, size} when there is none.
struct ByteRange {
  std::size_t begin = 0, end = 0;
  bool empty() const { return begin == end; }
};
ByteRange find_usage_only_event(const char* data, std::size_t size);

}  // namespace llmux::gateway
