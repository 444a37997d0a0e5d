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
  od::json_type t;
  return !value.type().get(t) && t == want;
}

/// The string in `value`, or false when it is null or not a string.
inline bool get_str(od::value& value, std::string_view& out) {
  if (!is_type(value, od::json_type::string)) return false;
  return !value.get_string().get(out);
}

inline std::optional<std::uint64_t> get_u64(od::value& value) {
  if (!is_type(value, od::json_type::number)) return std::nullopt;
  std::uint64_t x;
  if (!value.get_uint64().get(x)) return x;
  return std::nullopt;
}

/// A scalar as text: strings unescaped, numbers and booleans as written, null as "".
inline std::string scalar_text(od::value& value) {
  od::json_type t;
  if (value.type().get(t)) return {};
  if (t == od::json_type::string) {
    std::string_view text;
    if (!value.get_string().get(text)) return std::string(text);
    return {};
  }
  if (t == od::json_type::number || t == od::json_type::boolean) {
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
    const void* q = ::memrchr(base, '"', end);
    if (!q) return {};
    const auto close = static_cast<std::size_t>(static_cast<const char*>(q) - base);
    if (close + 1 >= kKey.size() && base[close - 1] == 'e' &&
        std::memcmp(base + close + 1 - kKey.size(), kKey.data(), kKey.size() - 2) == 0) {
      key = close + 1 - kKey.size();
      break;
    }
    end = close;
  }
  if (key == std::string_view::npos) return {};
  std::size_t i = key + kKey.size();
  auto skip_ws = [&] {
    while (i < body.size() &&
           (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r'))
      ++i;
  };
  skip_ws();
  if (i >= body.size() || body[i] != ':') return {};
  ++i;
  skip_ws();
  if (i >= body.size() || body[i] != '{') return {};
  const std::size_t begin = i;
  int depth = 0;
  for (; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '"') {
      // A string: to its closing quote, one not escaped (preceded by an even run of '\\').
      for (;;) {
        const void* q = std::memchr(base + i + 1, '"', body.size() - i - 1);
        if (!q) return {};
        i = static_cast<std::size_t>(static_cast<const char*>(q) - base);
        std::size_t slashes = 0;
        while (base[i - 1 - slashes] == '\\') ++slashes;
        if (slashes % 2 == 0) break;
      }
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return body.substr(begin, i + 1 - begin);
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
  // Every scan stops at the '}' that ends `obj` at the latest, so none checks for the end: p
  // reaches it only by taking a '}', and that is checked where it can happen. (Each scan on a
  // local copy of p, which the compiler keeps in a register.)
  if (obj.size() < 2 || obj.back() != '}') return false;
  const char* p = obj.data();
  const char* const end = p + obj.size();
  auto ws = [&] {
    const char* q = p;
    while (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t') ++q;
    p = q;
  };
  auto key = [&](std::string_view& name) {
    if (*p != '"') return false;
    const char* const b = p + 1;
    const char* q = b;
    while (kPlainKeyByte[static_cast<unsigned char>(*q)]) ++q;
    if (*q != '"') return false;
    name = std::string_view(b, static_cast<std::size_t>(q - b));
    p = q + 1;
    ws();
    if (*p != ':') return false;
    ++p;
    ws();
    return true;
  };
  // An unsigned integer or null (nullopt); false for any other value.
  auto scalar = [&](std::optional<std::uint64_t>& value) {
    if (end - p >= 4 && std::memcmp(p, "null", 4) == 0) {
      p += 4;
      value.reset();
    } else {
      const char* const b = p;
      const char* q = b;
      std::uint64_t n = 0;
      while (*q >= '0' && *q <= '9') n = n * 10 + static_cast<unsigned>(*q++ - '0');
      p = q;
      const auto digits = q - b;
      if (digits == 0 || digits > 19 || (digits > 1 && *b == '0')) return false;
      value = n;
    }
    return p < end &&
           (*p == ',' || *p == '}' || *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t');
  };
  // The members of an object up to its '}' (p just past its '{'), each handed to `member`.
  auto members = [&](auto&& member) {
    ws();
    if (*p == '}') {
      ++p;
      return true;
    }
    for (;;) {
      std::string_view name;
      if (!key(name) || !member(name)) return false;
      if (p == end) return false;  // a value's '}' ended the text
      ws();
      if (*p == '}') {
        ++p;
        return true;
      }
      if (*p != ',') return false;
      ++p;
      ws();
    }
  };
  StreamUsage parsed;
  // Where a key's value goes (parse_usage's names), null for the keys it does not read.
  auto slot = [&](std::string_view name) -> std::optional<std::uint64_t>* {
    if (name == "prompt_tokens" || name == "input_tokens") return &parsed.prompt_tokens;
    if (name == "completion_tokens" || name == "output_tokens") return &parsed.completion_tokens;
    return nullptr;
  };
  ws();
  if (*p != '{') return false;
  ++p;
  const bool ok = members([&](std::string_view name) {
    std::optional<std::uint64_t> value;
    if (*p == '{') {  // details: only cached_tokens is read, of the prompt's
      ++p;
      if (auto* to = slot(name)) to->reset();  // not a number: none (as get_u64)
      const bool details = name == "prompt_tokens_details" || name == "input_tokens_details";
      return members([&](std::string_view dk) {
        if (!scalar(value)) return false;
        if (details && dk == "cached_tokens") parsed.cached_tokens = value;
        return true;
      });
    }
    if (!scalar(value)) return false;
    if (auto* to = slot(name)) *to = value;
    return true;
  });
  if (!ok || p != end) return false;
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
        std::string_view dk = detail.unescaped_key();
        if (dk == "cached_tokens") {
          od::value dv = detail.value();
          usage.cached_tokens = get_u64(dv);
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
