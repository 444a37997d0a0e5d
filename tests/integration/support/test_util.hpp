// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers shared by the integration tests: JSON access, Prometheus text parsing, bounded polling,
// temporary directories.
#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace llmux::test {

/// Parses `text` as JSON; throws std::runtime_error naming the text when it is not JSON.
boost::json::value parse_json(std::string_view text);

/// True when `body` is vLLM's error envelope {"error":{"message","type","param","code"}} with
/// code == status; `why` says what is wrong otherwise.
bool is_openai_error(std::string_view body, int status, std::string* why = nullptr);

/// The error message of an OpenAI error body (empty when not one).
std::string error_message(std::string_view body);
std::string error_type(std::string_view body);

/// Sum of the samples named exactly `name` (labels ignored) in Prometheus text; nullopt when
/// no sample has that name.
std::optional<double> metric_value(std::string_view prom_text, std::string_view name);

/// True when a sample named `name` carries labels model_name="<model>" and engine="0".
bool metric_has_vllm_labels(std::string_view prom_text, std::string_view name,
                            std::string_view model);

/// Calls `pred` every `interval` until it returns true or `timeout` passes; returns the last
/// result. Polling with a deadline, never a fixed sleep as synchronisation.
bool poll_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval = std::chrono::milliseconds(20));

/// A JSON string's text, or the serialized value when it is not a string.
std::string str(const boost::json::value& v);

/// A JSON number as an integer (throws when it is not a number that fits).
std::int64_t i64(const boost::json::value& v);

/// Tokens of `text` by the project's tokenizer (src/core/tokenizer.hpp).
std::size_t count_tokens(std::string_view text);

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  /// Writes `text` to path()/name and returns the file's path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

/// Reads a whole file ("" when it does not exist).
std::string read_text_file(const std::string& path);

/// TCP sockets on this machine (IPv4 and IPv6) whose remote port is `port` and whose state is
/// `state`, as /proc/net/tcp writes it: "01" ESTABLISHED, "08" CLOSE_WAIT (the peer's FIN
/// received)...
int tcp_sockets_to(int port, std::string_view state);

}  // namespace llmux::test
