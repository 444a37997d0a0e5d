// SPDX-License-Identifier: Apache-2.0
// Start-up checks and probe_backends(): a validated config against this machine (preflight.hpp).
#include "config/preflight.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <utility>

#include "config/detail.hpp"
#include "http/client.hpp"

namespace llmux::config {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

/// One line of a response body, shortened, for a report.
std::string excerpt(std::string_view body) {
  std::string s(body.substr(0, 120));
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return body.size() > 120 ? s + "..." : s;
}

/// The error message of an OpenAI error body, else an excerpt of the body.
std::string error_text(std::string_view body) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(body, ec);
  if (!ec && v.is_object())
    if (const auto* e = v.as_object().if_contains("error"); e && e->is_object())
      if (const auto* m = e->as_object().if_contains("message"); m && m->is_string())
        return std::string(m->as_string());
  return excerpt(body);
}

std::string transport_failure(const http::Response& r) {
  return fmt::format("{} ({})", r.message.empty() ? "failed" : r.message,
                     http::to_string(r.failure));
}

/// The ids of a /v1/models body ({"data":[{"id":...}]}); nullopt when it is not one.
std::optional<std::vector<std::string>> model_ids(std::string_view body) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto* data = v.as_object().if_contains("data");
  if (!data || !data->is_array()) return std::nullopt;
  std::vector<std::string> ids;
  for (const auto& m : data->as_array())
    if (m.is_object())
      if (const auto* id = m.as_object().if_contains("id"); id && id->is_string())
        ids.emplace_back(id->as_string());
  return ids;
}

std::vector<CheckResult> probe_one(const Backend& b, Millis timeout) {
  std::vector<CheckResult> out;
  const std::string subject = "backend " + b.name;
  const auto ms = [](const http::Response& r) {
    return static_cast<double>(r.end_ns - r.start_ns) / 1e6;
  };

  // As the health checks ask (src/gateway/health_checker.cpp): host and port, the path as
  // configured.
  http::Url root;
  root.host = b.host;
  root.port = b.port;
  root.tls = b.scheme == "https";
  std::string tls_why;
  const http::TlsContextPtr tls =
      root.tls ? http::make_client_context(b.tls.ca_file, b.tls.verify, tls_why) : nullptr;
  http::RequestSpec health;
  health.method = "GET";
  health.target = b.health.path;
  health.content_type = {};
  const auto h = http::fetch_blocking(root, health, timeout, tls, b.tls.verify);
  CheckResult hr{true, subject, fmt::format("GET {}: ", b.health.path)};
  if (h.r.failure != http::Failure::none) {
    hr.ok = false;
    hr.detail += transport_failure(h.r);
  } else {
    hr.ok = h.r.status >= 200 && h.r.status <= 299;
    hr.detail += fmt::format("{} in {:.1f} ms", h.r.status, ms(h.r));
    if (!hr.ok) hr.detail += fmt::format(" (not 2xx: {})", error_text(h.body));
  }
  out.push_back(std::move(hr));

  // As the gateway asks for its /v1/models union (src/gateway/models.cpp): base path, api_key.
  http::Url base = root;
  base.path = b.base_path;
  const std::vector<http::Header> auth{{"Authorization", "Bearer " + b.api_key}};
  http::RequestSpec models;
  models.method = "GET";
  models.target = "/v1/models";
  models.content_type = {};
  if (!b.api_key.empty()) models.headers = auth;
  const auto m = http::fetch_blocking(base, models, timeout, tls, b.tls.verify);
  CheckResult mr{true, subject, fmt::format("GET {}/v1/models: ", b.base_path)};
  if (m.r.failure != http::Failure::none) {
    mr.ok = false;
    mr.detail += transport_failure(m.r);
  } else if (m.r.status < 200 || m.r.status > 299) {
    mr.ok = false;
    mr.detail +=
        fmt::format("{} in {:.1f} ms (not 2xx: {})", m.r.status, ms(m.r), error_text(m.body));
  } else if (auto ids = model_ids(m.body)) {
    mr.detail += fmt::format("{} in {:.1f} ms, models: {}", m.r.status, ms(m.r),
                             ids->empty() ? std::string("(none listed)") : detail::join(*ids));
  } else {
    mr.ok = false;
    mr.detail += fmt::format("{} in {:.1f} ms, but not a model list: {}", m.r.status, ms(m.r),
                             excerpt(m.body));
  }
  out.push_back(std::move(mr));
  return out;
}

}  // namespace

