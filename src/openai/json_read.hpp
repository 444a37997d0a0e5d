#pragma once
// Small readers of simdjson on-demand values that the stream interpreter (openai/stream.cpp)
// uses on every event: typed fields that tolerate null and wrong types, `usage` objects (both
// dialects' names), error objects. Private to llmux_openai; inline, for the per-event path.
#include <simdjson.h>

#include <string.h>  // memrchr (GNU)

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "openai/stream.hpp"

namespace llmux::openai::json_read {
namespace od = simdjson::ondemand;

inline bool is_type(od::value& v, od::json_type want) {
  od::json_type t;
  return !v.type().get(t) && t == want;
}

/// The string in `v`, or false when it is null or not a string.
inline bool get_str(od::value& v, std::string_view& out) {
  if (!is_type(v, od::json_type::string)) return false;
  return !v.get_string().get(out);
}

inline std::optional<std::uint64_t> get_u64(od::value& v) {
  if (!is_type(v, od::json_type::number)) return std::nullopt;
  std::uint64_t x;
  if (!v.get_uint64().get(x)) return x;
  return std::nullopt;
}

/// A scalar as text: strings unescaped, numbers and booleans as written, null as "".
inline std::string scalar_text(od::value& v) {
  od::json_type t;
  if (v.type().get(t)) return {};
  if (t == od::json_type::string) {
    std::string_view s;
    if (!v.get_string().get(s)) return std::string(s);
    return {};
  }
  if (t == od::json_type::number || t == od::json_type::boolean) {
    std::string_view raw = v.raw_json_token();
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

inline void parse_usage(od::value& v, StreamUsage& u) {
  od::object o;
  if (v.get_object().get(o)) return;
  for (auto field : o) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "prompt_tokens" || key == "input_tokens") {
      u.prompt_tokens = get_u64(val);
    } else if (key == "completion_tokens" || key == "output_tokens") {
      u.completion_tokens = get_u64(val);
    } else if (key == "prompt_tokens_details" || key == "input_tokens_details") {
      if (!is_type(val, od::json_type::object)) continue;
      for (auto d : val.get_object()) {
        std::string_view dk = d.unescaped_key();
        if (dk == "cached_tokens") {
          od::value dv = d.value();
          u.cached_tokens = get_u64(dv);
        }
      }
    }
  }
}

/// Reads `{"message", "type", "code", ...}` (or a bare string) into `e`.
inline void parse_error_object(od::value& v, StreamError& e) {
  std::string_view s;
  if (get_str(v, s)) {
    e.message = s;
    return;
  }
  if (!is_type(v, od::json_type::object)) return;
  for (auto field : v.get_object()) {
    std::string_view key = field.unescaped_key();
    od::value val = field.value();
    if (key == "message") {
      e.message = scalar_text(val);
    } else if (key == "type") {
      e.type = scalar_text(val);
    } else if (key == "code") {
      e.code = scalar_text(val);
    }
  }
}

inline bool is_text_delta_type(std::string_view type) {
  return type.starts_with("response.") && type.ends_with(".delta") &&
         type != "response.audio.delta";
}

}  // namespace llmux::openai::json_read
