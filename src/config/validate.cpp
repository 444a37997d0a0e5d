// SPDX-License-Identifier: Apache-2.0
// validate(): checks what was loaded (or built by quick_config()) for meaning, reports every
// problem at once, and fills the derived fields (backend scheme/host/port/base_path, route names).
// A route after one that matches everything it matches is an error (unreachable), never silently
// ignored.
#include <fstream>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string_view>
#include <utility>

#include "config/config.hpp"
#include "config/detail.hpp"
#include "http/stream.hpp"
#include "policy/policy.hpp"
#include "state/redis_client.hpp"

namespace llmux::config {
namespace {

using detail::format_millis;
using detail::host_port;
using detail::index;
using detail::is_ip;
using detail::is_wildcard;
using detail::join;
using detail::parse_backend_url;
using detail::suggest;
using detail::upper;

const std::vector<std::string> kHttpMethods{"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                            "CONNECT", "OPTIONS", "TRACE", "PATCH"};
constexpr int kMaxBackends = 64;  // policy::TriedSet is a 64-bit mask
constexpr int kMaxWeight = 100;   // RoundRobin walks the weight cycle on every pick
constexpr int kMaxThreads = 1024;

bool valid_backend_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

bool subset(const std::vector<std::string>& inner, const std::vector<std::string>& outer) {
  return std::all_of(inner.begin(), inner.end(), [&](const std::string& s) {
    return std::find(outer.begin(), outer.end(), s) != outer.end();
  });
}

/// True if every request `b` matches is also matched by `a` (so `b` after `a` is unreachable).
bool covers(const RouteMatch& a, const RouteMatch& b) {
  const bool a_any_path = a.path.empty() && (a.path_prefix.empty() || a.path_prefix == "/");
  bool path_ok = a_any_path;
  if (!a.path.empty()) {
    path_ok = b.path == a.path;
  } else if (!a_any_path) {
    path_ok =
        (!b.path.empty() && b.path.starts_with(a.path_prefix)) ||
        (b.path.empty() && !b.path_prefix.empty() && b.path_prefix.starts_with(a.path_prefix));
  }
  const bool methods_ok = a.methods.empty() || (!b.methods.empty() && subset(b.methods, a.methods));
  const bool models_ok = a.models.empty() || (!b.models.empty() && subset(b.models, a.models));
  return path_ok && methods_ok && models_ok;
}

bool matches_everything(const RouteMatch& m) {
  return m.path.empty() && (m.path_prefix.empty() || m.path_prefix == "/") && m.methods.empty() &&
         m.models.empty();
}

void check_path(const std::string& value, const std::string& field,
                std::vector<ConfigError>& errs) {
  if (value.empty()) return;
  if (value.front() != '/')
    errs.push_back({field, value, "must start with '/'"});
  else if (value.find_first_of("?# \t\r\n") != std::string::npos)
    errs.push_back({field, value, "must not contain '?', '#' or whitespace"});
}

/// Checks resolved health-check settings; `field` names where they came from.
void check_health(const HealthChecks& h, const std::string& field, std::vector<ConfigError>& errs) {
  if (h.path.empty() || h.path.front() != '/' ||
      h.path.find_first_of(" \t\r\n") != std::string::npos)
    errs.push_back({field + ".path", h.path, "must start with '/' and contain no whitespace"});
  if (h.interval < Millis(100))
    errs.push_back({field + ".interval", format_millis(h.interval), "must be at least 100ms"});
  if (h.timeout.count() <= 0)
    errs.push_back({field + ".timeout", format_millis(h.timeout), "must be greater than 0"});
  else if (h.timeout > h.interval)
    errs.push_back({field + ".timeout", format_millis(h.timeout),
                    fmt::format("must not exceed the interval ({})", format_millis(h.interval))});
  if (h.healthy_threshold < 1 || h.healthy_threshold > 100)
    errs.push_back(
        {field + ".healthy_threshold", std::to_string(h.healthy_threshold), "must be 1-100"});
  if (h.unhealthy_threshold < 1 || h.unhealthy_threshold > 100)
    errs.push_back(
        {field + ".unhealthy_threshold", std::to_string(h.unhealthy_threshold), "must be 1-100"});
  if (!(h.jitter >= 0 && h.jitter <= 0.5))
    errs.push_back({field + ".jitter", fmt::format("{}", h.jitter), "must be 0-0.5"});
}

/// True if the backend's own block sets `key`.
bool sets(const HealthChecksOverride& o, std::string_view key) {
  if (key == "path") return o.path.has_value();
  if (key == "interval") return o.interval.has_value();
  if (key == "timeout") return o.timeout.has_value() || o.interval.has_value();
  if (key == "healthy_threshold") return o.healthy_threshold.has_value();
  if (key == "unhealthy_threshold") return o.unhealthy_threshold.has_value();
  if (key == "jitter") return o.jitter.has_value();
  return true;
}

}  // namespace

namespace {

/// A listener's `tls`: both files, and a certificate and key OpenSSL accepts together (read
/// here, so that --check, start-up and a reload all refuse a bad pair).
void check_listener_tls(const ListenerTls& t, const std::string& field,
                        std::vector<ConfigError>& errs) {
  if (!t.enabled()) return;
  if (t.cert.empty()) return errs.push_back({field + ".cert", "", "tls needs a cert (PEM file)"});
  if (t.key.empty()) return errs.push_back({field + ".key", "", "tls needs a key (PEM file)"});
  std::string why;
  if (!http::make_server_context(t.cert, t.key, why)) errs.push_back({field, t.cert, why});
}

/// A backend's `tls`: only for https://, and a CA file OpenSSL can read.
void check_backend_tls(const Backend& b, const std::string& field, std::vector<ConfigError>& errs) {
  const bool set = !b.tls.ca_file.empty() || !b.tls.verify;
  if (b.scheme == "http" && set)
    return errs.push_back({field, b.url, "tls applies to https:// backends only"});
  if (b.scheme != "https" || b.tls.ca_file.empty() || !b.tls.verify) return;
  std::string why;
  if (!http::make_client_context(b.tls.ca_file, true, why))
    errs.push_back({field + ".ca_file", b.tls.ca_file, why});
}

}  // namespace

std::vector<ConfigError> validate(GatewayConfig& cfg) {
  std::vector<ConfigError> errs;
  auto add = [&](std::string field, std::string value, std::string reason) {
    errs.push_back({std::move(field), std::move(value), std::move(reason)});
  };

  // Listeners.
  if (cfg.listeners.empty()) add("listen", "", "at least one listener is required");
  for (std::size_t i = 0; i < cfg.listeners.size(); ++i) {
    const Listener& l = cfg.listeners[i];
    const std::string f = index("listen", i);
    check_listener_tls(l.tls, f + ".tls", errs);
    if (!is_ip(l.address)) {
      add(f + ".address", l.address,
          "expected an IP address such as 0.0.0.0, 127.0.0.1 or :: (host names are not "
          "resolved)");
      continue;
    }
    for (std::size_t j = 0; j < i; ++j) {
      const Listener& o = cfg.listeners[j];
      if (l.port == 0 || o.port != l.port || !is_ip(o.address)) continue;
      if (o.address == l.address)
        add(f, host_port(l), fmt::format("same address and port as listen[{}]", j));
      else if (is_wildcard(o.address) || is_wildcard(l.address))
        add(f, host_port(l),
            fmt::format("port {} collides with listen[{}] ({}): a wildcard address takes the port "
                        "on every address",
                        l.port, j, host_port(o)));
      else
        continue;
      break;
    }
  }

  if (cfg.threads < 0 || cfg.threads > kMaxThreads)
    add("threads", std::to_string(cfg.threads),
        fmt::format("must be 0 (one per core) to {}", kMaxThreads));

  // Backends.
  std::vector<std::string> names;
  if (cfg.backends.empty()) add("backends", "", "at least one backend is required");
  if (cfg.backends.size() > kMaxBackends)
    add("backends", std::to_string(cfg.backends.size()) + " backends",
        fmt::format("at most {} backends are supported", kMaxBackends));
  for (std::size_t i = 0; i < cfg.backends.size(); ++i) {
    Backend& b = cfg.backends[i];
    const std::string f = index("backends", i);
    if (b.name.empty()) {
      add(f + ".name", "", "a backend needs a name");
    } else if (!valid_backend_name(b.name)) {
      add(f + ".name", b.name, "names may only use letters, digits, '-', '_' and '.'");
    } else if (auto it = std::find(names.begin(), names.end(), b.name); it != names.end()) {
      add(f + ".name", b.name,
          fmt::format("duplicate backend name (also backends[{}])", it - names.begin()));
    }
    if (!b.name.empty()) names.push_back(b.name);
    parse_backend_url(b, f + ".url", errs);
    check_backend_tls(b, f + ".tls", errs);
    if (std::any_of(b.api_key.begin(), b.api_key.end(),
                    [](char c) { return std::iscntrl(static_cast<unsigned char>(c)) != 0; }))
      add(f + ".api_key", "(hidden)", "must not contain control characters");
    if (b.weight < 1 || b.weight > kMaxWeight)
      add(f + ".weight", std::to_string(b.weight), fmt::format("must be 1-{}", kMaxWeight));
    if (b.max_inflight < 0)
      add(f + ".max_inflight", std::to_string(b.max_inflight), "must be 0 (unlimited) or more");
    if (b.pool_idle_timeout.count() <= 0)
      add(f + ".pool_idle_timeout", format_millis(b.pool_idle_timeout), "must be greater than 0");
    b.health = cfg.health_checks;
    apply(b.health_override, b.health);
    // A bad value inherited from the top-level block is reported once, under its own name.
    std::vector<ConfigError> health_errs;
    check_health(b.health, f + ".health_checks", health_errs);
    for (auto& e : health_errs) {
      const std::string key = e.field.substr(e.field.rfind('.') + 1);
      if (sets(b.health_override, key)) errs.push_back(std::move(e));
    }
  }
  std::vector<std::string> known_names;  // unique, in order, for messages
  for (const auto& n : names)
    if (std::find(known_names.begin(), known_names.end(), n) == known_names.end())
      known_names.push_back(n);

  // Routes.
  if (cfg.routes.empty()) add("routes", "", "at least one route is required");
  std::vector<std::string> route_names;
  for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
    Route& r = cfg.routes[i];
    const std::string f = index("routes", i);
    if (r.name.empty()) r.name = fmt::format("route{}", i);
    if (auto it = std::find(route_names.begin(), route_names.end(), r.name);
        it != route_names.end())
      add(f + ".name", r.name,
          fmt::format("duplicate route name (also routes[{}])", it - route_names.begin()));
    route_names.push_back(r.name);

    const RouteMatch& m = r.match;
    if (!m.path.empty() && !m.path_prefix.empty())
      add(f + ".match", fmt::format("path: {}, path_prefix: {}", m.path, m.path_prefix),
          "set path or path_prefix, not both");
    check_path(m.path, f + ".match.path", errs);
    check_path(m.path_prefix, f + ".match.path_prefix", errs);
    for (std::size_t j = 0; j < m.methods.size(); ++j) {
      const std::string& method = m.methods[j];
      if (std::find(kHttpMethods.begin(), kHttpMethods.end(), method) != kHttpMethods.end())
        continue;
      const std::string up = upper(method);
      if (std::find(kHttpMethods.begin(), kHttpMethods.end(), up) != kHttpMethods.end())
        add(index(f + ".match.methods", j), method,
            fmt::format("methods are upper case; did you mean '{}'?", up));
      else
        add(index(f + ".match.methods", j), method,
            fmt::format("unknown HTTP method (known: {})", join(kHttpMethods)));
    }
    for (std::size_t j = 0; j < m.models.size(); ++j)
      if (m.models[j].empty()) add(index(f + ".match.models", j), "", "must not be empty");

    if (r.backends.empty()) add(f + ".backends", "", "a route needs at least one backend");
    for (std::size_t j = 0; j < r.backends.size(); ++j) {
      const std::string& name = r.backends[j];
      const std::string bf = index(f + ".backends", j);
      if (std::find(known_names.begin(), known_names.end(), name) == known_names.end()) {
        add(bf, name,
            fmt::format("no backend named '{}' (known: {})", name,
                        known_names.empty() ? "none" : join(known_names)));
      } else if (auto first = std::find(r.backends.begin(), r.backends.end(), name);
                 first - r.backends.begin() < static_cast<std::ptrdiff_t>(j)) {
        add(bf, name,
            fmt::format("listed twice (also {}[{}]); use weight to favour a backend",
                        f + ".backends", first - r.backends.begin()));
      }
    }

    const auto& known_policies = policy::policy_names();
    const bool known_policy =
        std::find(known_policies.begin(), known_policies.end(), r.policy) != known_policies.end();
    if (std::string why; known_policy && !policy::make_policy(r.policy, r.policy_options, &why)) {
      add(f + ".policy", r.policy, why);
    }
    if (!known_policy) {
      const auto& known = known_policies;
      std::string reason =
          fmt::format("unknown policy. Currently supported ones are: {}", join(known));
      if (auto near = suggest(r.policy, known); !near.empty())
        reason += fmt::format(" (did you mean '{}'?)", near);
      add(f + ".policy", r.policy, std::move(reason));
    }

    for (std::size_t k = 0; k < i; ++k) {
      const Route& earlier = cfg.routes[k];
      if (!earlier.match.path.empty() && !earlier.match.path_prefix.empty()) continue;
      if (!covers(earlier.match, m)) continue;
      add(f, r.name,
          matches_everything(earlier.match)
              ? fmt::format("unreachable: routes[{}] ('{}') before it matches every request", k,
                            earlier.name)
              : fmt::format("unreachable: routes[{}] ('{}') before it matches every request "
                            "this route matches",
                            k, earlier.name));
      break;
    }
  }