CheckResult check_resolves(const Backend& b) {
  CheckResult r{true, "backend " + b.name, ""};
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  const auto results = resolver.resolve(b.host, std::to_string(b.port), ec);
  if (ec || results.empty()) {
    r.ok = false;
    r.detail = fmt::format("cannot resolve '{}': {}", b.host,
                           ec ? ec.message() : std::string("no address"));
    return r;
  }
  std::vector<std::string> addrs;
  for (const auto& e : results) {
    std::string a = e.endpoint().address().to_string();
    if (std::find(addrs.begin(), addrs.end(), a) == addrs.end()) addrs.push_back(std::move(a));
  }
  if (addrs.size() > 4) {
    addrs.resize(4);
    addrs.push_back("...");
  }
  r.detail = addrs.size() == 1 && addrs[0] == b.host
                 ? fmt::format("{} (an IP address)", b.host)
                 : fmt::format("{} resolves to {}", b.host, detail::join(addrs));
  return r;
}

CheckResult check_access_log(const std::string& target) {
  CheckResult r{true, "access_log " + target, ""};
  if (target == "stdout" || target == "off") {
    r.detail = "nothing to open";
    return r;
  }
  // O_NONBLOCK: a FIFO without a reader fails at once instead of blocking the check.
  const int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    r.detail = "exists and can be appended to";
    return r;
  }
  const int err = errno;
  if (err != ENOENT) {
    r.ok = false;
    r.detail = fmt::format("cannot be opened for appending: {}", std::strerror(err));
    return r;
  }
  std::string dir = std::filesystem::path(target).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    r.ok = false;
    r.detail = fmt::format("directory '{}' {}", dir,
                           errno == ENOENT ? "does not exist" : std::strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    r.ok = false;
    r.detail = fmt::format("'{}' is not a directory", dir);
  } else if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    r.ok = false;
    r.detail =
        fmt::format("does not exist and cannot be created in '{}': {}", dir, std::strerror(errno));
  } else {
    r.detail =
        fmt::format("does not exist yet; it will be created at start ('{}' is writable)", dir);
  }
  return r;
}

CheckResult check_listener(const Listener& l) {
  CheckResult r{true, "listen " + detail::host_port(l), ""};
  if (l.port == 0) {
    r.detail = "a free port is chosen at start";
    return r;
  }
  boost::system::error_code ec;
  const auto addr = net::ip::make_address(l.address, ec);
  if (ec) {
    r.ok = false;
    r.detail = fmt::format("not an IP address: {}", ec.message());
    return r;
  }
  // As start-up's probe (open_listeners() in src/gateway/listeners.cpp): SO_REUSEADDR so a
  // TIME_WAIT is no obstacle, but no SO_REUSEPORT, so a port another process holds fails.
  net::io_context ioc;
  tcp::acceptor probe(ioc);
  const tcp::endpoint ep(addr, l.port);
  probe.open(ep.protocol(), ec);
  if (!ec) probe.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) probe.bind(ep, ec);
  boost::system::error_code ignored;
  probe.close(ignored);
  if (ec == net::error::address_in_use) {
    r.ok = false;
    r.detail = fmt::format("port {} is in use by another process", l.port);
  } else if (ec) {
    r.ok = false;
    r.detail = fmt::format("cannot listen: {}", ec.message());
  } else {
    r.detail = "free";
  }
  return r;
}

std::vector<CheckResult> probe_backends(const std::vector<const Backend*>& backends,
                                        Millis timeout) {
  std::vector<std::future<std::vector<CheckResult>>> running;
  running.reserve(backends.size());
  for (const Backend* b : backends)
    running.push_back(
        std::async(std::launch::async, [b, timeout] { return probe_one(*b, timeout); }));
  std::vector<CheckResult> out;
  for (auto& f : running)
    for (auto& r : f.get()) out.push_back(std::move(r));
  return out;
}

}  // namespace llmux::config
