// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one parser for http:// base URLs (backends in the gateway config, targets of `llmux
// bench`), on Boost.URL: host, port and a path prefix.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmux::http {

/// An http:// base URL: host, port and a path prefix (no trailing slash), e.g.
/// "http://127.0.0.1:30000" or "http://host:8080/prefix".
struct Url {
  bool tls = false;  ///< https:// (only with Options::https)
  std::string host;
  std::uint16_t port = 80;
  std::string path;  ///< prefix joined before request targets; "" for the root

  struct Options {
    /// A text without "://" is read as http:// (convenient on a command line); false: it is an
    /// error (a config file says what it means).
    bool scheme_optional = true;
    /// https:// is accepted too (default port 443); false: it is an error.
    bool https = false;
  };
  /// Parses "http://host[:port][/path]". https, other schemes, credentials, a query, a
  /// fragment, a port outside 1-65535 and text after host:port that does not start with '/' are
  /// errors, with the reason in `*error`.
  static std::optional<Url> parse(std::string_view text, std::string* error = nullptr);
  static std::optional<Url> parse(std::string_view text, std::string* error, Options options);
  /// "host:port" (the Host header).
  std::string authority() const;
  /// "http[s]://host:port/path".
  std::string str() const;
};

}  // namespace llmux::http
