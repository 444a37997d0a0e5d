// SPDX-License-Identifier: Apache-2.0
#include "sim/continuation.hpp"

#include <span>
#include <vector>

#include "sim/textgen.hpp"

namespace llmux::sim {

namespace {

/// Whether `tail` is the beginning of the greedy output of the prompt hashed to `seed`.
bool output_begins_with(std::uint64_t seed, std::span<const std::uint32_t> tail) {
  const std::vector<std::uint16_t> words = generate_words(seed, tail.size());
  for (std::size_t i = 0; i < tail.size(); ++i)
    if (vocab_id(words[i]) != tail[i]) return false;
  return true;
}

std::optional<ContinuedWords> chat_words(const GenRequest& request) {
  // Reasoning belongs to a scripted turn (continue_turn); generated words have none.
  if (!request.continued_reasoning.empty() || request.continued_from == 0) return std::nullopt;
  const std::span<const std::uint32_t> ids(request.prompt_ids);
  const auto earlier = ids.first(request.continued_from);
  const auto tail = ids.subspan(request.continued_from);
  if (tail.empty() || !output_begins_with(hash_tokens(earlier), tail)) return std::nullopt;
  return ContinuedWords{earlier.size(), tail.size()};
}

std::optional<ContinuedWords> completion_words(const GenRequest& request) {
  const std::span<const std::uint32_t> ids(request.prompt_ids);
  // Only a tail of vocabulary words can be generated text; the earlier prompt is not empty.
  std::size_t first_word = ids.size();
  while (first_word > 1 && vocab_index(ids[first_word - 1])) --first_word;
  if (ids.size() - first_word < kMinGeneratedTokens) return std::nullopt;
  const std::vector<std::uint64_t> hashes = hash_token_prefixes(ids, first_word);
  // The longest tail that is the output of the prompt before it.
  for (std::size_t split = first_word; split + kMinGeneratedTokens <= ids.size(); ++split) {
    if (output_begins_with(hashes[split - first_word], ids.subspan(split)))
      return ContinuedWords{split, ids.size() - split};
  }
  return std::nullopt;
}

}  // namespace

std::optional<ContinuedWords> find_continued_words(const GenRequest& request) {
  if (request.temperature != 0.0) return std::nullopt;
  switch (request.endpoint) {
    case Endpoint::Chat:
      return request.continue_final_message ? chat_words(request) : std::nullopt;
    case Endpoint::Completions:
      return completion_words(request);
    case Endpoint::Responses:
      return std::nullopt;
  }
  return std::nullopt;
}

std::shared_ptr<const TurnPlan> continue_turn(const GenRequest& request, const TurnPlan& full,
                                              std::string_view call_prefix, int call_hex) {
  if (request.endpoint != Endpoint::Chat || !request.continue_final_message) return nullptr;
  const std::string& reasoning = request.continued_reasoning;
  const std::string& content = request.continued_content;
  if (reasoning != full.full.reasoning || !full.full.text.starts_with(content)) return nullptr;
  if (reasoning.empty() && content.empty()) return nullptr;
  // The content must end where one of the turn's tokens ends (what a stream cut carries).
  std::string said;
  for (const TurnPiece& piece : full.pieces) {
    if (piece.seg == Seg::Reasoning) continue;
    if (said.size() >= content.size() || piece.seg != Seg::Text) break;
    said += piece.text;
  }
  if (said != content) return nullptr;
  std::vector<std::pair<std::string, std::string>> calls;
  for (const OutputCall& call : full.full.calls) calls.emplace_back(call.name, call.arguments);
  return std::make_shared<TurnPlan>(make_plan("", full.full.text.substr(content.size()),
                                              std::move(calls), call_prefix, call_hex));
}

}  // namespace llmux::sim
