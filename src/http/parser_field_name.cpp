// SPDX-License-Identifier: Apache-2.0
// The field enum of a field name for llmux::http::MessageParser: the same mapping as Beast's
// string_to_field (the gateway looks fields up by enum), in fewer instructions.
//
// Beast's string_to_field (impl/field.ipp) returns the field whose name equals `s` by its
// `equals`: same length, and every byte pair equal but for bit 0x20 (((a ^ b) & 0xDF) == 0:
// ASCII case folding, applied to every byte), else field::unknown. Its hash buckets cannot miss
// such a name: its digest ORs 0x20 into every byte, so names equal that way have equal digests.
// This index holds the same names (to_string() of every field) and applies the same equality;
// only the hash differs (a few bytes instead of all, one probe as a rule instead of a division).
// tests/unit/http/parser_scan_test.cpp compares the two on every name, with case changes and
// one-byte changes at every position, and the fuzzer compares every field's enum.
#include <cstdint>
#include <cstring>
#include <string_view>

#include <boost/beast/http/field.hpp>

#include "http/message_parser_detail.hpp"
#include "http/parser_namespace.hpp"

namespace llmux::http {
inline namespace LLMUX_PARSER_NAMESPACE {
namespace parser_detail {
namespace {

using boost::beast::http::field;

constexpr unsigned field_count = static_cast<unsigned>(field::xref) + 1;  // xref: the last

std::uint32_t load4_folded(const char* bytes) {
  std::uint32_t word;
  std::memcpy(&word, bytes, 4);
  return word | 0x20202020u;
}

// Equal names (in Beast's sense) hash the same: only bytes with 0x20 set are used.
[[gnu::always_inline]] inline std::uint32_t hash(const char* name, std::size_t size) {
  std::uint32_t mixed = static_cast<std::uint32_t>(size) * 0x9e3779b1u;
  if (size >= 4) {
    mixed ^= load4_folded(name);
    mixed = (mixed ^ (mixed >> 15)) * 0x85ebca6bu;
    mixed ^= load4_folded(name + size - 4);
  } else {
    for (std::size_t i = 0; i < size; ++i)
      mixed = (mixed ^ (static_cast<unsigned char>(name[i]) | 0x20u)) * 0x01000193u;
  }
  mixed = (mixed ^ (mixed >> 13)) * 0xc2b2ae35u;
  return mixed ^ (mixed >> 16);
}

template <class Int>
[[gnu::always_inline]] inline bool differ(const char* left, const char* right) {
  Int left_word, right_word;
  std::memcpy(&left_word, left, sizeof left_word);
  std::memcpy(&right_word, right, sizeof right_word);
  return ((left_word ^ right_word) & static_cast<Int>(0xdfdfdfdfdfdfdfdfull)) != 0;
}

// Beast's field_table::equals (every byte pair equal but for bit 0x20), on `size` bytes: in 8- or
// 4-byte words, the last word overlapping the one before (bytes compared twice compare alike).
[[gnu::always_inline]] inline bool equals(const char* left, const char* right, std::size_t size) {
  if (size >= 8) {
    for (std::size_t i = 0; i + 8 < size; i += 8)
      if (differ<std::uint64_t>(left + i, right + i)) return false;
    return !differ<std::uint64_t>(left + size - 8, right + size - 8);
  }
  if (size >= 4)
    return !differ<std::uint32_t>(left, right) &&
           !differ<std::uint32_t>(left + size - 4, right + size - 4);
  for (; size; ++left, ++right, --size)
    if ((*left ^ *right) & 0xdf) return false;
  return true;
}

struct FieldIndex {
  static constexpr std::size_t size = 2048;  // a power of 2, well above field_count
  std::uint16_t slot[size] = {};             // a field, 0: empty
  std::string_view names[field_count];

  FieldIndex() {
    for (unsigned i = 1; i < field_count; ++i) {
      names[i] = boost::beast::http::to_string(static_cast<field>(i));
      std::size_t bucket = hash(names[i].data(), names[i].size()) & (size - 1);
      while (slot[bucket] != 0) bucket = (bucket + 1) & (size - 1);
      slot[bucket] = static_cast<std::uint16_t>(i);
    }
  }
};

const FieldIndex& field_index() {
  static const FieldIndex index;
  return index;
}

}  // namespace

field lookup_field(std::string_view name) {
  if (name.empty()) return boost::beast::http::string_to_field(name);
  const FieldIndex& index = field_index();
  for (std::size_t bucket = hash(name.data(), name.size()) & (FieldIndex::size - 1);;
       bucket = (bucket + 1) & (FieldIndex::size - 1)) {
    const unsigned code = index.slot[bucket];
    if (code == 0) return field::unknown;
    if (index.names[code].size() == name.size() &&
        equals(name.data(), index.names[code].data(), name.size()))
      return static_cast<field>(code);
  }
}

}  // namespace parser_detail
}  // namespace LLMUX_PARSER_NAMESPACE
}  // namespace llmux::http
