#include "core/ids.hpp"

#include <random>

namespace llmux {

void random_id_into(std::string& out, std::string_view prefix, int hex_digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  out.assign(prefix);
  out.resize(prefix.size() + static_cast<std::size_t>(hex_digits));
  char* p = out.data() + prefix.size();
  std::uint64_t bits = 0;
  for (int i = 0; i < hex_digits; ++i) {
    if (i % 16 == 0) bits = rng();
    p[i] = kHex[bits & 0xf];
    bits >>= 4;
  }
}

std::string random_id(std::string_view prefix, int hex_digits) {
  std::string out;
  random_id_into(out, prefix, hex_digits);
  return out;
}

}  // namespace llmux
