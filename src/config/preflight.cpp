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
#include <boost/json/serialize.hpp>
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
  std::string line(body.substr(0, 120));
  for (char& character : line)
    if (character == '\n' || character == '\r' || character == '\t') character = ' ';
  return body.size() > 120 ? line + "..." : line;
}

/// The error message of an OpenAI error body, else an excerpt of the body.
std::string error_text(std::string_view body) {
  boost::system::error_code ec;
  const auto document = boost::json::parse(body, ec);
  if (!ec && document.is_object())
    if (const auto* error = document.as_object().if_contains("error"); error && error->is_object())
      if (const auto* message = error->as_object().if_contains("message");
          message && message->is_string())
        return std::string(message->as_string());
  return excerpt(body);
}

std::string transport_failure(const http::Response& response) {
  return fmt::format("{} ({})", response.message.empty() ? "failed" : response.message,
                     http::to_string(response.failure));
}

/// The ids of a /v1/models body ({"data":[{"id":...}]}); nullopt when it is not one.
std::optional<std::vector<std::string>> model_ids(std::string_view body) {
  boost::system::error_code ec;
  const auto document = boost::json::parse(body, ec);
  if (ec || !document.is_object()) return std::nullopt;
  const auto* data = document.as_object().if_contains("data");
  if (!data || !data->is_array()) return std::nullopt;
  std::vector<std::string> ids;
  for (const auto& model : data->as_array())
    if (model.is_object())
      if (const auto* id = model.as_object().if_contains("id"); id && id->is_string())
        ids.emplace_back(id->as_string());
  return ids;
}

std::vector<CheckResult> probe_one(const Backend& backend, Millis timeout) {
  std::vector<CheckResult> out;
  const std::string subject = "backend " + backend.name;
  const auto ms = [](const http::Response& response) {
    return static_cast<double>(response.end_ns - response.start_ns) / 1e6;
  };

  // As the health checks ask (src/gateway/health_checker.cpp): host and port, the path as
  // configured.
  http::Url root;
  root.host = backend.host;
  root.port = backend.port;
  root.tls = backend.scheme == "https";
  std::string tls_why;
  const http::TlsContextPtr tls =
      root.tls ? http::make_client_context(backend.tls.ca_file, backend.tls.verify, tls_why)
               : nullptr;
  http::RequestSpec health;
  health.method = "GET";
  health.target = backend.health.path;
  health.content_type = {};
  const auto health_response = http::fetch_blocking(root, health, timeout, tls, backend.tls.verify);
  CheckResult health_check{true, subject, fmt::format("GET {}: ", backend.health.path)};
  if (health_response.result.failure != http::Failure::none) {
    health_check.ok = false;
    health_check.detail += transport_failure(health_response.result);
  } else {
    health_check.ok = health_response.result.status >= 200 && health_response.result.status <= 299;
    health_check.detail +=
        fmt::format("{} in {:.1f} ms", health_response.result.status, ms(health_response.result));
    if (!health_check.ok)
      health_check.detail += fmt::format(" (not 2xx: {})", error_text(health_response.body));
  }
  out.push_back(std::move(health_check));

  // As the gateway asks for its /v1/models union (src/gateway/models.cpp): base path, api_key.
  http::Url base = root;
  base.path = backend.base_path;
  const std::vector<http::Header> auth{{"Authorization", "Bearer " + backend.api_key}};
  http::RequestSpec models;
  models.method = "GET";
  models.target = "/v1/models";
  models.content_type = {};
  if (!backend.api_key.empty()) models.headers = auth;
  const auto models_response = http::fetch_blocking(base, models, timeout, tls, backend.tls.verify);
  CheckResult models_check{true, subject, fmt::format("GET {}/v1/models: ", backend.base_path)};
  if (models_response.result.failure != http::Failure::none) {
    models_check.ok = false;
    models_check.detail += transport_failure(models_response.result);
  } else if (models_response.result.status < 200 || models_response.result.status > 299) {
    models_check.ok = false;
    models_check.detail +=
        fmt::format("{} in {:.1f} ms (not 2xx: {})", models_response.result.status,
                    ms(models_response.result), error_text(models_response.body));
  } else if (auto ids = model_ids(models_response.body)) {
    models_check.detail += fmt::format(
        "{} in {:.1f} ms, models: {}", models_response.result.status, ms(models_response.result),
        ids->empty() ? std::string("(none listed)") : detail::join(*ids));
  } else {
    models_check.ok = false;
    models_check.detail +=
        fmt::format("{} in {:.1f} ms, but not a model list: {}", models_response.result.status,
                    ms(models_response.result), excerpt(models_response.body));
  }
  const bool listed = models_check.ok;
  out.push_back(std::move(models_check));

  // send_priority: does the backend take a nonzero `priority` (vLLM: only with
  // --scheduling-policy priority)? One token of the first model it lists.
  if (backend.send_priority && listed) {
    const auto ids = model_ids(models_response.body);
    const std::string body = fmt::format(
        R"({{"model":{},"prompt":"ping","max_tokens":1,"priority":1}})",
        boost::json::serialize(boost::json::value(ids && !ids->empty() ? ids->front() : "")));
    http::RequestSpec generate;
    generate.target = "/v1/completions";
    generate.body = body;
    if (!backend.api_key.empty()) generate.headers = auth;
    const auto answer = http::fetch_blocking(base, generate, timeout, tls, backend.tls.verify);
    CheckResult priority_check{true, subject,
                               "send_priority: POST /v1/completions with priority 1: "};
    if (answer.result.failure != http::Failure::none) {
      priority_check.ok = false;
      priority_check.detail += transport_failure(answer.result);
    } else if (answer.result.status >= 200 && answer.result.status <= 299) {
      priority_check.detail +=
          fmt::format("{}: the backend schedules by priority", answer.result.status);
    } else {
      priority_check.ok = false;
      priority_check.detail += fmt::format(
          "{} ({}): start vLLM with --scheduling-policy priority, or turn send_priority off",
          answer.result.status, error_text(answer.body));
    }
    out.push_back(std::move(priority_check));
  }
  return out;
}

}  // namespace