  // Timeouts.
  const std::pair<const char*, Millis> timeouts[] = {
      {"connect", cfg.timeouts.connect},
      {"first_byte", cfg.timeouts.first_byte},
      {"idle", cfg.timeouts.idle},
      {"client_header", cfg.timeouts.client_header},
      {"client_body", cfg.timeouts.client_body},
      {"client_idle", cfg.timeouts.client_idle},
      {"drain", cfg.timeouts.drain},
  };
  for (const auto& [name, value] : timeouts)
    if (value.count() <= 0)
      add(std::string("timeouts.") + name, format_millis(value), "must be greater than 0");

  // Health checks and outlier detection.
  check_health(cfg.health_checks, "health_checks", errs);
  const auto& od = cfg.outlier_detection;
  if (od.consecutive_failures < 1 || od.consecutive_failures > 1000)
    add("outlier_detection.consecutive_failures", std::to_string(od.consecutive_failures),
        "must be 1-1000");
  if (od.base_ejection.count() <= 0)
    add("outlier_detection.base_ejection", format_millis(od.base_ejection),
        "must be greater than 0");
  if (od.max_ejection < od.base_ejection)
    add("outlier_detection.max_ejection", format_millis(od.max_ejection),
        fmt::format("must be at least base_ejection ({})", format_millis(od.base_ejection)));
  if (od.stall_timeout.count() != 0 && od.stall_timeout.count() < 200)
    add("outlier_detection.stall_timeout", format_millis(od.stall_timeout),
        "must be 0 (off) or at least 200ms");

