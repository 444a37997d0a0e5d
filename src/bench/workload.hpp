#pragma once
// What `llmux bench` sends: prompts (synthetic ones sized with the project's tokenizer, or a JSONL
// dataset of plain prompts or ShareGPT conversations), output lengths, and the JSON request
// bodies of the three endpoints.
//
// Thread safety: pure functions and plain values.
#include <cstddef>
#include <cstdint>
#include <optional>
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
  std::string text;                         ///< the prompt (completions) / last user message
  std::vector<ChatMessage> messages;        ///< full conversation for chat; empty = one user turn
  std::optional<std::uint32_t> max_tokens;  ///< per-prompt output length (dataset or spread)
  std::size_t prompt_tokens = 0;            ///< Tokenizer::count of the text (an estimate)
};

/// A prompt of exactly `tokens` tokens by llmux::Tokenizer (" word" pieces of 1-4 letters),
/// deterministic in `seed`; different seeds give different prompts (no shared prefix).
std::string synthetic_prompt(std::size_t tokens, std::uint64_t seed);

struct SyntheticSpec {
  std::size_t input_tokens = 256;
  std::size_t output_tokens = 128;
  /// Output lengths are drawn uniformly from [out*(1-spread), out*(1+spread)] (at least 1).
  double output_spread = 0.0;
  /// Prompt lengths likewise from [in*(1-spread), in*(1+spread)] (at least 1 token).
  double input_spread = 0.0;
  std::uint64_t seed = 1;
};

/// `n` distinct prompts (n >= 1).
std::vector<PromptItem> synthetic_workload(const SyntheticSpec& spec, std::size_t n);

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

/// The JSON body for `item` on the dialect's endpoint: `prompt` (completions), `messages`
/// (chat) or `input` (responses, `max_output_tokens`, store false).
std::string build_body(const PromptItem& item, const BodyOptions& opt);

/// The seed's three prompt sizes (the same texts as bench/sim_calibration.py).
std::string_view seed_prompt(std::string_view size);  // "short", "medium" or "long"

}  // namespace llmux::bench
