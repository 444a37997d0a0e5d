// SPDX-License-Identifier: Apache-2.0
#pragma once
// The chat template the simulator renders prompts with: Qwen's ChatML, with Qwen3's rule for an
// assistant message's reasoning, into token ids (core/tokenizer.hpp; the special tokens are one
// token each). Pure.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/api.hpp"

namespace llmux::sim {

/// How a chat conversation's end is rendered (vLLM's add_generation_prompt and
/// continue_final_message).
enum class ChatEnding { generation_prompt, closed, final_message_open };

/// Token ids of a chat conversation rendered with Qwen's ChatML template
/// (`<|im_start|>role\ncontent<|im_end|>\n` ... `<|im_start|>assistant\n`); the special tokens
/// are one token each. `final_message_open`: the last message without its end of turn and no
/// generation prompt after it; `final_message_start`, when given, receives where that last
/// message's reasoning and content begin.
std::vector<std::uint32_t> render_chat(const std::vector<Message>& messages,
                                       ChatEnding ending = ChatEnding::generation_prompt,
                                       std::size_t* final_message_start = nullptr);

}  // namespace llmux::sim