  // Admission queue.
  if (cfg.queue.size < 0 || cfg.queue.size > 1000000)
    add("queue.size", std::to_string(cfg.queue.size), "must be 0-1000000 (0: no queue)");
  if (cfg.queue.timeout.count() <= 0)
    add("queue.timeout", format_millis(cfg.queue.timeout), "must be greater than 0");

  // Response affinity.
  const auto& af = cfg.affinity;
  if (af.max_entries < 1 || af.max_entries > 100000000)
    add("affinity.max_entries", std::to_string(af.max_entries), "must be 1-100000000");
  if (af.ttl.count() <= 0) add("affinity.ttl", format_millis(af.ttl), "must be greater than 0");
  if (af.lookup_timeout.count() <= 0)
    add("affinity.lookup_timeout", format_millis(af.lookup_timeout), "must be greater than 0");

  // Shared state.
  if (cfg.state.redis()) {
    std::string why;
    if (!state::RedisUrl::parse(cfg.state.url, &why))
      add("state.url", cfg.state.url.find('@') == std::string::npos ? cfg.state.url : "(hidden)",
          fmt::format("must be `memory` or a Redis URL (redis://host:port/db): {}", why));
  }
  if (cfg.state.timeout.count() <= 0 || cfg.state.timeout.count() > 10000)
    add("state.timeout", format_millis(cfg.state.timeout), "must be 1ms-10s");

