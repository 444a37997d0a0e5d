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

bool valid_backend_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char character) {
    return std::isalnum(static_cast<unsigned char>(character)) || character == '-' ||
           character == '_' || character == '.';
  });
}

bool subset(const std::vector<std::string>& inner, const std::vector<std::string>& outer) {
  return std::all_of(inner.begin(), inner.end(), [&](const std::string& item) {
    return std::find(outer.begin(), outer.end(), item) != outer.end();
  });
}

/// True if every request `later` matches is also matched by `earlier` (so `later` after `earlier`
/// is unreachable).
bool covers(const RouteMatch& earlier, const RouteMatch& later) {
  const bool earlier_any_path =
      earlier.path.empty() && (earlier.path_prefix.empty() || earlier.path_prefix == "/");
  bool path_ok = earlier_any_path;
  if (!earlier.path.empty()) {
    path_ok = later.path == earlier.path;
  } else if (!earlier_any_path) {
    path_ok = (!later.path.empty() && later.path.starts_with(earlier.path_prefix)) ||
              (later.path.empty() && !later.path_prefix.empty() &&
               later.path_prefix.starts_with(earlier.path_prefix));
  }
  const bool methods_ok =
      earlier.methods.empty() || (!later.methods.empty() && subset(later.methods, earlier.methods));
  const bool models_ok =
      earlier.models.empty() || (!later.models.empty() && subset(later.models, earlier.models));
  return path_ok && methods_ok && models_ok;
}

bool matches_everything(const RouteMatch& match) {
  return match.path.empty() && (match.path_prefix.empty() || match.path_prefix == "/") &&
         match.methods.empty() && match.models.empty();
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
void check_health(const HealthChecks& checks, const std::string& field,
                  std::vector<ConfigError>& errs) {
  if (checks.path.empty() || checks.path.front() != '/' ||
      checks.path.find_first_of(" \t\r\n") != std::string::npos)
    errs.push_back({field + ".path", checks.path, "must start with '/' and contain no whitespace"});
  if (checks.interval < Millis(100))
    errs.push_back({field + ".interval", format_millis(checks.interval), "must be at least 100ms"});
  if (checks.timeout.count() <= 0)
    errs.push_back({field + ".timeout", format_millis(checks.timeout), "must be greater than 0"});
  else if (checks.timeout > checks.interval)
    errs.push_back(
        {field + ".timeout", format_millis(checks.timeout),
         fmt::format("must not exceed the interval ({})", format_millis(checks.interval))});
  if (checks.healthy_threshold < 1 || checks.healthy_threshold > 100)
    errs.push_back(
        {field + ".healthy_threshold", std::to_string(checks.healthy_threshold), "must be 1-100"});
  if (checks.unhealthy_threshold < 1 || checks.unhealthy_threshold > 100)
    errs.push_back({field + ".unhealthy_threshold", std::to_string(checks.unhealthy_threshold),
                    "must be 1-100"});
  if (!(checks.jitter >= 0 && checks.jitter <= 0.5))
    errs.push_back({field + ".jitter", fmt::format("{}", checks.jitter), "must be 0-0.5"});
}

/// True if the backend's own block sets `key`.
bool sets(const HealthChecksOverride& checks, std::string_view key) {
  if (key == "path") return checks.path.has_value();
  if (key == "interval") return checks.interval.has_value();
  if (key == "timeout") return checks.timeout.has_value() || checks.interval.has_value();
  if (key == "healthy_threshold") return checks.healthy_threshold.has_value();
  if (key == "unhealthy_threshold") return checks.unhealthy_threshold.has_value();
  if (key == "jitter") return checks.jitter.has_value();
  return true;
}

}  // namespace

