// SPDX-License-Identifier: Apache-2.0
#pragma once
// Deterministic text for the simulator's outputs, and the distribution of natural stop lengths.
//
// Every generated token is " " + a word of 1-4 lowercase letters from a fixed vocabulary, so the
// project's tokenizer (core/tokenizer.hpp) counts each as exactly one token and the output text
// re-tokenizes to `completion_tokens`. The same seed gives the same words.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace llmux::sim {

/// The vocabulary: index -> piece (with its leading space).
std::string_view vocab_piece(std::uint16_t index);
std::uint32_t vocab_id(std::uint16_t index);
std::size_t vocab_size();

/// `count` vocabulary indices drawn deterministically from `seed`.
std::vector<std::uint16_t> generate_words(std::uint64_t seed, std::size_t count);

/// A distribution of natural output lengths (tokens until end of sequence).
/// Text forms (flag --output-len): "lognormal:MEDIAN:SIGMA", "uniform:MIN:MAX", "fixed:N";
/// every form takes an optional ":min=N" floor is not needed — lengths are at least 1.
struct OutputLenDist {
  enum class Kind { LogNormal, Uniform, Fixed } kind = Kind::LogNormal;
  double a = 512;  // median | min | n
  double b = 0.6;  // sigma  | max | -
  std::int64_t floor = 16;

  /// Parses the text form; throws std::invalid_argument with a clear message.
  static OutputLenDist parse(std::string_view text);
  std::string to_string() const;
  /// A deterministic draw for `seed` (>= 1).
  std::int64_t draw(std::uint64_t seed) const;
};

/// 64-bit hash of a token sequence (used as the seed of greedy outputs).
std::uint64_t hash_tokens(std::span<const std::uint32_t> ids);

/// hash_tokens of ids[0, size) for every size from `shortest` to ids.size(), in one pass.
std::vector<std::uint64_t> hash_token_prefixes(std::span<const std::uint32_t> ids,
                                               std::size_t shortest);

/// The vocabulary index whose token id is `token_id`, if it is one of the vocabulary's.
std::optional<std::uint16_t> vocab_index(std::uint32_t token_id);

}  // namespace llmux::sim
