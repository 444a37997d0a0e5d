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

}  // namespace llmux
