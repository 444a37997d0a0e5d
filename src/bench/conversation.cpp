// SPDX-License-Identifier: Apache-2.0
#include "bench/conversation.hpp"

#include <boost/json.hpp>

#include <utility>

namespace llmux::bench {
namespace json = boost::json;

std::string_view to_string(ConversationMode m) {
  return m == ConversationMode::replay ? "replay" : "previous";
}

std::optional<ConversationMode> parse_conversation_mode(std::string_view s) {
  if (s == "previous") return ConversationMode::previous;
  if (s == "replay") return ConversationMode::replay;
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

std::string build_turn_body(const Conversation& c, const PromptItem& user, ConversationMode mode,
                            const BodyOptions& opt) {
  json::object o;
  o["model"] = opt.model;
  json::array input;
  if (mode == ConversationMode::replay) {
    for (const ConversationTurn& t : c.history) {
      input.push_back(user_item(t.user));
      input.push_back(assistant_item(t.assistant));
    }
  }
  input.push_back(user_item(user.text));
  const bool chained = mode == ConversationMode::previous && !c.previous_response_id.empty();
  if (!c.system.empty() && !chained) o["instructions"] = c.system;
  o["input"] = std::move(input);
  const std::optional<std::uint32_t> max_tokens =
      user.max_tokens ? user.max_tokens : opt.max_tokens;
  if (max_tokens) o["max_output_tokens"] = *max_tokens;
  if (mode == ConversationMode::previous) {
    o["store"] = true;
    if (chained) o["previous_response_id"] = c.previous_response_id;
  } else {
    o["store"] = false;
    o["prompt_cache_key"] = c.key;
  }
  if (opt.temperature) o["temperature"] = *opt.temperature;
  if (opt.ignore_eos) o["ignore_eos"] = true;
  if (opt.stream) o["stream"] = true;
  return json::serialize(o);
}

void finish_turn(Conversation& c, const PromptItem& user, bool ok, std::string_view response_id,
                 std::string reply) {
  if (!ok) return;
  c.history.push_back(ConversationTurn{user.text, std::move(reply)});
  c.previous_response_id = std::string(response_id);
}

std::string stand_in_reply(std::size_t tokens, std::uint64_t seed) {
  return synthetic_prompt(tokens, seed ^ 0xA5515747A5515747ull);
}

}  // namespace llmux::bench
