// SPDX-License-Identifier: Apache-2.0
// redis://[[user:]password@]host[:port][/db] (RedisUrl in redis_client.hpp).
#include <charconv>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "state/redis_client.hpp"

namespace llmux::state {

namespace {

bool fail(std::string* error, std::string why) {
  if (error) *error = std::move(why);
  return false;
}

bool parse_int(std::string_view text, int lowest, int highest, int& out) {
  if (text.empty()) return false;
  int value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p != text.data() + text.size() || value < lowest || value > highest)
    return false;
  out = value;
  return true;
}

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char folded = text[i];
    if (folded >= 'A' && folded <= 'Z') folded = static_cast<char>(folded - 'A' + 'a');
    if (folded != prefix[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<RedisUrl> RedisUrl::parse(std::string_view url, std::string* error) {
  constexpr std::string_view kScheme = "redis://";
  RedisUrl parsed;
  if (!iequals_prefix(url, kScheme)) {
    fail(error, fmt::format("'{}' is not a redis:// URL (redis://host:port/db)", url));
    return std::nullopt;
  }
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) {
    fail(error, fmt::format("'{}': query and fragment are not supported", url));
    return std::nullopt;
  }
  // The path: /db (an empty path or a lone "/" is db 0).
  std::string_view path;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (!path.empty() && !parse_int(path, 0, 1 << 20, parsed.db)) {
    fail(error, fmt::format("'{}': the database must be a number (redis://host:port/db)", url));
    return std::nullopt;
  }
  // Credentials: the last '@' ends them (a password may hold '@').
  if (auto at_sign = rest.rfind('@'); at_sign != std::string_view::npos) {
    std::string_view cred = rest.substr(0, at_sign);
    rest = rest.substr(at_sign + 1);
    if (auto colon = cred.find(':'); colon != std::string_view::npos) {
      parsed.user.assign(cred.substr(0, colon));
      parsed.password.assign(cred.substr(colon + 1));
    } else {
      parsed.password.assign(cred);  // redis://password@host, as redis-cli -u reads it
    }
    if (parsed.password.empty()) {
      fail(error, fmt::format("'{}': empty password", url));
      return std::nullopt;
    }
  }
  // host[:port], [v6]:port
  std::string_view host = rest, port;
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos) {
      fail(error, fmt::format("'{}': unterminated [IPv6 address]", url));
      return std::nullopt;
    }
    host = rest.substr(1, close - 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        fail(error, fmt::format("'{}': expected ':port' after ']'", url));
        return std::nullopt;
      }
      port = after.substr(1);
      if (port.empty()) {
        fail(error, fmt::format("'{}': empty port", url));
        return std::nullopt;
      }
    }
  } else if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.empty()) {
      fail(error, fmt::format("'{}': empty port", url));
      return std::nullopt;
    }
  }
  if (host.empty()) {
    fail(error, fmt::format("'{}': no host", url));
    return std::nullopt;
  }
  if (host.find_first_of(":/@[] ") != std::string_view::npos &&
      !(rest.front() == '[' && host.find_first_of("/@[] ") == std::string_view::npos)) {
    fail(error, fmt::format("'{}': invalid host '{}'", url, host));
    return std::nullopt;
  }
  if (!port.empty() && !parse_int(port, 1, 65535, parsed.port)) {
    fail(error, fmt::format("'{}': the port must be 1-65535", url));
    return std::nullopt;
  }
  parsed.host.assign(host);
  return parsed;
}

std::string RedisUrl::str() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return fmt::format("redis://{}{}{}:{}/{}", ipv6 ? "[" : "", host, ipv6 ? "]" : "", port, db);
}

}  // namespace llmux::state
