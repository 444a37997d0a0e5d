// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `llmux bench` sends: prompts (synthetic ones sized with the project's tokenizer, or a JSONL
// dataset of plain prompts or ShareGPT conversations), shared system prompts, output lengths,
// and the JSON request bodies of the three endpoints (multi-turn conversations: conversation.hpp).
//
// Thread safety: pure functions and plain values.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "openai/stream.hpp"

namespace llmux::bench {

// The bench reads responses with the shared OpenAI stream reader (src/openai/).
using openai::Dialect;
using openai::endpoint_path;
using openai::EventInfo;
using openai::parse_dialect;
using openai::SseEvent;
using openai::SseParser;
using openai::StreamError;
using openai::StreamInterpreter;
using openai::StreamUsage;

struct ChatMessage {
  std::string role, content;
};

/// One prompt of a workload.
struct PromptItem {
  std::string text;  ///< the prompt (completions) / last user message
  /// A system prompt sent before it (chat: a system message; completions: prepended to the
  /// prompt; responses: `instructions`); empty = none.
  std::string system;
  std::vector<ChatMessage> messages;        ///< full conversation for chat; empty = one user turn
  std::optional<std::uint32_t> max_tokens;  ///< per-prompt output length (dataset or spread)
  std::size_t prompt_tokens = 0;            ///< Tokenizer::count of the text (an estimate)
};

/// A prompt of exactly `tokens` tokens by llmux::Tokenizer (" word" pieces of 1-4 letters),
/// deterministic in `seed`; different seeds give different prompts (no shared prefix).
std::string synthetic_prompt(std::size_t tokens, std::uint64_t seed);

/// Inclusive bounds of a length in tokens.
struct TokenRange {
  std::size_t min = 0, max = 0;
  bool empty() const { return max == 0; }
  friend bool operator==(const TokenRange&, const TokenRange&) = default;
};

struct SyntheticSpec {
  std::size_t input_tokens = 256;
  std::size_t output_tokens = 128;
  /// Output lengths are drawn uniformly from [out*(1-spread), out*(1+spread)] (at least 1).
  double output_spread = 0.0;
  /// Prompt lengths likewise from [in*(1-spread), in*(1+spread)] (at least 1 token).
  double input_spread = 0.0;
  std::uint64_t seed = 1;

  /// The bounds the prompt lengths are drawn from ({in, in} without a spread).
  TokenRange input_range() const;
  /// The bounds of the output lengths ({out, out} without a spread).
  TokenRange output_range() const;
};

/// `count` distinct prompts (count >= 1): lengths from spec.input_range(), max_tokens from
/// spec.output_range(), as the ranged overload draws them.
std::vector<PromptItem> synthetic_workload(const SyntheticSpec& spec, std::size_t count);

/// `count` distinct prompts (count >= 1) whose lengths are drawn uniformly (integers, bounds
/// included) from `input` and whose max_tokens from `output`, each by a generator of its own
/// seeded by `seed` (the same seed: the same prompts; the prompt lengths do not depend on the
/// output range nor the other way round).
std::vector<PromptItem> synthetic_workload(TokenRange input, TokenRange output, std::uint64_t seed,
                                           std::size_t count);

/// `count` distinct system prompts of exactly `tokens` tokens each (synthetic, deterministic in
/// `seed`, none a prefix of another or of a synthetic_workload prompt of the same seed).
std::vector<std::string> shared_prefixes(std::size_t count, std::size_t tokens, std::uint64_t seed);

/// Gives each group of `group` consecutive items (1: every item; a conversation's T turns: one
/// prefix per conversation) one system prompt of `prefixes` — adding its tokens to
/// prompt_tokens — so that each prefix is shared by many requests. Nothing when `prefixes` is
/// empty.
/// `seed` 0: prefixes in turn; otherwise each group draws one at random (uniformly, by `seed`),
/// so that which prefix comes next says nothing about which came before (a gateway's round robin
/// would otherwise partition the prefixes over two backends by accident).
void apply_shared_prefixes(std::vector<PromptItem>& items, std::span<const std::string> prefixes,
                           std::size_t group = 1, std::uint64_t seed = 0);

/// Loads a JSONL file. Each line is one of:
///   {"prompt": "..."} or {"text": "..."} (optional "max_tokens" / "output_tokens")
///   a ShareGPT record {"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}
///     (also "messages" with role/content): the turns up to the first human/user message form
///     the prompt and the following reply's length (tokens) becomes max_tokens, as
///     `vllm bench serve --dataset-name sharegpt` does;
///   a bare JSON string.
/// Blank lines are skipped. Throws std::runtime_error naming the line on a malformed record.
/// `max_items` = 0: all.
std::vector<PromptItem> load_dataset(const std::string& path, std::size_t max_items = 0);
/// Same, from JSONL text.
std::vector<PromptItem> parse_dataset(std::string_view jsonl, std::size_t max_items = 0);

struct BodyOptions {
  Dialect dialect = Dialect::completions;
  std::string model;
  bool stream = true;
  bool include_usage = true;  ///< stream_options.include_usage (streaming only)
  std::optional<double> temperature = 0.0;
  std::optional<std::uint32_t> max_tokens;  ///< used when the prompt has none
  bool ignore_eos = false;                  ///< vLLM extension: generate exactly max_tokens
};

/// The Messages API requires max_tokens: what a body sends when neither the prompt nor the run
/// gives one.
inline constexpr std::uint32_t kMessagesDefaultMaxTokens = 4096;

/// The JSON body for `item` on the dialect's endpoint: `prompt` (completions: the system prompt
/// then the text), `messages` (chat: a system message first when there is a system prompt),
/// `input` (responses: `instructions` = the system prompt, `max_output_tokens`, store false) or
/// Anthropic's `system` and `messages` with `max_tokens` always (messages).
std::string build_body(const PromptItem& item, const BodyOptions& opt);

/// The seed's three prompt sizes (the same texts as bench/sim_calibration.py).
std::string_view seed_prompt(std::string_view size);  // "short", "medium" or "long"

}  // namespace llmux::bench
