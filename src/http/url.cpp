// SPDX-License-Identifier: Apache-2.0
#include "http/url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include <fmt/format.h>
#include <boost/url/parse.hpp>

namespace llmux::http {

namespace {

bool is_digit(char character) {
  return character >= '0' && character <= '9';
}

/// The length of a dotted IPv4 address at the start of `host` ("192.0.2.1" in "192.0.2.1x"),
/// or 0 when it does not start with one.
std::size_t ipv4_prefix_length(std::string_view host) {
  std::size_t pos = 0;
  for (int label = 0; label < 4; ++label) {
    if (label > 0) {
      if (pos >= host.size() || host[pos] != '.') return 0;
      ++pos;
    }
    const std::size_t start = pos;
    while (pos < host.size() && is_digit(host[pos]) && pos - start < 3) ++pos;
    if (pos == start) return 0;
  }
  return pos;
}

/// The host, port and path of a URL as written: the authority is what lies between "://" and
/// the first '/', '?' or '#'.
struct WrittenParts {
  std::string_view host;  // with the brackets of an IPv6 address
  std::string_view port;
  std::string_view path;  // up to '?' or '#'
  std::string problem;    // what is wrong with the host and port; empty when nothing is
};

/// Splits and checks the host and port before Boost.URL parses the URL, so that every Boost
/// version gives the same verdict: 1.81 took "h:http" as a port, "h:30000x" as port 30000 and
/// path "x", "192.0.2.1x:80/a" as host 192.0.2.1 with path "x:80/a" and "192.0.2.1.nip.io" as
/// host 192.0.2.1 with path ".nip.io"; 1.83 rejects the first two whole ("leftover") and takes
/// the others as host names.
WrittenParts split_written(std::string_view url) {
  WrittenParts parts;
  const std::size_t begin = url.find("://") + 3;
  const std::size_t end = std::min(url.find_first_of("/?#", begin), url.size());
  std::string_view authority = url.substr(begin, end - begin);
  const std::string_view after_authority = url.substr(end);
  parts.path = after_authority.substr(0, after_authority.find_first_of("?#"));
  if (const std::size_t at_sign = authority.rfind('@'); at_sign != std::string_view::npos)
    authority.remove_prefix(at_sign + 1);
  std::string_view& host = parts.host;
  std::string_view& port = parts.port;
  host = authority;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return parts;  // Boost.URL explains
    host = authority.substr(0, close + 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':')
      port = authority.substr(close + 2);
  } else if (const std::size_t colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  auto unexpected = [&](std::size_t offset_in_authority) {
    const std::string rest =
        std::string(authority.substr(offset_in_authority)) + std::string(after_authority);
    return fmt::format("unexpected '{}' after the host and port (a path starts with '/')",
                       rest.substr(0, 40));
  };
  // A dotted IPv4 address run on by more than a further name label ("192.0.2.1x", not
  // "192.0.2.1.nip.io"): a typo, not a host name.
  if (const std::size_t ipv4 = ipv4_prefix_length(host);
      ipv4 > 0 && ipv4 < host.size() && host[ipv4] != '.') {
    parts.problem = unexpected(ipv4);
  } else if (!port.empty()) {
    std::size_t digits = 0;
    while (digits < port.size() && is_digit(port[digits])) ++digits;
    if (digits == 0)
      parts.problem = "port must be 1-65535";
    else if (digits < port.size())
      parts.problem = unexpected(static_cast<std::size_t>(port.data() - authority.data()) + digits);
  }
  return parts;
}

}  // namespace

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
  const WrittenParts written = split_written(text);
  if (!written.problem.empty()) return fail(written.problem);
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) return fail(fmt::format("not a valid URL ({})", parsed.error().message()));
  const boost::urls::url_view uri = *parsed;
  std::string scheme(uri.scheme());
  for (auto& character : scheme)
    character = static_cast<char>(std::tolower(static_cast<unsigned char>(character)));
  if (scheme == "https" && !options.https)
    return fail("https:// is not supported here; only http:// is supported");
  if (scheme != "http" && scheme != "https")
    return fail(fmt::format("unsupported scheme '{}'; only http:// {}is supported", scheme,
                            options.https ? "or https:// " : ""));
  if (uri.has_userinfo()) return fail("credentials in the URL are not supported; use api_key");
  if (uri.has_query()) return fail("a base URL cannot have a query (?...)");
  if (uri.has_fragment()) return fail("a base URL cannot have a fragment (#...)");
  Url out;
  out.tls = scheme == "https";
  if (out.tls) out.port = 443;
  out.host = uri.host_address();
  bool has_port = uri.has_port();
  std::string_view port_text = uri.port();
  std::string path(uri.encoded_path());
  if (!written.host.starts_with('[') && out.host != written.host) {
    // Boost.URL 1.81 cut a host name that starts with an IPv4 address after the address.
    out.host = written.host;
    has_port = !written.port.empty();
    port_text = written.port;
    path = written.path;
  }
  if (out.host.empty()) return fail("a host is required");
  if (has_port) {
    const std::string_view digits = port_text;
    unsigned port = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || port < 1 ||
        port > 65535)
      return fail("port must be 1-65535");
    out.port = static_cast<std::uint16_t>(port);
  }
  out.path = std::move(path);
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
