// SPDX-License-Identifier: Apache-2.0
#pragma once
// The OpenAI error body every component answers with:
//   {"error":{"message":"...","type":"...","param":null|"...","code":<status>}}
// (vLLM's nested form, v0.10.1 and later.)
#include <optional>
#include <string>
#include <string_view>

namespace llmux {

/// OpenAI/vLLM error `type` for an HTTP status (400 → "BadRequestError", 404 → "NotFoundError",
/// ...).
std::string_view error_type_for_status(int status);

/// Serialises an error body. `type` empty → derived from `status`.
std::string openai_error_json(int status, std::string_view message, std::string_view type = {},
                              std::optional<std::string_view> param = std::nullopt);

/// The same with a string `code` in place of the status, as OpenAI's own API answers some errors
/// (`"type":"invalid_request_error","code":"invalid_api_key"`, `"code":"rate_limit_exceeded"`).
std::string openai_error_json(int status, std::string_view message, std::string_view type,
                              std::optional<std::string_view> param, std::string_view code);

}  // namespace llmux
