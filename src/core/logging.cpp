// SPDX-License-Identifier: Apache-2.0
#include "core/logging.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

namespace llmux::logging {
namespace {

/// The length of the valid UTF-8 sequence at the start of `text`, or 0 when it is not one
/// (overlong forms, surrogates and code points past U+10FFFF are not).
std::size_t utf8_sequence(std::string_view text) {
  const auto byte = [&](std::size_t index) { return static_cast<unsigned char>(text[index]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return length;
}

std::string_view level_name(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    default:
      return "off";
  }
}

/// The word after `prefix` at the start of `text`, ended by one of the characters `ends` or by the
/// end of `text`; empty when `text` does not start so.
std::string_view word_after(std::string_view text, std::string_view prefix, std::string_view ends) {
  if (!text.starts_with(prefix)) return {};
  text.remove_prefix(prefix.size());
  return text.substr(0, text.find_first_of(ends));
}

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
  if (name == "auto") return Format::automatic;
  if (name == "text") return Format::text;
  if (name == "json") return Format::json;
  return std::nullopt;
}

Format resolve(Format format, bool terminal) {
  if (format != Format::automatic) return format;
  return terminal ? Format::text : Format::json;
}

void apply(Format format) {
  if (resolve(format, ::isatty(STDERR_FILENO) == 1) == Format::json)
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  else
    spdlog::set_formatter(std::make_unique<spdlog::pattern_formatter>());
}

void apply_from_env() {
  const char* env = std::getenv("LLMUX_LOG_FORMAT");
  const std::string_view value = env ? env : "";
  const auto format =
      value.empty() ? std::optional<Format>(Format::automatic) : parse_format(value);
  apply(format.value_or(Format::automatic));
  if (!format)
    spdlog::warn("LLMUX_LOG_FORMAT='{}' is not one of auto, text, json: using auto", value);
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto byte = static_cast<unsigned char>(text[pos]);
    if (byte >= 0x80) {
      const std::size_t length = utf8_sequence(text.substr(pos));
      if (length == 0) {
        out.append("\\ufffd");
        ++pos;
      } else {
        out.append(text.substr(pos, length));
        pos += length;
      }
      continue;
    }
    switch (byte) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (byte < 0x20 || byte == 0x7f)
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(byte));
        else
          out.push_back(static_cast<char>(byte));
    }
    ++pos;
  }
  out.push_back('"');
}

Fields lift_fields(std::string_view msg) {
  Fields fields;
  std::string_view rest = msg;
  if (msg.starts_with("request ")) {
    const std::size_t colon = msg.find(": ", 8);
    const std::string_view id =
        colon == std::string_view::npos ? std::string_view() : msg.substr(8, colon - 8);
    if (!id.empty() && id.find_first_of(" \t") == std::string_view::npos) {
      fields.request_id = id;
      rest.remove_prefix(colon + 2);
    }
  }
  fields.backend = word_after(rest, "backend ", " :,;()");
  return fields;
}

void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const std::string_view text(msg.payload.data(), msg.payload.size());
  const auto since_epoch = msg.time.time_since_epoch();
  const std::time_t secs = static_cast<std::time_t>(
      std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count());
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() % 1000;
  std::tm utc{};
  ::gmtime_r(&secs, &utc);
  std::string line;
  line.reserve(96 + text.size());
  fmt::format_to(std::back_inserter(line),
                 R"({{"ts":"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z","level":"{}")",
                 utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                 utc.tm_sec, static_cast<int>(millis), level_name(msg.level));
  const Fields fields = lift_fields(text);
  if (!fields.request_id.empty()) {
    line.append(R"(,"request_id":)");
    append_json_string(line, fields.request_id);
  }
  if (!fields.backend.empty()) {
    line.append(R"(,"backend":)");
    append_json_string(line, fields.backend);
  }
  line.append(R"(,"msg":)");
  append_json_string(line, text);
  line.append("}\n");
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> JsonFormatter::clone() const {
  return std::make_unique<JsonFormatter>();
}

}  // namespace llmux::logging
