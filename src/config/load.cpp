// SPDX-License-Identifier: Apache-2.0
// YAML text -> GatewayConfig: load_yaml(). Strict, never throws; meaning is validate.cpp's job.
//
// Schema (docs/config.md is the user-facing version of this comment; keep them in step):
//
//   listen: [{address: 0.0.0.0, port: 8080}]  # default. Also a string ":8080", "127.0.0.1:8080",
//                                              # "[::1]:8080", a bare port 8080, or a list of any
//                                              # of these. Port 0: a free port chosen at start.
//                                              # HTTPS: {address, port, tls: {cert: PEM, key: PEM}}
//   threads: 0                                 # worker threads; 0 = one per core; 0-1024
//   backends:                                  # 1-64 of them
//     - name: server1                          # required; letters, digits, '-', '_', '.'
//       url: http://192.168.200.101:30000      # required; http:// or https://; port 1-65535,
//                                              # default 80 (https: 443); an optional base
//                                              # path is prepended to every request path
//       tls: {ca_file: ca.pem, verify: true}   # https:// only; default: the system's CA store
//       api_key: "..."                         # optional; sent as "Authorization: Bearer ..."
//       weight: 1                              # 1-100, for round_robin
//       max_inflight: 0                        # 0 = unlimited
//       pool_idle_timeout: 4s                  # idle pooled connections closed after this;
//                                              # keep below the backend's keep-alive timeout
//       health_checks: {path: /ping}           # this backend's own health_checks keys
//       send_priority: false                   # the request's class as vLLM's `priority`
//       role: both                             # prefill | decode: disaggregation.cpp
//   routes:                                    # matched in order; the first match wins
//     - name: responses                        # optional; default "route<i>" (i from 0)
//       match:                                 # all conditions must hold; none = every request
//         path_prefix: /v1/responses           # plain string prefix of the path, or
//         path: /v1/chat/completions           # the exact path (not both)
//         methods: [POST]                      # upper case; empty/absent = any method
//         models: [Qwen3.6-35B-A3B]            # the body's "model"; empty/absent = any model
//       backends: [server1]                    # names from `backends`, in order
//       policy: first                          # policy::policy_names(): round_robin (default),
//                                              # or {name: NAME, OPTION: VALUE, ...}
//       hedge: {after: 2x}                     # off by default; a second backend after 300ms,
//                                              # or 2x the learned time-to-first-token p99
//       disaggregation: {mode: auto}           # prefill elsewhere first: disaggregation.cpp
//   timeouts:                                  # "250ms", "5s", "2m", "1h", or a number of ms
//     {connect: 5s, first_byte: 300s, idle: 120s, client_header: 30s, client_body: 60s,
//      client_idle: 75s, drain: 30s}
//   limits: {max_body_bytes: 16MiB, max_header_bytes: 64KiB}  # KiB/MiB/GiB (2^10...),
//                                              # KB/MB/GB (10^3...), B, or a number of bytes
//     # also max_connections: 0 (client connections; above: 503 + close; 0 = no limit) and
//     # connection_rate: 0 (requests/s on one connection; above: 429; 0 = no limit)
//   retries: {max_attempts: 2, backoff: 5ms,   # only what never reached a backend
//     request_budget: 10s, budget: 0.2, min_retries_per_second: 10}
//   migration:                                 # a cut chat/completions stream continued
//     {enabled: true, max_migrations: 2, max_kept_bytes: 64KiB}   # on another backend
//   queue: {size: 256, timeout: 60s}            # when every backend is at max_inflight
//   affinity:                                  # response id -> the backend that holds it
//     {enabled: true, max_entries: 1000000, ttl: 24h, lookup_timeout: 2s}
//   state: memory                              # or redis://host:6379/0 shared by replicas; also
//                                              # {url, prefix: "llmux:", timeout: 50ms}
//   backend_metrics:                           # backends' own load (least_load), off the path
//     {enabled: false, path: /metrics, interval: 1s, timeout: 1s, stale_after: 3s}
//   metrics: {enabled: true, listen: "", stream_usage: true}   admin: {token: "", token_file: ""}
//   auth: {keys: [{name, key | sha256, models, routes, limits}], keys_file}  # API keys, and
//   quotas: {local_share: 0.5}                 # their limits: the schema is in auth.cpp
//   tenants: {...}   priorities: {...}         # sharing the queues: schema in sharing.cpp
//   access_log: stdout                         # stdout, off, or a file path
//   pid_file: /run/llmux.pid                   # written at start ("" = none); `--reload` reads it
//   health_checks:                             # active checks, per backend (defaults shown)
//     {enabled: true, path: /health, interval: 2s, timeout: 1s, healthy_threshold: 1,
//      unhealthy_threshold: 2, jitter: 0.1}
//   outlier_detection:                         # passive: ejection on failures in a row
//     {enabled: true, consecutive_failures: 3, base_ejection: 5s, max_ejection: 60s,
//      stall_timeout: 3s}                      # streams that stop mid-way (0 = off)
//
// Loading is strict: unknown keys (with a "did you mean" for near misses), duplicate keys, wrong
// types and YAML syntax errors are all reported, with the field path ("routes[1].match.methods[0]")
// and the line and column. Nothing here throws. validate() (validate.cpp) then checks meaning and
// reports every problem at once; a route after one that matches everything it matches is an error
// (unreachable), never silently ignored.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

