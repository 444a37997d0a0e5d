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

std::optional<Listener> parse_listen_string(std::string_view text, std::string& why) {
  Listener listener;
  std::string_view port_text;
  if (text.starts_with('[')) {
    const auto close = text.find("]:");
    if (close == std::string_view::npos) {
      why = "expected [IPV6]:PORT";
      return std::nullopt;
    }
    listener.address = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    if (text.find(':') != colon) {
      why = "an IPv6 address needs brackets: [::1]:8080";
      return std::nullopt;
    }
    if (colon > 0) listener.address = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  } else {
    port_text = text;
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
  listener.port = static_cast<std::uint16_t>(port);
  return listener;
}

bool is_ip(std::string_view address) {
  return boost::urls::parse_ipv4_address(address).has_value() ||
         boost::urls::parse_ipv6_address(address).has_value();
}

bool is_wildcard(std::string_view address) {
  if (address == "0.0.0.0") return true;
  auto ipv6 = boost::urls::parse_ipv6_address(address);
  return ipv6 && ipv6->is_unspecified();
}

std::string host_port(const Listener& listener) {
  if (listener.address.find(':') != std::string::npos)
    return fmt::format("[{}]:{}", listener.address, listener.port);
  return fmt::format("{}:{}", listener.address, listener.port);
}

void parse_backend_url(Backend& backend, const std::string& field, std::vector<ConfigError>& errs) {
  backend.scheme.clear();
  backend.host.clear();
  backend.base_path.clear();
  backend.port = 0;
  const std::string& url = backend.url;
  auto fail = [&](std::string reason) { errs.push_back({field, url, std::move(reason)}); };
  if (url.empty()) return fail("a backend needs a url, e.g. http://127.0.0.1:30000");
  std::string why;
  const auto parsed = http::Url::parse(url, &why, {.scheme_optional = false, .https = true});
  if (!parsed) return fail(why);
  backend.scheme = parsed->tls ? "https" : "http";
  backend.host = parsed->host;
  backend.port = parsed->port;
  backend.base_path = parsed->path;
}

}  // namespace llmux::config::detail
