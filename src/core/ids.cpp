// SPDX-License-Identifier: Apache-2.0
#include "core/ids.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <random>

namespace llmux {

namespace {

/// SplitMix64 (Steele, Lea, Flood 2014; the seeder of the xoshiro family): 64 well-mixed bits
/// per call for a few multiplications, where std::mt19937_64 costs several times more per id
/// (ids are made per request on the gateway's hot path). Unique ids, not secrets: seeded per
/// thread from std::random_device, as before.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t operator()() {
    std::uint64_t mixed = (state += 0x9e3779b97f4a7c15ULL);
    mixed = (mixed ^ (mixed >> 30)) * 0xbf58476d1ce4e5b9ULL;
    mixed = (mixed ^ (mixed >> 27)) * 0x94d049bb133111ebULL;
    return mixed ^ (mixed >> 31);
  }
};

std::uint64_t seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

/// Every byte's two hex digits, as one 16-bit store.
constexpr std::array<std::array<char, 2>, 256> kHexPairs = [] {
  std::array<std::array<char, 2>, 256> table{};
  constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 256; ++i) table[static_cast<std::size_t>(i)] = {kHex[i >> 4], kHex[i & 0xf]};
  return table;
}();

}  // namespace

void random_id_into(std::string& out, std::string_view prefix, int hex_digits) {
  thread_local SplitMix64 rng{seed()};
  out.assign(prefix);
  out.resize(prefix.size() + static_cast<std::size_t>(hex_digits));
  char* cursor = out.data() + prefix.size();
  std::size_t left = static_cast<std::size_t>(hex_digits);
  while (left >= 16) {  // 64 bits, 16 digits
    const std::uint64_t bits = rng();
    for (int i = 0; i < 8; ++i)
      std::memcpy(cursor + 2 * i, kHexPairs[(bits >> (8 * i)) & 0xff].data(), 2);
    cursor += 16;
    left -= 16;
  }
  if (left > 0) {
    const std::uint64_t bits = rng();
    for (std::size_t i = 0; i < left; ++i) cursor[i] = kHexPairs[(bits >> (4 * i)) & 0xf][1];
  }
}

std::string random_id(std::string_view prefix, int hex_digits) {
  std::string out;
  random_id_into(out, prefix, hex_digits);
  return out;
}

}  // namespace llmux
