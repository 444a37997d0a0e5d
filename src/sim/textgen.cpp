// SPDX-License-Identifier: Apache-2.0
#include "sim/textgen.hpp"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "core/tokenizer.hpp"

namespace llmux::sim {
namespace {

// 1-4 letter English words; each " word" is one token for core/tokenizer.
constexpr std::string_view kWords[] = {
    " the",  " of",   " and",  " to",   " a",    " in",   " is",   " it",   " you",  " that",
    " he",   " was",  " for",  " on",   " are",  " as",   " with", " his",  " they", " i",
    " at",   " be",   " this", " have", " from", " or",   " one",  " had",  " by",   " word",
    " but",  " not",  " what", " all",  " were", " we",   " when", " your", " can",  " said",
    " ther", " use",  " an",   " each", " whic", " she",  " do",   " how",  " thei", " if",
    " will", " up",   " othe", " abou", " out",  " many", " then", " them", " thes", " so",
    " some", " her",  " make", " like", " him",  " into", " time", " has",  " look", " two",
    " more", " writ", " go",   " see",  " numb", " no",   " way",  " coul", " peop", " my",
    " than", " firs", " wate", " been", " call", " who",  " oil",  " its",  " now",  " find",
    " long", " down", " day",  " did",  " get",  " come", " made", " may",  " part", " over",
    " new",  " son",  " take", " only", " litt", " work", " know", " plac", " year", " live",
    " me",   " back", " give", " most", " very", " afte", " thin", " our",  " just", " name",
    " good", " sent", " man",  " mind", " say",  " grea", " wher", " help", " thro"};

}  // namespace

std::size_t vocab_size() {
  return std::size(kWords);
}

std::string_view vocab_piece(std::uint16_t index) {
  return kWords[index % std::size(kWords)];
}

std::uint32_t vocab_id(std::uint16_t index) {
  static const auto ids = [] {
    std::array<std::uint32_t, std::size(kWords)> out{};
    for (std::size_t i = 0; i < std::size(kWords); ++i) out[i] = Tokenizer::piece_id(kWords[i]);
    return out;
  }();
  return ids[index % std::size(kWords)];
}

std::vector<std::uint16_t> generate_words(std::uint64_t seed, std::size_t count) {
  std::vector<std::uint16_t> out(count);
  std::uint64_t state = seed ^ 0xa0761d6478bd642full;
  for (std::size_t i = 0; i < count; ++i) {
    // splitmix64: cheap, deterministic, well mixed.
    state += 0x9e3779b97f4a7c15ull;
    std::uint64_t mixed = state;
    mixed = (mixed ^ (mixed >> 30)) * 0xbf58476d1ce4e5b9ull;
    mixed = (mixed ^ (mixed >> 27)) * 0x94d049bb133111ebull;
    mixed ^= mixed >> 31;
    out[i] = static_cast<std::uint16_t>(mixed % std::size(kWords));
  }
  return out;
}

std::uint64_t hash_tokens(std::span<const std::uint32_t> ids) {
  return XXH3_64bits(ids.data(), ids.size_bytes());
}

std::vector<std::uint64_t> hash_token_prefixes(std::span<const std::uint32_t> ids,
                                               std::size_t shortest) {
  std::vector<std::uint64_t> hashes;
  if (shortest > ids.size()) return hashes;
  hashes.reserve(ids.size() - shortest + 1);
  // XXH3's streaming digest equals its one-shot hash of what was fed so far.
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  XXH3_64bits_update(state.get(), ids.data(), shortest * sizeof(std::uint32_t));
  hashes.push_back(XXH3_64bits_digest(state.get()));
  for (std::size_t size = shortest; size < ids.size(); ++size) {
    XXH3_64bits_update(state.get(), &ids[size], sizeof(std::uint32_t));
    hashes.push_back(XXH3_64bits_digest(state.get()));
  }
  return hashes;
}

std::optional<std::uint16_t> vocab_index(std::uint32_t token_id) {
  // (token id, index) sorted by id: a binary search per token.
  static const auto by_id = [] {
    std::array<std::pair<std::uint32_t, std::uint16_t>, std::size(kWords)> out{};
    for (std::size_t i = 0; i < std::size(kWords); ++i) {
      const auto index = static_cast<std::uint16_t>(i);
      out[i] = {vocab_id(index), index};
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  const auto found = std::lower_bound(by_id.begin(), by_id.end(),
                                      std::pair<std::uint32_t, std::uint16_t>{token_id, 0});
  if (found == by_id.end() || found->first != token_id) return std::nullopt;
  return found->second;
}

OutputLenDist OutputLenDist::parse(std::string_view text) {
  auto fail = [&](std::string_view why) {
    throw std::invalid_argument(
        fmt::format("invalid output length distribution '{}': {} (expected lognormal:MEDIAN:SIGMA, "
                    "uniform:MIN:MAX or fixed:N)",
                    text, why));
  };
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto pos = text.find(':', start);
    parts.emplace_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  auto num = [&](const std::string& part) {
    try {
      std::size_t used = 0;
      double value = std::stod(part, &used);
      if (used != part.size() || !std::isfinite(value)) fail("'" + part + "' is not a number");
      return value;
    } catch (const std::logic_error&) {
      fail("'" + part + "' is not a number");
    }
    return 0.0;
  };
  OutputLenDist distribution;
  if (parts[0] == "lognormal" && parts.size() == 3) {
    distribution.kind = Kind::LogNormal;
    distribution.a = num(parts[1]);
    distribution.b = num(parts[2]);
    if (distribution.a < 1 || distribution.b < 0) fail("median must be >= 1 and sigma >= 0");
  } else if (parts[0] == "uniform" && parts.size() == 3) {
    distribution.kind = Kind::Uniform;
    distribution.a = num(parts[1]);
    distribution.b = num(parts[2]);
    if (distribution.a < 1 || distribution.b < distribution.a) fail("need 1 <= MIN <= MAX");
  } else if (parts[0] == "fixed" && parts.size() == 2) {
    distribution.kind = Kind::Fixed;
    distribution.a = num(parts[1]);
    if (distribution.a < 1) fail("N must be >= 1");
  } else {
    fail("unknown form");
  }
  distribution.floor = 1;
  if (distribution.kind == Kind::LogNormal) distribution.floor = 16;
  return distribution;
}

std::string OutputLenDist::to_string() const {
  switch (kind) {
    case Kind::LogNormal:
      return fmt::format("lognormal:{}:{}", a, b);
    case Kind::Uniform:
      return fmt::format("uniform:{}:{}", a, b);
    case Kind::Fixed:
      return fmt::format("fixed:{}", a);
  }
  return {};
}

std::int64_t OutputLenDist::draw(std::uint64_t seed) const {
  // Two uniforms in (0,1) from the seed.
  auto u01 = [](std::uint64_t bits) {
    bits ^= bits >> 33;
    bits *= 0xff51afd7ed558ccdull;
    bits ^= bits >> 33;
    bits *= 0xc4ceb9fe1a85ec53ull;
    bits ^= bits >> 33;
    return (static_cast<double>(bits >> 11) + 0.5) / 9007199254740992.0;
  };
  double length = a;
  switch (kind) {
    case Kind::Fixed:
      length = a;
      break;
    case Kind::Uniform:
      length = a + std::floor(u01(seed) * (b - a + 1));
      break;
    case Kind::LogNormal: {
      const double first_uniform = u01(seed),
                   second_uniform = u01(seed * 0x9e3779b97f4a7c15ull + 1);
      const double normal =
          std::sqrt(-2.0 * std::log(first_uniform)) * std::cos(2 * M_PI * second_uniform);
      length = std::round(a * std::exp(b * normal));
      break;
    }
  }
  return std::max<std::int64_t>(floor, static_cast<std::int64_t>(length));
}

}  // namespace llmux::sim
