// SPDX-License-Identifier: Apache-2.0
#pragma once
// The process's log lines (spdlog's default logger, on stderr): readable lines on a terminal,
// one JSON object per line otherwise (a service under systemd, a container, a pipe), so a log
// collector reads them without a parser of its own. stdout stays for machine-readable output
// (the gateway's ready line and access log) and is not touched here.
//
// A JSON line: {"ts":"2026-12-03T03:19:49.123Z","level":"info","msg":"..."} and, lifted from the
// message (which stays whole in "msg"): "request_id" when it begins `request <id>: ` (every line
// about one request does), "backend" when it (or what follows that prefix) begins
// `backend <name>`. Strings are JSON-escaped; bytes that are not UTF-8 become U+FFFD.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/formatter.h>

namespace llmux::logging {

enum class Format { automatic, text, json };

/// "auto", "text" or "json"; nullopt for anything else.
std::optional<Format> parse_format(std::string_view name);

/// What `automatic` means on a stream that is (or is not) a terminal; the others stay.
Format resolve(Format format, bool terminal);

/// Sets the default logger's formatter: `automatic` is JSON unless stderr is a terminal. Text
/// is spdlog's default pattern, colored by the sink only on a terminal.
void apply(Format format);

/// apply(LLMUX_LOG_FORMAT) when set (auto, text or json), else apply(automatic). An invalid
/// value is warned about (in the automatic format) and ignored.
void apply_from_env();

/// Appends `text` as a JSON string (quoted, escaped; invalid UTF-8 → U+FFFD).
void append_json_string(std::string& out, std::string_view text);

/// The fields lifted from a message (views into it; empty when absent).
struct Fields {
  std::string_view request_id;
  std::string_view backend;
};
Fields lift_fields(std::string_view msg);

/// One JSON object per line (see the top of this file).
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

}  // namespace llmux::logging
