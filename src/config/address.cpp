// SPDX-License-Identifier: Apache-2.0
// Addresses as written in the config: listen strings (":8080", "[::1]:8080") and backend URLs
// (http://HOST[:PORT][/PATH]), parsed with Boost.URL.
#include <fmt/format.h>

#include <boost/url/ipv4_address.hpp>
#include <boost/url/ipv6_address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <utility>

#include "config/detail.hpp"
#include "http/url.hpp"

namespace llmux::config::detail {

std::optional<Listener> parse_listen_string(std::string_view s, std::string& why) {
  Listener l;
  std::string_view port_text;
  if (s.starts_with('[')) {
    const auto close = s.find("]:");
    if (close == std::string_view::npos) {
      why = "expected [IPV6]:PORT";
      return std::nullopt;
    }
    l.address = std::string(s.substr(1, close - 1));
    port_text = s.substr(close + 2);
  } else if (const auto colon = s.rfind(':'); colon != std::string_view::npos) {
    if (s.find(':') != colon) {
      why = "an IPv6 address needs brackets: [::1]:8080";
      return std::nullopt;
    }
    if (colon > 0) l.address = std::string(s.substr(0, colon));
    port_text = s.substr(colon + 1);
  } else {
    port_text = s;
  }
  std::uint64_t port = 0;
  if (!parse_uint(port_text, port)) {
    why = "expected PORT, :PORT, ADDRESS:PORT or [IPV6]:PORT";
    return std::nullopt;
  }
  if (port > 65535) {
    why = "port must be 0-65535 (0: a free port)";
    return std::nullopt;
  }
  l.port = static_cast<std::uint16_t>(port);
  return l;
}

bool is_ip(std::string_view s) {
  return boost::urls::parse_ipv4_address(s).has_value() ||
         boost::urls::parse_ipv6_address(s).has_value();
}

bool is_wildcard(std::string_view s) {
  if (s == "0.0.0.0") return true;
  auto v6 = boost::urls::parse_ipv6_address(s);
  return v6 && v6->is_unspecified();
}

std::string host_port(const Listener& l) {
  if (l.address.find(':') != std::string::npos) return fmt::format("[{}]:{}", l.address, l.port);
  return fmt::format("{}:{}", l.address, l.port);
}

void parse_backend_url(Backend& b, const std::string& field, std::vector<ConfigError>& errs) {
  b.scheme.clear();
  b.host.clear();
  b.base_path.clear();
  b.port = 0;
  const std::string& url = b.url;
  auto fail = [&](std::string reason) { errs.push_back({field, url, std::move(reason)}); };
  if (url.empty()) return fail("a backend needs a url, e.g. http://127.0.0.1:30000");
  std::string why;
  const auto u = http::Url::parse(url, &why, {.scheme_optional = false, .https = true});
  if (!u) return fail(why);
  b.scheme = u->tls ? "https" : "http";
  b.host = u->host;
  b.port = u->port;
  b.base_path = u->path;
}

}  // namespace llmux::config::detail
