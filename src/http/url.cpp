// SPDX-License-Identifier: Apache-2.0
#include "http/url.hpp"

#include <cctype>
#include <charconv>

#include <fmt/format.h>
#include <boost/url/parse.hpp>

namespace llmux::http {

std::optional<Url> Url::parse(std::string_view text, std::string* error) {
  return parse(text, error, Options{});
}

std::optional<Url> Url::parse(std::string_view text, std::string* error, Options options) {
  auto fail = [&](std::string msg) -> std::optional<Url> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  std::string with_scheme;
  if (text.find("://") == std::string_view::npos) {
    if (!options.scheme_optional)
      return fail(options.https ? "expected http[s]://HOST[:PORT][/PATH]"
                                : "expected http://HOST[:PORT][/PATH]");
    with_scheme = "http://" + std::string(text);
    text = with_scheme;
  }
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) return fail(fmt::format("not a valid URL ({})", parsed.error().message()));
  const boost::urls::url_view u = *parsed;
  std::string scheme(u.scheme());
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "https" && !options.https)
    return fail("https:// is not supported here; only http:// is supported");
  if (scheme != "http" && scheme != "https")
    return fail(fmt::format("unsupported scheme '{}'; only http:// {}is supported", scheme,
                            options.https ? "or https:// " : ""));
  if (u.has_userinfo()) return fail("credentials in the URL are not supported; use api_key");
  if (u.has_query()) return fail("a base URL cannot have a query (?...)");
  if (u.has_fragment()) return fail("a base URL cannot have a fragment (#...)");
  Url out;
  out.tls = scheme == "https";
  if (out.tls) out.port = 443;
  out.host = u.host_address();
  if (out.host.empty()) return fail("a host is required");
  if (u.has_port()) {
    const std::string_view p = u.port();
    unsigned port = 0;
    const auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
    if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || port < 1 || port > 65535)
      return fail("port must be 1-65535");
    out.port = static_cast<std::uint16_t>(port);
  }
  out.path = std::string(u.encoded_path());
  // Boost.URL takes text after HOST[:PORT] that does not start with '/' as the path
  // ("http://10.0.0.1x:80/a" is host 10.0.0.1, port 80, path "x:80/a"): a typo, not a path.
  if (!out.path.empty() && out.path.front() != '/')
    return fail(fmt::format("unexpected '{}' after the host and port (a path starts with '/')",
                            out.path.substr(0, 40)));
  while (!out.path.empty() && out.path.back() == '/') out.path.pop_back();
  return out;
}

std::string Url::authority() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::string Url::str() const {
  return fmt::format("{}://{}{}", tls ? "https" : "http", authority(), path);
}

}  // namespace llmux::http
