// SPDX-License-Identifier: Apache-2.0
#pragma once
// Random identifiers in the shapes OpenAI/vLLM use (`cmpl-<32 hex>`, `resp_<32 hex>`, ...).
// Thread-safe: each thread has its own generator.
#include <string>
#include <string_view>

namespace llmux {

/// `prefix` followed by `hex_digits` random lowercase hex digits.
std::string random_id(std::string_view prefix, int hex_digits = 32);
/// The same, written over `out` (its memory reused: no allocation once it is large enough).
void random_id_into(std::string& out, std::string_view prefix, int hex_digits = 32);

}  // namespace llmux
