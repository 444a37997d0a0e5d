#include "core/ids.hpp"

#include <random>

namespace llmux {

std::string random_id(std::string_view prefix, int hex_digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(prefix);
  out.reserve(prefix.size() + hex_digits);
  std::uint64_t bits = 0;
  for (int i = 0; i < hex_digits; ++i) {
    if (i % 16 == 0) bits = rng();
    out.push_back(kHex[bits & 0xf]);
    bits >>= 4;
  }
  return out;
}

}  // namespace llmux
