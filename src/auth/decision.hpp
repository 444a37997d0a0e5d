// SPDX-License-Identifier: Apache-2.0
#pragma once
// What an auth or quota check answers: allowed, or the HTTP error to send instead.
#include <cstdint>
#include <string>

namespace llmux::auth {

struct Decision {
  int status = 200;     // 200: allowed; otherwise 401, 403 or 429, to send as is
  std::string body;     // the OpenAI-shaped error body (application/json) when not allowed
  std::string message;  // its message alone (for a client of another dialect: Anthropic's)
  /// 429 only: whole seconds for the `Retry-After` header (at least 1); 0 otherwise.
  std::int64_t retry_after_s = 0;

  bool ok() const { return status == 200; }
};

}  // namespace llmux::auth