#include "config/config.hpp"
#include "config/detail.hpp"
#include "config/yaml_reader.hpp"

namespace llmux::config {
namespace {

using detail::child;
using detail::index;
using detail::join;
using detail::lower;
using detail::parse_listen_string;
using detail::parse_uint;
using detail::parser_would_loop;
using detail::render;
using detail::suggest;

class Loader : public detail::YamlReader {
 public:
  using YamlReader::YamlReader;

  void policy(const YAML::Node& node, const std::string& field, Route& route) {
    if (node.IsScalar()) {
      route.policy = node.Scalar();
      return;
    }
    if (!node.IsMap()) {
      type_error(field, node, "a policy name or a mapping {name: NAME, OPTION: VALUE}");
      return;
    }
    bool named = false;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) {
        error(field, key, render(key), "keys must be plain names");
        continue;
      }
      const std::string& name = key.Scalar();
      std::string value;
      if (!string(it->second, child(field, name), value)) continue;
      if (name == "name") {
        named = true;
        route.policy = value;
      } else if (!route.policy_options.emplace(name, value).second) {
        error(child(field, name), key, name, "duplicate key");
      }
    }
    if (!named) error(child(field, "name"), node, "", "a policy mapping needs a name");
  }

  // --- sections

  void listener(const YAML::Node& node, const std::string& field, std::vector<Listener>& out) {
    if (node.IsScalar()) {
      std::string why;
      if (auto parsed = parse_listen_string(node.Scalar(), why))
        out.push_back(*parsed);
      else
        error(field, node, node.Scalar(), why);
      return;
    }
    if (!node.IsMap()) {
      type_error(field, node, "\"ADDRESS:PORT\" or {address, port}");
      return;
    }
    Listener listener;
    for (const auto& [key, value] : entries(node, field, {"address", "port", "tls"})) {
      if (key == "address") string(value, child(field, key), listener.address);
      if (key == "tls") {
        for (const auto& [tk, tv] : entries(value, child(field, key), {"cert", "key"})) {
          if (tk == "cert") string(tv, child(child(field, key), tk), listener.tls.cert);
          if (tk == "key") string(tv, child(child(field, key), tk), listener.tls.key);
        }
      }
      if (key == "port") {
        std::uint64_t port = 0;
        if (!value.IsScalar() || !parse_uint(value.Scalar(), port))
          type_error(child(field, key), value, "a port number");
        else if (port > 65535)
          error(child(field, key), value, value.Scalar(), "port must be 0-65535 (0: a free port)");
        else
          listener.port = static_cast<std::uint16_t>(port);
      }
    }
    out.push_back(listener);
  }

  void listen(const YAML::Node& node, std::vector<Listener>& out) {
    out.clear();
    if (node.IsSequence()) {
      for (std::size_t i = 0; i < node.size(); ++i) listener(node[i], index("listen", i), out);
    } else {
      listener(node, "listen", out);
    }
  }

  void backend(const YAML::Node& node, const std::string& field, Backend& backend) {
    for (const auto& [key, value] :
         entries(node, field,
                 {"name", "url", "api_key", "weight", "max_inflight", "pool_idle_timeout",
                  "health_checks", "tls", "send_priority", "role"})) {
      const std::string child_field = child(field, key);
      if (key == "name") string(value, child_field, backend.name);
      if (key == "url") string(value, child_field, backend.url);
      if (key == "api_key") string(value, child_field, backend.api_key);
      if (key == "weight") integer(value, child_field, backend.weight);
      if (key == "max_inflight") integer(value, child_field, backend.max_inflight);
      if (key == "send_priority") boolean(value, child_field, backend.send_priority);
      if (key == "role") detail::load_backend_role(value, child_field, backend.role, *this);
      if (key == "pool_idle_timeout") duration(value, child_field, backend.pool_idle_timeout);
      if (key == "health_checks") health_checks(value, child_field, backend.health_override);
      if (key == "tls") {
        for (const auto& [tk, tv] : entries(value, child_field, {"ca_file", "verify"})) {
          if (tk == "ca_file") string(tv, child(child_field, tk), backend.tls.ca_file);
          if (tk == "verify") boolean(tv, child(child_field, tk), backend.tls.verify);
        }
      }
    }
  }