CheckResult check_resolves(const Backend& backend) {
  CheckResult result{true, "backend " + backend.name, ""};
  net::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  const auto results = resolver.resolve(backend.host, std::to_string(backend.port), ec);
  if (ec || results.empty()) {
    result.ok = false;
    result.detail = fmt::format("cannot resolve '{}': {}", backend.host,
                                ec ? ec.message() : std::string("no address"));
    return result;
  }
  std::vector<std::string> addrs;
  for (const auto& entry : results) {
    std::string address = entry.endpoint().address().to_string();
    if (std::find(addrs.begin(), addrs.end(), address) == addrs.end())
      addrs.push_back(std::move(address));
  }
  if (addrs.size() > 4) {
    addrs.resize(4);
    addrs.push_back("...");
  }
  result.detail = addrs.size() == 1 && addrs[0] == backend.host
                      ? fmt::format("{} (an IP address)", backend.host)
                      : fmt::format("{} resolves to {}", backend.host, detail::join(addrs));
  return result;
}

CheckResult check_access_log(const std::string& target) {
  CheckResult result{true, "access_log " + target, ""};
  if (target == "stdout" || target == "off") {
    result.detail = "nothing to open";
    return result;
  }
  // O_NONBLOCK: a FIFO without a reader fails at once instead of blocking the check.
  const int fd = ::open(target.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    result.detail = "exists and can be appended to";
    return result;
  }
  const int err = errno;
  if (err != ENOENT) {
    result.ok = false;
    result.detail = fmt::format("cannot be opened for appending: {}", std::strerror(err));
    return result;
  }
  std::string dir = std::filesystem::path(target).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) {
    result.ok = false;
    result.detail = fmt::format("directory '{}' {}", dir,
                                errno == ENOENT ? "does not exist" : std::strerror(errno));
  } else if (!S_ISDIR(info.st_mode)) {
    result.ok = false;
    result.detail = fmt::format("'{}' is not a directory", dir);
  } else if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    result.ok = false;
    result.detail =
        fmt::format("does not exist and cannot be created in '{}': {}", dir, std::strerror(errno));
  } else {
    result.detail =
        fmt::format("does not exist yet; it will be created at start ('{}' is writable)", dir);
  }
  return result;
}

CheckResult check_listener(const Listener& listener) {
  CheckResult result{true, "listen " + detail::host_port(listener), ""};
  if (listener.port == 0) {
    result.detail = "a free port is chosen at start";
    return result;
  }
  boost::system::error_code ec;
  const auto addr = net::ip::make_address(listener.address, ec);
  if (ec) {
    result.ok = false;
    result.detail = fmt::format("not an IP address: {}", ec.message());
    return result;
  }
  // As start-up's probe (open_listeners() in src/gateway/listeners.cpp): SO_REUSEADDR so a
  // TIME_WAIT is no obstacle, but no SO_REUSEPORT, so a port another process holds fails.
  net::io_context ioc;
  tcp::acceptor probe(ioc);
  const tcp::endpoint endpoint(addr, listener.port);
  probe.open(endpoint.protocol(), ec);
  if (!ec) probe.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) probe.bind(endpoint, ec);
  boost::system::error_code ignored;
  probe.close(ignored);
  if (ec == net::error::address_in_use) {
    result.ok = false;
    result.detail = fmt::format("port {} is in use by another process", listener.port);
  } else if (ec) {
    result.ok = false;
    result.detail = fmt::format("cannot listen: {}", ec.message());
  } else {
    result.detail = "free";
  }
  return result;
}

std::vector<CheckResult> probe_backends(const std::vector<const Backend*>& backends,
                                        Millis timeout) {
  std::vector<std::future<std::vector<CheckResult>>> running;
  running.reserve(backends.size());
  for (const Backend* backend : backends)
    running.push_back(std::async(std::launch::async,
                                 [backend, timeout] { return probe_one(*backend, timeout); }));
  std::vector<CheckResult> out;
  for (auto& future : running)
    for (auto& result : future.get()) out.push_back(std::move(result));
  return out;
}

}  // namespace llmux::config
