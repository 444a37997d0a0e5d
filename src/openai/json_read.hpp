// SPDX-License-Identifier: Apache-2.0
#pragma once
// Small readers of simdjson on-demand values that the stream interpreter (openai/stream.cpp)
// uses on every event: typed fields that tolerate null and wrong types, `usage` objects (both
// dialects' names), error objects. Private to llmux_openai; inline, for the per-event path.
#include <simdjson.h>

#include <string.h>  // memrchr (GNU)

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "openai/stream.hpp"

namespace llmux::openai::json_read {
namespace od = simdjson::ondemand;

inline bool is_type(od::value& value, od::json_type want) {
  od::json_type type;
  return !value.type().get(type) && type == want;
}

/// The string in `value`, or false when it is null or not a string.
inline bool get_str(od::value& value, std::string_view& out) {
  if (!is_type(value, od::json_type::string)) return false;
  return !value.get_string().get(out);
}

inline std::optional<std::uint64_t> get_u64(od::value& value) {
  if (!is_type(value, od::json_type::number)) return std::nullopt;
  std::uint64_t number;
  if (!value.get_uint64().get(number)) return number;
  return std::nullopt;
}

/// A scalar as text: strings unescaped, numbers and booleans as written, null as "".
inline std::string scalar_text(od::value& value) {
  od::json_type type;
  if (value.type().get(type)) return {};
  if (type == od::json_type::string) {
    std::string_view text;
    if (!value.get_string().get(text)) return std::string(text);
    return {};
  }
  if (type == od::json_type::number || type == od::json_type::boolean) {
    std::string_view raw = value.raw_json_token();
    while (!raw.empty() &&
           (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t')) {
      raw.remove_suffix(1);
    }
    return std::string(raw);
  }
  return {};
}

/// The object after the last `"usage"` key of a JSON text, "" when there is none. The key is
/// found as raw bytes: a quote inside a JSON string is escaped, so `"usage"` followed by a colon
/// can only be a key. The object's end is found by counting braces outside strings.
inline std::string_view last_usage_object(std::string_view body) {
  // (On the hot path of every non-streaming answer: the search jumps from quote to quote with
  // memrchr/memchr instead of comparing at every byte.)
  static constexpr std::string_view kKey = "\"usage\"";
  const char* const base = body.data();
  std::size_t key = std::string_view::npos;
  for (std::size_t end = body.size(); end >= kKey.size();) {
    const void* quote = ::memrchr(base, '"', end);
    if (!quote) return {};
    const auto close = static_cast<std::size_t>(static_cast<const char*>(quote) - base);
    if (close + 1 >= kKey.size() && base[close - 1] == 'e' &&
        std::memcmp(base + close + 1 - kKey.size(), kKey.data(), kKey.size() - 2) == 0) {
      key = close + 1 - kKey.size();
      break;
    }
    end = close;
  }
  if (key == std::string_view::npos) return {};
  std::size_t pos = key + kKey.size();
  auto skip_ws = [&] {
    while (pos < body.size() &&
           (body[pos] == ' ' || body[pos] == '\t' || body[pos] == '\n' || body[pos] == '\r'))
      ++pos;
  };
  skip_ws();
  if (pos >= body.size() || body[pos] != ':') return {};
  ++pos;
  skip_ws();
  if (pos >= body.size() || body[pos] != '{') return {};
  const std::size_t begin = pos;
  int depth = 0;
  for (; pos < body.size(); ++pos) {
    const char byte = body[pos];
    if (byte == '"') {
      // A string: to its closing quote, one not escaped (preceded by an even run of '\\').
      for (;;) {
        const void* quote = std::memchr(base + pos + 1, '"', body.size() - pos - 1);
        if (!quote) return {};
        pos = static_cast<std::size_t>(static_cast<const char*>(quote) - base);
        std::size_t slashes = 0;
        while (base[pos - 1 - slashes] == '\\') ++slashes;
        if (slashes % 2 == 0) break;
      }
    } else if (byte == '{') {
      ++depth;
    } else if (byte == '}' && --depth == 0) {
      return body.substr(begin, pos + 1 - begin);
    }
  }
  return {};
}

/// Bytes a key may have for read_usage_flat: printable ASCII but the quote, the backslash (no
/// escapes: the key's bytes are its value) and the braces (every scan stops at the '}' that ends
/// the object).
inline constexpr auto kPlainKeyByte = [] {
  std::array<bool, 256> table{};
  for (int c = 0x20; c < 0x7f; ++c) table[c] = c != '"' && c != '\\' && c != '{' && c != '}';
  return table;
}();

/// The usual `usage` object read without a JSON parser: true, with `usage` set exactly as
/// parse_usage() sets it, when `obj` is an object of the plain form backends write, keys of
/// printable ASCII without escapes or braces whose values are unsigned integers (at most 19
/// digits), null, or objects of such keys and values; false for anything else, which
/// parse_usage() then reads. (simdjson's setup for a text this short costs more than the whole
/// reading; on the path of every non-streaming answer. tests/fuzz/tap_fuzz.cpp checks it against
/// parse_usage().)
inline bool read_usage_flat(std::string_view obj, StreamUsage& usage) {
  // Every scan stops at the '}' that ends `obj` at the latest, so none checks for the end:
  // `cursor` reaches it only by taking a '}', and that is checked where it can happen. (Each scan
  // on a local copy of `cursor`, `scan`, which the compiler keeps in a register.)
  if (obj.size() < 2 || obj.back() != '}') return false;
  const char* cursor = obj.data();
  const char* const end = cursor + obj.size();
  auto skip_ws = [&] {
    const char* scan = cursor;
    while (*scan == ' ' || *scan == '\n' || *scan == '\r' || *scan == '\t') ++scan;
    cursor = scan;
  };
  auto key = [&](std::string_view& name) {
    if (*cursor != '"') return false;
    const char* const name_begin = cursor + 1;
    const char* scan = name_begin;
    while (kPlainKeyByte[static_cast<unsigned char>(*scan)]) ++scan;
    if (*scan != '"') return false;
    name = std::string_view(name_begin, static_cast<std::size_t>(scan - name_begin));
    cursor = scan + 1;
    skip_ws();
    if (*cursor != ':') return false;
    ++cursor;
    skip_ws();
    return true;
  };
  // An unsigned integer or null (nullopt); false for any other value.
  auto scalar = [&](std::optional<std::uint64_t>& value) {
    if (end - cursor >= 4 && std::memcmp(cursor, "null", 4) == 0) {
      cursor += 4;
      value.reset();
    } else {
      const char* const digits_begin = cursor;
      const char* scan = digits_begin;
      std::uint64_t number = 0;
      while (*scan >= '0' && *scan <= '9')
        number = number * 10 + static_cast<unsigned>(*scan++ - '0');
      cursor = scan;
      const auto digits = scan - digits_begin;
      if (digits == 0 || digits > 19 || (digits > 1 && *digits_begin == '0')) return false;
      value = number;
    }
    return cursor < end && (*cursor == ',' || *cursor == '}' || *cursor == ' ' || *cursor == '\n' ||
                            *cursor == '\r' || *cursor == '\t');
  };
  // The members of an object up to its '}' (`cursor` just past its '{'), each handed to `member`.
  auto members = [&](auto&& member) {
    skip_ws();
    if (*cursor == '}') {
      ++cursor;
      return true;
    }
    for (;;) {
      std::string_view name;
      if (!key(name) || !member(name)) return false;
      if (cursor == end) return false;  // a value's '}' ended the text
      skip_ws();
      if (*cursor == '}') {
        ++cursor;
        return true;
      }
      if (*cursor != ',') return false;
      ++cursor;
      skip_ws();
    }
  };
  StreamUsage parsed;
  // Where a key's value goes (parse_usage's names), null for the keys it does not read.
  auto slot = [&](std::string_view name) -> std::optional<std::uint64_t>* {
    if (name == "prompt_tokens" || name == "input_tokens") return &parsed.prompt_tokens;
    if (name == "completion_tokens" || name == "output_tokens") return &parsed.completion_tokens;
    return nullptr;
  };
  skip_ws();
  if (*cursor != '{') return false;
  ++cursor;
  const bool ok = members([&](std::string_view name) {
    std::optional<std::uint64_t> value;
    if (*cursor == '{') {  // details: only cached_tokens is read, of the prompt's
      ++cursor;
      if (auto* target = slot(name)) target->reset();  // not a number: none (as get_u64)
      const bool details = name == "prompt_tokens_details" || name == "input_tokens_details";
      return members([&](std::string_view detail_key) {
        if (!scalar(value)) return false;
        if (details && detail_key == "cached_tokens") parsed.cached_tokens = value;
        return true;
      });
    }
    if (!scalar(value)) return false;
    if (auto* target = slot(name)) *target = value;
    return true;
  });
  if (!ok || cursor != end) return false;
  usage = parsed;
  return true;
}

inline void parse_usage(od::value& value, StreamUsage& usage) {
  od::object object;
  if (value.get_object().get(object)) return;
  for (auto field : object) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "prompt_tokens" || key == "input_tokens") {
      usage.prompt_tokens = get_u64(val);
    } else if (key == "completion_tokens" || key == "output_tokens") {
      usage.completion_tokens = get_u64(val);
    } else if (key == "prompt_tokens_details" || key == "input_tokens_details") {
      if (!is_type(val, od::json_type::object)) continue;
      for (auto detail : val.get_object()) {
        std::string_view detail_key = detail.unescaped_key();
        if (detail_key == "cached_tokens") {
          od::value detail_value = detail.value();
          usage.cached_tokens = get_u64(detail_value);
        }
      }
    }
  }
}

/// Reads `{"message", "type", "code", ...}` (or a bare string) into `error`.
inline void parse_error_object(od::value& value, StreamError& error) {
  std::string_view message;
  if (get_str(value, message)) {
    error.message = message;
    return;
  }
  if (!is_type(value, od::json_type::object)) return;
  for (auto field : value.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "message") {
      error.message = scalar_text(val);
    } else if (key == "type") {
      error.type = scalar_text(val);
    } else if (key == "code") {
      error.code = scalar_text(val);
    }
  }
}

inline bool is_text_delta_type(std::string_view type) {
  return type.starts_with("response.") && type.ends_with(".delta") &&
         type != "response.audio.delta";
}

}  // namespace llmux::openai::json_read