  /// A `health_checks` block into `checks` (only the keys written are set).
  void health_checks(const YAML::Node& node, const std::string& field,
                     HealthChecksOverride& checks) {
    for (const auto& [key, value] :
         entries(node, field,
                 {"enabled", "path", "interval", "timeout", "healthy_threshold",
                  "unhealthy_threshold", "jitter"})) {
      const std::string child_field = child(field, key);
      if (key == "enabled") set(checks.enabled, value, child_field, &Loader::boolean);
      if (key == "path") set(checks.path, value, child_field, &Loader::string);
      if (key == "interval") set(checks.interval, value, child_field, &Loader::duration_ok);
      if (key == "timeout") set(checks.timeout, value, child_field, &Loader::duration_ok);
      if (key == "healthy_threshold")
        set(checks.healthy_threshold, value, child_field, &Loader::integer<int>);
      if (key == "unhealthy_threshold")
        set(checks.unhealthy_threshold, value, child_field, &Loader::integer<int>);
      if (key == "jitter") set(checks.jitter, value, child_field, &Loader::number);
    }
  }

  void retries(const YAML::Node& node, Retries& retries) {
    const std::string field = "retries";
    for (const auto& [key, value] : entries(
             node, field,
             {"max_attempts", "backoff", "request_budget", "budget", "min_retries_per_second"})) {
      const std::string child_field = child(field, key);
      if (key == "max_attempts") integer(value, child_field, retries.max_attempts);
      if (key == "backoff") duration(value, child_field, retries.backoff);
      if (key == "request_budget") duration(value, child_field, retries.request_budget);
      if (key == "budget") number(value, child_field, retries.budget);
      if (key == "min_retries_per_second")
        integer(value, child_field, retries.min_retries_per_second);
    }
  }

  void migration(const YAML::Node& node, Migration& migration) {
    const std::string field = "migration";
    for (const auto& [key, value] :
         entries(node, field, {"enabled", "max_migrations", "max_kept_bytes"})) {
      const std::string child_field = child(field, key);
      if (key == "enabled") boolean(value, child_field, migration.enabled);
      if (key == "max_migrations") integer(value, child_field, migration.max_migrations);
      if (key == "max_kept_bytes") size(value, child_field, migration.max_kept_bytes);
    }
  }

  void outlier_detection(const YAML::Node& node, OutlierDetection& detection) {
    const std::string field = "outlier_detection";
    for (const auto& [key, value] : entries(node, field,
                                            {"enabled", "consecutive_failures", "base_ejection",
                                             "max_ejection", "stall_timeout"})) {
      const std::string child_field = child(field, key);
      if (key == "enabled") boolean(value, child_field, detection.enabled);
      if (key == "consecutive_failures")
        integer(value, child_field, detection.consecutive_failures);
      if (key == "base_ejection") duration(value, child_field, detection.base_ejection);
      if (key == "max_ejection") duration(value, child_field, detection.max_ejection);
      if (key == "stall_timeout") duration(value, child_field, detection.stall_timeout);
    }
  }

  void match(const YAML::Node& node, const std::string& field, RouteMatch& match) {
    for (const auto& [key, value] :
         entries(node, field, {"path", "path_prefix", "methods", "models"})) {
      const std::string child_field = child(field, key);
      if (key == "path") string(value, child_field, match.path);
      if (key == "path_prefix") string(value, child_field, match.path_prefix);
      if (key == "methods") strings(value, child_field, match.methods);
      if (key == "models") strings(value, child_field, match.models);
    }
  }

  void route(const YAML::Node& node, const std::string& field, Route& route) {
    for (const auto& [key, value] :
         entries(node, field, {"name", "match", "backends", "policy", "hedge", "disaggregation"})) {
      const std::string child_field = child(field, key);
      if (key == "name") string(value, child_field, route.name);
      if (key == "match") match(value, child_field, route.match);
      if (key == "backends") strings(value, child_field, route.backends);
      if (key == "policy") policy(value, child_field, route);
      if (key == "hedge") detail::load_hedge(value, child_field, route.hedge, *this);
      if (key == "disaggregation")
        detail::load_disaggregation(value, child_field, route.disaggregation, *this);
    }
  }