  // Backend metrics.
  const auto& bm = cfg.backend_metrics;
  if (bm.path.empty() || bm.path[0] != '/')
    add("backend_metrics.path", bm.path, "must be a path starting with '/'");
  if (bm.interval.count() < 100)
    add("backend_metrics.interval", format_millis(bm.interval), "must be at least 100ms");
  if (bm.timeout.count() <= 0)
    add("backend_metrics.timeout", format_millis(bm.timeout), "must be greater than 0");
  if (bm.stale_after < bm.interval)
    add("backend_metrics.stale_after", format_millis(bm.stale_after),
        fmt::format("must be at least the interval ({})", format_millis(bm.interval)));

  // Metrics and admin.
  if (cfg.metrics.listen.size() > 1)
    add("metrics.listen", "", "one address at most (\"ADDRESS:PORT\")");
  for (const Listener& l : cfg.metrics.listen) {
    if (l.tls.enabled())
      add("metrics.listen.tls", l.tls.cert, "metrics.listen serves plain HTTP only (no tls)");
    if (!is_ip(l.address))
      add("metrics.listen", l.address, "expected an IP address such as 127.0.0.1");
    for (std::size_t j = 0; j < cfg.listeners.size(); ++j)
      if (l.port != 0 && cfg.listeners[j].port == l.port)
        add("metrics.listen", host_port(l), fmt::format("same port as listen[{}]", j));
  }
  if (!cfg.admin.token.empty() && !cfg.admin.token_file.empty())
    add("admin.token_file", cfg.admin.token_file, "set either admin.token or admin.token_file");
  if (cfg.admin.token.empty() && !cfg.admin.token_file.empty()) {
    std::ifstream in(cfg.admin.token_file);
    std::string line;
    if (!in || !std::getline(in, line))
      add("admin.token_file", cfg.admin.token_file, "cannot be read");
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    cfg.admin.token = line;
  }
  if ((!cfg.admin.token.empty() || !cfg.admin.token_file.empty()) && cfg.admin.token.size() < 16)
    add(cfg.admin.token_file.empty() ? "admin.token" : "admin.token_file", "(hidden)",
        "the admin token must be at least 16 characters");
  for (char ch : cfg.admin.token)
    if (static_cast<unsigned char>(ch) <= ' ' || ch == 127) {
      add("admin.token", "(hidden)", "must be printable characters without spaces");
      break;
    }

