// SPDX-License-Identifier: Apache-2.0
#include "sim/chat_template.hpp"

#include "core/tokenizer.hpp"
#include "sim/input_items.hpp"

namespace llmux::sim {
namespace {

// Qwen's <|im_start|> and <|im_end|>.
constexpr std::uint32_t kImStart = 151644;
constexpr std::uint32_t kImEnd = 151645;

}  // namespace

std::vector<std::uint32_t> render_chat(const std::vector<Message>& messages, ChatEnding ending,
                                       std::size_t* final_message_start) {
  // Qwen3's template shows an assistant message's reasoning only after the last user query (a
  // tool's output is not a query): the thinking of the turn in progress.
  std::size_t last_query = 0;
  for (std::size_t i = 0; i < messages.size(); ++i)
    if (messages[i].role == "user" && !is_tool_result(messages[i])) last_query = i;
  std::vector<std::uint32_t> ids;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Message& message = messages[i];
    const bool last = i + 1 == messages.size();
    ids.push_back(kImStart);
    Tokenizer::encode(message.role, ids);
    Tokenizer::encode("\n", ids);
    if (last && final_message_start) *final_message_start = ids.size();
    if (message.role == "assistant" && i > last_query && !message.reasoning.empty()) {
      Tokenizer::encode("<think>\n", ids);
      Tokenizer::encode(message.reasoning, ids);
      Tokenizer::encode("\n</think>\n\n", ids);
    }
    Tokenizer::encode(message.content, ids);
    if (last && ending == ChatEnding::final_message_open) return ids;
    ids.push_back(kImEnd);
    Tokenizer::encode("\n", ids);
  }
  if (ending == ChatEnding::closed) return ids;
  ids.push_back(kImStart);
  Tokenizer::encode("assistant", ids);
  Tokenizer::encode("\n", ids);
  return ids;
}

}  // namespace llmux::sim