  void timeouts(const YAML::Node& node, Timeouts& timeouts) {
    const std::string field = "timeouts";
    for (const auto& [key, value] : entries(node, field,
                                            {"connect", "first_byte", "idle", "client_header",
                                             "client_body", "client_idle", "drain"})) {
      const std::string child_field = child(field, key);
      if (key == "connect") duration(value, child_field, timeouts.connect);
      if (key == "first_byte") duration(value, child_field, timeouts.first_byte);
      if (key == "idle") duration(value, child_field, timeouts.idle);
      if (key == "client_header") duration(value, child_field, timeouts.client_header);
      if (key == "client_body") duration(value, child_field, timeouts.client_body);
      if (key == "client_idle") duration(value, child_field, timeouts.client_idle);
      if (key == "drain") duration(value, child_field, timeouts.drain);
    }
  }

  void limits(const YAML::Node& node, Limits& limits) {
    const std::string field = "limits";
    for (const auto& [key, value] :
         entries(node, field,
                 {"max_body_bytes", "max_header_bytes", "max_connections", "connection_rate"})) {
      const std::string child_field = child(field, key);
      if (key == "max_connections") {
        integer(value, child_field, limits.max_connections);
        continue;
      }
      if (key == "connection_rate") {
        number(value, child_field, limits.connection_rate);
        continue;
      }
      std::uint64_t size = 0;
      if (!this->size(value, child_field, size)) continue;
      if (key == "max_body_bytes") limits.max_body_bytes = size;
      if (key == "max_header_bytes") {
        if (size > std::numeric_limits<std::uint32_t>::max())
          error(child_field, value, value.Scalar(), "at most 4GiB");
        else
          limits.max_header_bytes = static_cast<std::uint32_t>(size);
      }
    }
  }

  void access_log(const YAML::Node& node, AccessLog& access_log) {
    if (!node.IsScalar()) {
      type_error("access_log", node, "stdout, off or a file path");
      return;
    }
    const std::string& target = node.Scalar();
    static const std::vector<std::string> booleans{"true", "false", "yes", "no", "on", "y", "n"};
    if (std::find(booleans.begin(), booleans.end(), lower(target)) != booleans.end()) {
      error("access_log", node, target, "not a log target; use stdout, off or a file path");
      return;
    }
    access_log.target = target;
  }