  // Retries.
  const auto& rt = cfg.retries;
  if (rt.max_attempts < 1 || rt.max_attempts > 10)
    add("retries.max_attempts", std::to_string(rt.max_attempts), "must be 1-10 (1: no retry)");
  if (rt.backoff.count() < 0)
    add("retries.backoff", format_millis(rt.backoff), "must not be negative");
  if (rt.request_budget.count() <= 0)
    add("retries.request_budget", format_millis(rt.request_budget), "must be greater than 0");
  if (!(rt.budget >= 0 && rt.budget <= 1))
    add("retries.budget", fmt::format("{}", rt.budget), "must be 0-1 (a fraction of requests)");
  if (rt.min_retries_per_second < 0)
    add("retries.min_retries_per_second", std::to_string(rt.min_retries_per_second),
        "must not be negative");

  // Limits.
  if (cfg.limits.max_connections < 0)
    add("limits.max_connections", std::to_string(cfg.limits.max_connections),
        "must be 0 (no limit) or more");
  if (!(cfg.limits.connection_rate >= 0))
    add("limits.connection_rate", fmt::format("{}", cfg.limits.connection_rate),
        "must be 0 (no limit) or more requests per second");
  if (cfg.limits.max_body_bytes == 0) add("limits.max_body_bytes", "0", "must be greater than 0");
  if (cfg.limits.max_header_bytes == 0)
    add("limits.max_header_bytes", "0", "must be greater than 0");

  if (cfg.access_log.target.empty())
    add("access_log", "", "must be stdout, off or a file path; an empty string is not allowed");

  detail::validate_auth(cfg, errs);  // auth.cpp; after the routes got their names
  return errs;
}

}  // namespace llmux::config
