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
//                                              # first
//   timeouts:                                  # "250ms", "5s", "2m", "1h", or a number of ms
//     {connect: 5s, first_byte: 300s, idle: 120s, client_header: 30s, client_body: 60s,
//      client_idle: 75s, drain: 30s}
//   limits: {max_body_bytes: 16MiB, max_header_bytes: 64KiB}  # KiB/MiB/GiB (2^10...),
//                                              # KB/MB/GB (10^3...), B, or a number of bytes
//     # also max_connections: 0 (client connections; above: 503 + close; 0 = no limit) and
//     # connection_rate: 0 (requests/s on one connection; above: 429; 0 = no limit)
//   retries:                                   # only what never reached a backend
//     {max_attempts: 2, backoff: 5ms, request_budget: 10s, budget: 0.2,
//      min_retries_per_second: 10}
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

  void policy(const YAML::Node& n, const std::string& field, Route& r) {
    if (n.IsScalar()) {
      r.policy = n.Scalar();
      return;
    }
    if (!n.IsMap()) {
      type_error(field, n, "a policy name or a mapping {name: NAME, OPTION: VALUE}");
      return;
    }
    bool named = false;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) {
        error(field, key, render(key), "keys must be plain names");
        continue;
      }
      const std::string& k = key.Scalar();
      std::string value;
      if (!string(it->second, child(field, k), value)) continue;
      if (k == "name") {
        named = true;
        r.policy = value;
      } else if (!r.policy_options.emplace(k, value).second) {
        error(child(field, k), key, k, "duplicate key");
      }
    }
    if (!named) error(child(field, "name"), n, "", "a policy mapping needs a name");
  }

  // --- sections

  void listener(const YAML::Node& n, const std::string& field, std::vector<Listener>& out) {
    if (n.IsScalar()) {
      std::string why;
      if (auto l = parse_listen_string(n.Scalar(), why))
        out.push_back(*l);
      else
        error(field, n, n.Scalar(), why);
      return;
    }
    if (!n.IsMap()) {
      type_error(field, n, "\"ADDRESS:PORT\" or {address, port}");
      return;
    }
    Listener l;
    for (const auto& [k, v] : entries(n, field, {"address", "port", "tls"})) {
      if (k == "address") string(v, child(field, k), l.address);
      if (k == "tls") {
        for (const auto& [tk, tv] : entries(v, child(field, k), {"cert", "key"})) {
          if (tk == "cert") string(tv, child(child(field, k), tk), l.tls.cert);
          if (tk == "key") string(tv, child(child(field, k), tk), l.tls.key);
        }
      }
      if (k == "port") {
        std::uint64_t port = 0;
        if (!v.IsScalar() || !parse_uint(v.Scalar(), port))
          type_error(child(field, k), v, "a port number");
        else if (port > 65535)
          error(child(field, k), v, v.Scalar(), "port must be 0-65535 (0: a free port)");
        else
          l.port = static_cast<std::uint16_t>(port);
      }
    }
    out.push_back(l);
  }

  void listen(const YAML::Node& n, std::vector<Listener>& out) {
    out.clear();
    if (n.IsSequence()) {
      for (std::size_t i = 0; i < n.size(); ++i) listener(n[i], index("listen", i), out);
    } else {
      listener(n, "listen", out);
    }
  }

  void backend(const YAML::Node& n, const std::string& field, Backend& b) {
    for (const auto& [k, v] : entries(n, field,
                                      {"name", "url", "api_key", "weight", "max_inflight",
                                       "pool_idle_timeout", "health_checks", "tls"})) {
      const std::string f = child(field, k);
      if (k == "name") string(v, f, b.name);
      if (k == "url") string(v, f, b.url);
      if (k == "api_key") string(v, f, b.api_key);
      if (k == "weight") integer(v, f, b.weight);
      if (k == "max_inflight") integer(v, f, b.max_inflight);
      if (k == "pool_idle_timeout") duration(v, f, b.pool_idle_timeout);
      if (k == "health_checks") health_checks(v, f, b.health_override);
      if (k == "tls") {
        for (const auto& [tk, tv] : entries(v, f, {"ca_file", "verify"})) {
          if (tk == "ca_file") string(tv, child(f, tk), b.tls.ca_file);
          if (tk == "verify") boolean(tv, child(f, tk), b.tls.verify);
        }
      }
    }
  }

  /// A `health_checks` block into `o` (only the keys written are set).
  void health_checks(const YAML::Node& n, const std::string& field, HealthChecksOverride& o) {
    for (const auto& [k, v] : entries(n, field,
                                      {"enabled", "path", "interval", "timeout",
                                       "healthy_threshold", "unhealthy_threshold", "jitter"})) {
      const std::string f = child(field, k);
      if (k == "enabled") set(o.enabled, v, f, &Loader::boolean);
      if (k == "path") set(o.path, v, f, &Loader::string);
      if (k == "interval") set(o.interval, v, f, &Loader::duration_ok);
      if (k == "timeout") set(o.timeout, v, f, &Loader::duration_ok);
      if (k == "healthy_threshold") set(o.healthy_threshold, v, f, &Loader::integer<int>);
      if (k == "unhealthy_threshold") set(o.unhealthy_threshold, v, f, &Loader::integer<int>);
      if (k == "jitter") set(o.jitter, v, f, &Loader::number);
    }
  }

  void retries(const YAML::Node& n, Retries& r) {
    const std::string field = "retries";
    for (const auto& [k, v] : entries(
             n, field,
             {"max_attempts", "backoff", "request_budget", "budget", "min_retries_per_second"})) {
      const std::string f = child(field, k);
      if (k == "max_attempts") integer(v, f, r.max_attempts);
      if (k == "backoff") duration(v, f, r.backoff);
      if (k == "request_budget") duration(v, f, r.request_budget);
      if (k == "budget") number(v, f, r.budget);
      if (k == "min_retries_per_second") integer(v, f, r.min_retries_per_second);
    }
  }

  void outlier_detection(const YAML::Node& n, OutlierDetection& o) {
    const std::string field = "outlier_detection";
    for (const auto& [k, v] : entries(n, field,
                                      {"enabled", "consecutive_failures", "base_ejection",
                                       "max_ejection", "stall_timeout"})) {
      const std::string f = child(field, k);
      if (k == "enabled") boolean(v, f, o.enabled);
      if (k == "consecutive_failures") integer(v, f, o.consecutive_failures);
      if (k == "base_ejection") duration(v, f, o.base_ejection);
      if (k == "max_ejection") duration(v, f, o.max_ejection);
      if (k == "stall_timeout") duration(v, f, o.stall_timeout);
    }
  }

  void match(const YAML::Node& n, const std::string& field, RouteMatch& m) {
    for (const auto& [k, v] : entries(n, field, {"path", "path_prefix", "methods", "models"})) {
      const std::string f = child(field, k);
      if (k == "path") string(v, f, m.path);
      if (k == "path_prefix") string(v, f, m.path_prefix);
      if (k == "methods") strings(v, f, m.methods);
      if (k == "models") strings(v, f, m.models);
    }
  }

  void route(const YAML::Node& n, const std::string& field, Route& r) {
    for (const auto& [k, v] : entries(n, field, {"name", "match", "backends", "policy"})) {
      const std::string f = child(field, k);
      if (k == "name") string(v, f, r.name);
      if (k == "match") match(v, f, r.match);
      if (k == "backends") strings(v, f, r.backends);
      if (k == "policy") policy(v, f, r);
    }
  }

  void timeouts(const YAML::Node& n, Timeouts& t) {
    const std::string field = "timeouts";
    for (const auto& [k, v] : entries(n, field,
                                      {"connect", "first_byte", "idle", "client_header",
                                       "client_body", "client_idle", "drain"})) {
      const std::string f = child(field, k);
      if (k == "connect") duration(v, f, t.connect);
      if (k == "first_byte") duration(v, f, t.first_byte);
      if (k == "idle") duration(v, f, t.idle);
      if (k == "client_header") duration(v, f, t.client_header);
      if (k == "client_body") duration(v, f, t.client_body);
      if (k == "client_idle") duration(v, f, t.client_idle);
      if (k == "drain") duration(v, f, t.drain);
    }
  }

  void limits(const YAML::Node& n, Limits& l) {
    const std::string field = "limits";
    for (const auto& [k, v] :
         entries(n, field,
                 {"max_body_bytes", "max_header_bytes", "max_connections", "connection_rate"})) {
      const std::string f = child(field, k);
      if (k == "max_connections") {
        integer(v, f, l.max_connections);
        continue;
      }
      if (k == "connection_rate") {
        number(v, f, l.connection_rate);
        continue;
      }
      std::uint64_t size = 0;
      if (!this->size(v, f, size)) continue;
      if (k == "max_body_bytes") l.max_body_bytes = size;
      if (k == "max_header_bytes") {
        if (size > std::numeric_limits<std::uint32_t>::max())
          error(f, v, v.Scalar(), "at most 4GiB");
        else
          l.max_header_bytes = static_cast<std::uint32_t>(size);
      }
    }
  }

  void access_log(const YAML::Node& n, AccessLog& a) {
    if (!n.IsScalar()) {
      type_error("access_log", n, "stdout, off or a file path");
      return;
    }
    const std::string& s = n.Scalar();
    static const std::vector<std::string> booleans{"true", "false", "yes", "no", "on", "y", "n"};
    if (std::find(booleans.begin(), booleans.end(), lower(s)) != booleans.end()) {
      error("access_log", n, s, "not a log target; use stdout, off or a file path");
      return;
    }
    a.target = s;
  }

  void root(const YAML::Node& n, GatewayConfig& cfg) {
    if (!n.IsDefined() || n.IsNull()) {
      error("", n, "", "the configuration is empty; expected a mapping with backends and routes");
      return;
    }
    for (const auto& [k, v] :
         entries(n, "",
                 {"listen", "threads", "backends", "routes", "timeouts", "limits", "access_log",
                  "pid_file", "health_checks", "outlier_detection", "retries", "queue", "affinity",
                  "backend_metrics", "metrics", "admin", "auth", "quotas", "state"})) {
      if (k == "listen") listen(v, cfg.listeners);
      if (k == "threads") integer(v, "threads", cfg.threads);
      if (k == "auth") detail::load_auth(v, cfg.auth, *this);  // auth.cpp
      if (k == "quotas") detail::load_quotas(v, cfg.quotas, *this);
      if (k == "backends") {
        if (!v.IsSequence()) {
          type_error(k, v, "a list of backends");
          continue;
        }
        // Every entry is kept, even a broken one, so that its name still resolves in routes.
        for (std::size_t i = 0; i < v.size(); ++i)
          backend(v[i], index(k, i), cfg.backends.emplace_back());
      }
      if (k == "routes") {
        if (!v.IsSequence()) {
          type_error(k, v, "a list of routes");
          continue;
        }
        for (std::size_t i = 0; i < v.size(); ++i)
          route(v[i], index(k, i), cfg.routes.emplace_back());
      }
      if (k == "timeouts") timeouts(v, cfg.timeouts);
      if (k == "limits") limits(v, cfg.limits);
      if (k == "access_log") access_log(v, cfg.access_log);
      if (k == "pid_file") string(v, k, cfg.pid_file);
      if (k == "health_checks") {
        HealthChecksOverride o;
        health_checks(v, k, o);
        apply(o, cfg.health_checks);
      }
      if (k == "outlier_detection") outlier_detection(v, cfg.outlier_detection);
      if (k == "retries") retries(v, cfg.retries);
      if (k == "queue") {
        for (const auto& [qk, qv] : entries(v, k, {"size", "timeout"})) {
          if (qk == "size") integer(qv, child(k, qk), cfg.queue.size);
          if (qk == "timeout") duration(qv, child(k, qk), cfg.queue.timeout);
        }
      }
      if (k == "affinity") {
        auto& a = cfg.affinity;
        for (const auto& [ak, av] :
             entries(v, k, {"enabled", "max_entries", "ttl", "lookup_timeout"})) {
          if (ak == "enabled") boolean(av, child(k, ak), a.enabled);
          if (ak == "max_entries") integer(av, child(k, ak), a.max_entries);
          if (ak == "ttl") duration(av, child(k, ak), a.ttl);
          if (ak == "lookup_timeout") duration(av, child(k, ak), a.lookup_timeout);
        }
      }
      if (k == "state") {
        // `state: redis://...` or `state: {url, prefix, timeout}`.
        if (v.IsScalar()) {
          string(v, k, cfg.state.url);
        } else {
          for (const auto& [sk, sv] : entries(v, k, {"url", "prefix", "timeout"})) {
            if (sk == "url") string(sv, child(k, sk), cfg.state.url);
            if (sk == "prefix") string(sv, child(k, sk), cfg.state.prefix);
            if (sk == "timeout") duration(sv, child(k, sk), cfg.state.timeout);
          }
        }
      }
      if (k == "backend_metrics") {
        auto& m = cfg.backend_metrics;
        for (const auto& [mk, mv] :
             entries(v, k, {"enabled", "path", "interval", "timeout", "stale_after"})) {
          if (mk == "enabled") boolean(mv, child(k, mk), m.enabled);
          if (mk == "path") string(mv, child(k, mk), m.path);
          if (mk == "interval") duration(mv, child(k, mk), m.interval);
          if (mk == "timeout") duration(mv, child(k, mk), m.timeout);
          if (mk == "stale_after") duration(mv, child(k, mk), m.stale_after);
        }
      }
      if (k == "metrics")
        for (const auto& [mk, mv] : entries(v, k, {"enabled", "listen", "stream_usage"})) {
          if (mk == "enabled") boolean(mv, child(k, mk), cfg.metrics.enabled);
          if (mk == "listen") listener(mv, child(k, mk), cfg.metrics.listen);
          if (mk == "stream_usage") boolean(mv, child(k, mk), cfg.metrics.stream_usage);
        }
      if (k == "admin")
        for (const auto& [ak, av] : entries(v, k, {"token", "token_file"})) {
          if (ak == "token") string(av, child(k, ak), cfg.admin.token);
          if (ak == "token_file") string(av, child(k, ak), cfg.admin.token_file);
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
      ConfigError e{"", "", "expected one YAML document, found " + std::to_string(docs.size())};
      const YAML::Mark m = docs[1].Mark();
      if (!m.is_null()) {
        e.line = m.line + 1;
        e.column = m.column + 1;
      }
      errors.push_back(std::move(e));
      return cfg;
    }
    Loader loader(errors);
    loader.root(docs.empty() ? YAML::Node() : docs[0], cfg);
  } catch (const YAML::Exception& e) {
    ConfigError err{"", "", "YAML syntax error: " + e.msg};
    if (!e.mark.is_null()) {
      err.line = e.mark.line + 1;
      err.column = e.mark.column + 1;
    }
    errors.push_back(std::move(err));
  } catch (const std::exception& e) {
    errors.push_back({"", "", std::string("cannot read the configuration: ") + e.what()});
  }
  return cfg;
}

}  // namespace llmux::config