namespace {

/// A listener's `tls`: both files, and a certificate and key OpenSSL accepts together (read
/// here, so that --check, start-up and a reload all refuse a bad pair).
void check_listener_tls(const ListenerTls& tls, const std::string& field,
                        std::vector<ConfigError>& errs) {
  if (!tls.enabled()) return;
  if (tls.cert.empty()) return errs.push_back({field + ".cert", "", "tls needs a cert (PEM file)"});
  if (tls.key.empty()) return errs.push_back({field + ".key", "", "tls needs a key (PEM file)"});
  std::string why;
  if (!http::make_server_context(tls.cert, tls.key, why)) errs.push_back({field, tls.cert, why});
}

/// A backend's `tls`: only for https://, and a CA file OpenSSL can read.
void check_backend_tls(const Backend& backend, const std::string& field,
                       std::vector<ConfigError>& errs) {
  const bool set = !backend.tls.ca_file.empty() || !backend.tls.verify;
  if (backend.scheme == "http" && set)
    return errs.push_back({field, backend.url, "tls applies to https:// backends only"});
  if (backend.scheme != "https" || backend.tls.ca_file.empty() || !backend.tls.verify) return;
  std::string why;
  if (!http::make_client_context(backend.tls.ca_file, true, why))
    errs.push_back({field + ".ca_file", backend.tls.ca_file, why});
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
    const Listener& listener = cfg.listeners[i];
    const std::string field = index("listen", i);
    check_listener_tls(listener.tls, field + ".tls", errs);
    if (!is_ip(listener.address)) {
      add(field + ".address", listener.address,
          "expected an IP address such as 0.0.0.0, 127.0.0.1 or :: (host names are not "
          "resolved)");
      continue;
    }
    for (std::size_t j = 0; j < i; ++j) {
      const Listener& other = cfg.listeners[j];
      if (listener.port == 0 || other.port != listener.port || !is_ip(other.address)) continue;
      if (other.address == listener.address)
        add(field, host_port(listener), fmt::format("same address and port as listen[{}]", j));
      else if (is_wildcard(other.address) || is_wildcard(listener.address))
        add(field, host_port(listener),
            fmt::format("port {} collides with listen[{}] ({}): a wildcard address takes the port "
                        "on every address",
                        listener.port, j, host_port(other)));
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
    Backend& backend = cfg.backends[i];
    const std::string field = index("backends", i);
    if (backend.name.empty()) {
      add(field + ".name", "", "a backend needs a name");
    } else if (!valid_backend_name(backend.name)) {
      add(field + ".name", backend.name, "names may only use letters, digits, '-', '_' and '.'");
    } else if (auto it = std::find(names.begin(), names.end(), backend.name); it != names.end()) {
      add(field + ".name", backend.name,
          fmt::format("duplicate backend name (also backends[{}])", it - names.begin()));
    }
    if (!backend.name.empty()) names.push_back(backend.name);
    parse_backend_url(backend, field + ".url", errs);
    check_backend_tls(backend, field + ".tls", errs);
    if (std::any_of(backend.api_key.begin(), backend.api_key.end(), [](char character) {
          return std::iscntrl(static_cast<unsigned char>(character)) != 0;
        }))
      add(field + ".api_key", "(hidden)", "must not contain control characters");
    if (backend.weight < 1 || backend.weight > kMaxWeight)
      add(field + ".weight", std::to_string(backend.weight),
          fmt::format("must be 1-{}", kMaxWeight));
    if (backend.max_inflight < 0)
      add(field + ".max_inflight", std::to_string(backend.max_inflight),
          "must be 0 (unlimited) or more");
    if (backend.pool_idle_timeout.count() <= 0)
      add(field + ".pool_idle_timeout", format_millis(backend.pool_idle_timeout),
          "must be greater than 0");
    backend.health = cfg.health_checks;
    apply(backend.health_override, backend.health);
    // A bad value inherited from the top-level block is reported once, under its own name.
    std::vector<ConfigError> health_errs;
    check_health(backend.health, field + ".health_checks", health_errs);
    for (auto& error : health_errs) {
      const std::string key = error.field.substr(error.field.rfind('.') + 1);
      if (sets(backend.health_override, key)) errs.push_back(std::move(error));
    }
  }
  std::vector<std::string> known_names;  // unique, in order, for messages
  for (const auto& name : names)
    if (std::find(known_names.begin(), known_names.end(), name) == known_names.end())
      known_names.push_back(name);

  // Routes.
  if (cfg.routes.empty()) add("routes", "", "at least one route is required");
  std::vector<std::string> route_names;
  for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
    Route& route = cfg.routes[i];
    const std::string field = index("routes", i);
    if (route.name.empty()) route.name = fmt::format("route{}", i);
    if (auto it = std::find(route_names.begin(), route_names.end(), route.name);
        it != route_names.end())
      add(field + ".name", route.name,
          fmt::format("duplicate route name (also routes[{}])", it - route_names.begin()));
    route_names.push_back(route.name);

    const RouteMatch& match = route.match;
    if (!match.path.empty() && !match.path_prefix.empty())
      add(field + ".match", fmt::format("path: {}, path_prefix: {}", match.path, match.path_prefix),
          "set path or path_prefix, not both");
    check_path(match.path, field + ".match.path", errs);
    check_path(match.path_prefix, field + ".match.path_prefix", errs);
    for (std::size_t j = 0; j < match.methods.size(); ++j) {
      const std::string& method = match.methods[j];
      if (std::find(kHttpMethods.begin(), kHttpMethods.end(), method) != kHttpMethods.end())
        continue;
      const std::string upper_case = upper(method);
      if (std::find(kHttpMethods.begin(), kHttpMethods.end(), upper_case) != kHttpMethods.end())
        add(index(field + ".match.methods", j), method,
            fmt::format("methods are upper case; did you mean '{}'?", upper_case));
      else
        add(index(field + ".match.methods", j), method,
            fmt::format("unknown HTTP method (known: {})", join(kHttpMethods)));
    }
    for (std::size_t j = 0; j < match.models.size(); ++j)
      if (match.models[j].empty()) add(index(field + ".match.models", j), "", "must not be empty");

    if (route.backends.empty()) add(field + ".backends", "", "a route needs at least one backend");
    for (std::size_t j = 0; j < route.backends.size(); ++j) {
      const std::string& name = route.backends[j];
      const std::string backend_field = index(field + ".backends", j);
      if (std::find(known_names.begin(), known_names.end(), name) == known_names.end()) {
        add(backend_field, name,
            fmt::format("no backend named '{}' (known: {})", name,
                        known_names.empty() ? "none" : join(known_names)));
      } else if (auto first = std::find(route.backends.begin(), route.backends.end(), name);
                 first - route.backends.begin() < static_cast<std::ptrdiff_t>(j)) {
        add(backend_field, name,
            fmt::format("listed twice (also {}[{}]); use weight to favour a backend",
                        field + ".backends", first - route.backends.begin()));
      }
    }

    if (route.hedge.enabled()) {
      if (route.backends.size() < 2)
        add(field + ".hedge", "", "hedging needs a route of at least two backends");
      if (route.hedge.after_p99 > 0 && (route.hedge.after_p99 <= 1 || route.hedge.after_p99 > 100))
        add(field + ".hedge.after", fmt::format("{}x", route.hedge.after_p99),
            "a multiple above 1x (the route learns its p99 from the first tokens that come "
            "before the hedge) and at most 100x");
      if (route.hedge.after >= cfg.timeouts.first_byte)
        add(field + ".hedge.after", format_millis(route.hedge.after),
            fmt::format("must be less than timeouts.first_byte ({})",
                        format_millis(cfg.timeouts.first_byte)));
    }

    const auto& known_policies = policy::policy_names();
    const bool known_policy = std::find(known_policies.begin(), known_policies.end(),
                                        route.policy) != known_policies.end();
    if (std::string why;
        known_policy && !policy::make_policy(route.policy, route.policy_options, &why)) {
      add(field + ".policy", route.policy, why);
    }
    if (!known_policy) {
      const auto& known = known_policies;
      std::string reason =
          fmt::format("unknown policy. Currently supported ones are: {}", join(known));
      if (auto near = suggest(route.policy, known); !near.empty())
        reason += fmt::format(" (did you mean '{}'?)", near);
      add(field + ".policy", route.policy, std::move(reason));
    }

    for (std::size_t k = 0; k < i; ++k) {
      const Route& earlier = cfg.routes[k];
      if (!earlier.match.path.empty() && !earlier.match.path_prefix.empty()) continue;
      if (!covers(earlier.match, match)) continue;
      add(field, route.name,
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
  const auto& outlier = cfg.outlier_detection;
  if (outlier.consecutive_failures < 1 || outlier.consecutive_failures > 1000)
    add("outlier_detection.consecutive_failures", std::to_string(outlier.consecutive_failures),
        "must be 1-1000");
  if (outlier.base_ejection.count() <= 0)
    add("outlier_detection.base_ejection", format_millis(outlier.base_ejection),
        "must be greater than 0");
  if (outlier.max_ejection < outlier.base_ejection)
    add("outlier_detection.max_ejection", format_millis(outlier.max_ejection),
        fmt::format("must be at least base_ejection ({})", format_millis(outlier.base_ejection)));
  if (outlier.stall_timeout.count() != 0 && outlier.stall_timeout.count() < 200)
    add("outlier_detection.stall_timeout", format_millis(outlier.stall_timeout),
        "must be 0 (off) or at least 200ms");

  // Admission queue.
  if (cfg.queue.size < 0 || cfg.queue.size > 1000000)
    add("queue.size", std::to_string(cfg.queue.size), "must be 0-1000000 (0: no queue)");
  if (cfg.queue.timeout.count() <= 0)
    add("queue.timeout", format_millis(cfg.queue.timeout), "must be greater than 0");

  // Response affinity.
  const auto& affinity = cfg.affinity;
  if (affinity.max_entries < 1 || affinity.max_entries > 100000000)
    add("affinity.max_entries", std::to_string(affinity.max_entries), "must be 1-100000000");
  if (affinity.ttl.count() <= 0)
    add("affinity.ttl", format_millis(affinity.ttl), "must be greater than 0");
  if (affinity.lookup_timeout.count() <= 0)
    add("affinity.lookup_timeout", format_millis(affinity.lookup_timeout),
        "must be greater than 0");

  // State shared by replicas.
  if (cfg.state.redis()) {
    std::string why;
    if (!state::RedisUrl::parse(cfg.state.url, &why))
      add("state.url", cfg.state.url.find('@') == std::string::npos ? cfg.state.url : "(hidden)",
          fmt::format("must be `memory` or a Redis URL (redis://host:port/db): {}", why));
  }
  if (cfg.state.timeout.count() <= 0 || cfg.state.timeout.count() > 10000)
    add("state.timeout", format_millis(cfg.state.timeout), "must be 1ms-10s");

  // Backend metrics.
  const auto& metrics = cfg.backend_metrics;
  if (metrics.path.empty() || metrics.path[0] != '/')
    add("backend_metrics.path", metrics.path, "must be a path starting with '/'");
  if (metrics.interval.count() < 100)
    add("backend_metrics.interval", format_millis(metrics.interval), "must be at least 100ms");
  if (metrics.timeout.count() <= 0)
    add("backend_metrics.timeout", format_millis(metrics.timeout), "must be greater than 0");
  if (metrics.stale_after < metrics.interval)
    add("backend_metrics.stale_after", format_millis(metrics.stale_after),
        fmt::format("must be at least the interval ({})", format_millis(metrics.interval)));

  // Metrics and admin.
  if (cfg.metrics.listen.size() > 1)
    add("metrics.listen", "", "one address at most (\"ADDRESS:PORT\")");
  for (const Listener& listener : cfg.metrics.listen) {
    if (listener.tls.enabled())
      add("metrics.listen.tls", listener.tls.cert,
          "metrics.listen serves plain HTTP only (no tls)");
    if (!is_ip(listener.address))
      add("metrics.listen", listener.address, "expected an IP address such as 127.0.0.1");
    for (std::size_t j = 0; j < cfg.listeners.size(); ++j)
      if (listener.port != 0 && cfg.listeners[j].port == listener.port)
        add("metrics.listen", host_port(listener), fmt::format("same port as listen[{}]", j));
  }
  if (!cfg.admin.token.empty() && !cfg.admin.token_file.empty())
    add("admin.token_file", cfg.admin.token_file, "set either admin.token or admin.token_file");
  if (cfg.admin.token.empty() && !cfg.admin.token_file.empty()) {
    std::ifstream file(cfg.admin.token_file);
    std::string line;
    if (!file || !std::getline(file, line))
      add("admin.token_file", cfg.admin.token_file, "cannot be read");
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    cfg.admin.token = line;
  }
  if ((!cfg.admin.token.empty() || !cfg.admin.token_file.empty()) && cfg.admin.token.size() < 16)
    add(cfg.admin.token_file.empty() ? "admin.token" : "admin.token_file", "(hidden)",
        "the admin token must be at least 16 characters");
  for (char character : cfg.admin.token)
    if (static_cast<unsigned char>(character) <= ' ' || character == 127) {
      add("admin.token", "(hidden)", "must be printable characters without spaces");
      break;
    }

  // Retries.
  const auto& migration = cfg.migration;
  if (migration.max_migrations < 1 || migration.max_migrations > 10)
    add("migration.max_migrations", std::to_string(migration.max_migrations),
        "must be 1-10 (migration.enabled: false turns migration off)");
  if (migration.max_kept_bytes < 1024 || migration.max_kept_bytes > (64ull << 20))
    add("migration.max_kept_bytes", std::to_string(migration.max_kept_bytes), "must be 1KiB-64MiB");
  const auto& retries = cfg.retries;
  if (retries.max_attempts < 1 || retries.max_attempts > 10)
    add("retries.max_attempts", std::to_string(retries.max_attempts), "must be 1-10 (1: no retry)");
  if (retries.backoff.count() < 0)
    add("retries.backoff", format_millis(retries.backoff), "must not be negative");
  if (retries.request_budget.count() <= 0)
    add("retries.request_budget", format_millis(retries.request_budget), "must be greater than 0");
  if (!(retries.budget >= 0 && retries.budget <= 1))
    add("retries.budget", fmt::format("{}", retries.budget),
        "must be 0-1 (a fraction of requests)");
  if (retries.min_retries_per_second < 0)
    add("retries.min_retries_per_second", std::to_string(retries.min_retries_per_second),
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

  detail::validate_auth(cfg, errs);            // auth.cpp; after the routes got their names
  detail::validate_sharing(cfg, errs);         // sharing.cpp; after the keys file was read
  detail::validate_disaggregation(cfg, errs);  // disaggregation.cpp
  return errs;
}

}  // namespace llmux::config