  void root(const YAML::Node& node, GatewayConfig& cfg) {
    if (!node.IsDefined() || node.IsNull()) {
      error("", node, "",
            "the configuration is empty; expected a mapping with backends and routes");
      return;
    }
    for (const auto& [key, value] : entries(
             node, "", {"listen",  "threads",    "backends", "routes",        "timeouts",
                        "limits",  "access_log", "pid_file", "health_checks", "outlier_detection",
                        "retries", "migration",  "queue",    "affinity",      "backend_metrics",
                        "metrics", "admin",      "auth",     "quotas",        "state",
                        "tenants", "priorities"})) {
      if (key == "listen") listen(value, cfg.listeners);
      if (key == "threads") integer(value, "threads", cfg.threads);
      if (key == "auth") detail::load_auth(value, cfg.auth, *this);  // auth.cpp
      if (key == "quotas") detail::load_quotas(value, cfg.quotas, *this);
      if (key == "tenants") detail::load_tenants(value, cfg.tenants, *this);  // sharing.cpp
      if (key == "priorities") detail::load_priorities(value, cfg.priorities, *this);
      if (key == "backends") {
        if (!value.IsSequence()) {
          type_error(key, value, "a list of backends");
          continue;
        }
        // Every entry is kept, even a broken one, so that its name still resolves in routes.
        for (std::size_t i = 0; i < value.size(); ++i)
          backend(value[i], index(key, i), cfg.backends.emplace_back());
      }
      if (key == "routes") {
        if (!value.IsSequence()) {
          type_error(key, value, "a list of routes");
          continue;
        }
        for (std::size_t i = 0; i < value.size(); ++i)
          route(value[i], index(key, i), cfg.routes.emplace_back());
      }
      if (key == "timeouts") timeouts(value, cfg.timeouts);
      if (key == "limits") limits(value, cfg.limits);
      if (key == "access_log") access_log(value, cfg.access_log);
      if (key == "pid_file") string(value, key, cfg.pid_file);
      if (key == "health_checks") {
        HealthChecksOverride checks;
        health_checks(value, key, checks);
        apply(checks, cfg.health_checks);
      }
      if (key == "outlier_detection") outlier_detection(value, cfg.outlier_detection);
      if (key == "retries") retries(value, cfg.retries);
      if (key == "migration") migration(value, cfg.migration);
      if (key == "queue")
        for (const auto& [qk, qv] : entries(value, key, {"size", "timeout"})) {
          if (qk == "size") integer(qv, child(key, qk), cfg.queue.size);
          if (qk == "timeout") duration(qv, child(key, qk), cfg.queue.timeout);
        }
      if (key == "affinity")
        for (const auto& [ak, av] :
             entries(value, key, {"enabled", "max_entries", "ttl", "lookup_timeout"})) {
          if (ak == "enabled") boolean(av, child(key, ak), cfg.affinity.enabled);
          if (ak == "max_entries") integer(av, child(key, ak), cfg.affinity.max_entries);
          if (ak == "ttl") duration(av, child(key, ak), cfg.affinity.ttl);
          if (ak == "lookup_timeout") duration(av, child(key, ak), cfg.affinity.lookup_timeout);
        }
      if (key == "state") {
        // `state: redis://...` or `state: {url, prefix, timeout}`.
        if (value.IsScalar()) {
          string(value, key, cfg.state.url);
        } else {
          for (const auto& [sk, sv] : entries(value, key, {"url", "prefix", "timeout"})) {
            if (sk == "url") string(sv, child(key, sk), cfg.state.url);
            if (sk == "prefix") string(sv, child(key, sk), cfg.state.prefix);
            if (sk == "timeout") duration(sv, child(key, sk), cfg.state.timeout);
          }
        }
      }
      if (key == "backend_metrics")
        for (const auto& [mk, mv] :
             entries(value, key, {"enabled", "path", "interval", "timeout", "stale_after"})) {
          BackendMetrics& metrics = cfg.backend_metrics;
          if (mk == "enabled") boolean(mv, child(key, mk), metrics.enabled);
          if (mk == "path") string(mv, child(key, mk), metrics.path);
          if (mk == "interval") duration(mv, child(key, mk), metrics.interval);
          if (mk == "timeout") duration(mv, child(key, mk), metrics.timeout);
          if (mk == "stale_after") duration(mv, child(key, mk), metrics.stale_after);
        }
      if (key == "metrics")
        for (const auto& [mk, mv] : entries(value, key, {"enabled", "listen", "stream_usage"})) {
          if (mk == "enabled") boolean(mv, child(key, mk), cfg.metrics.enabled);
          if (mk == "listen") listener(mv, child(key, mk), cfg.metrics.listen);
          if (mk == "stream_usage") boolean(mv, child(key, mk), cfg.metrics.stream_usage);
        }
      if (key == "admin")
        for (const auto& [ak, av] : entries(value, key, {"token", "token_file"})) {
          if (ak == "token") string(av, child(key, ak), cfg.admin.token);
          if (ak == "token_file") string(av, child(key, ak), cfg.admin.token_file);
        }
    }
  }
};

}  // namespace

GatewayConfig load_yaml(const std::string& text, std::vector<ConfigError>& errors) {
  GatewayConfig cfg;
  try {
    if (parser_would_loop(text)) {
      errors.push_back({"", "",
                        "YAML syntax error: the text cannot be read as YAML (a stray ',' where a "
                        "value should start?)"});
      return cfg;
    }
    const std::vector<YAML::Node> docs = YAML::LoadAll(text);
    if (docs.size() > 1) {
      ConfigError problem{"", "",
                          "expected one YAML document, found " + std::to_string(docs.size())};
      const YAML::Mark mark = docs[1].Mark();
      if (!mark.is_null()) {
        problem.line = mark.line + 1;
        problem.column = mark.column + 1;
      }
      errors.push_back(std::move(problem));
      return cfg;
    }
    Loader loader(errors);
    loader.root(docs.empty() ? YAML::Node() : docs[0], cfg);
  } catch (const YAML::Exception& exception) {
    ConfigError err{"", "", "YAML syntax error: " + exception.msg};
    if (!exception.mark.is_null()) {
      err.line = exception.mark.line + 1;
      err.column = exception.mark.column + 1;
    }
    errors.push_back(std::move(err));
  } catch (const std::exception& exception) {
    errors.push_back({"", "", std::string("cannot read the configuration: ") + exception.what()});
  }
  return cfg;
}

}  // namespace llmux::config
