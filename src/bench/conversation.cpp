// SPDX-License-Identifier: Apache-2.0
#include "bench/conversation.hpp"

#include <boost/json.hpp>

#include <utility>

namespace llmux::bench {
namespace json = boost::json;

std::string_view to_string(ConversationMode mode) {
  return mode == ConversationMode::replay ? "replay" : "previous";
}

std::optional<ConversationMode> parse_conversation_mode(std::string_view text) {
  if (text == "previous") return ConversationMode::previous;
  if (text == "replay") return ConversationMode::replay;
  return std::nullopt;
}

namespace {

// Input items as the Responses API (and the Codex CLI) writes them.
json::object user_item(std::string_view text) {
  return json::object{
      {"type", "message"},
      {"role", "user"},
      {"content", json::array{json::object{{"type", "input_text"}, {"text", text}}}}};
}

json::object assistant_item(std::string_view text) {
  return json::object{
      {"type", "message"},
      {"role", "assistant"},
      {"content", json::array{json::object{{"type", "output_text"}, {"text", text}}}}};
}

}  // namespace

std::string build_turn_body(const Conversation& conversation, const PromptItem& user,
                            ConversationMode mode, const BodyOptions& opt) {
  json::object body;
  body["model"] = opt.model;
  json::array input;
  if (mode == ConversationMode::replay) {
    for (const ConversationTurn& turn : conversation.history) {
      input.push_back(user_item(turn.user));
      input.push_back(assistant_item(turn.assistant));
    }
  }
  input.push_back(user_item(user.text));
  const bool chained =
      mode == ConversationMode::previous && !conversation.previous_response_id.empty();
  if (!conversation.system.empty() && !chained) body["instructions"] = conversation.system;
  body["input"] = std::move(input);
  const std::optional<std::uint32_t> max_tokens =
      user.max_tokens ? user.max_tokens : opt.max_tokens;
  if (max_tokens) body["max_output_tokens"] = *max_tokens;
  if (mode == ConversationMode::previous) {
    body["store"] = true;
    if (chained) body["previous_response_id"] = conversation.previous_response_id;
  } else {
    body["store"] = false;
    body["prompt_cache_key"] = conversation.key;
  }
  if (opt.temperature) body["temperature"] = *opt.temperature;
  if (opt.ignore_eos) body["ignore_eos"] = true;
  if (opt.stream) body["stream"] = true;
  return json::serialize(body);
}

void finish_turn(Conversation& conversation, const PromptItem& user, bool succeeded,
                 std::string_view response_id, std::string reply) {
  if (!succeeded) return;
  conversation.history.push_back(ConversationTurn{user.text, std::move(reply)});
  conversation.previous_response_id = std::string(response_id);
}

std::string stand_in_reply(std::size_t tokens, std::uint64_t seed) {
  return synthetic_prompt(tokens, seed ^ 0xA5515747A5515747ull);
}

}  // namespace llmux::bench
