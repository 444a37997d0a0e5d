// SPDX-License-Identifier: Apache-2.0
#pragma once
// The gateway's configuration: plain structs with defaults, loaded from YAML (or built from
// `llmux gateway --backend NAME=URL ...`), validated once, loudly: validate() returns every
// error (field, value, reason) and the gateway refuses to start on any. Worker threads only
// read a validated, immutable GatewayConfig.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmux::config {

using Millis = std::chrono::milliseconds;

/// A listener's `tls: {cert, key}`: it serves HTTPS with this certificate chain and private key
/// (PEM files, read at start and at each reload). Both empty: plain HTTP.
struct ListenerTls {
  std::string cert, key;
  bool enabled() const { return !cert.empty() || !key.empty(); }
};

struct Listener {
  std::string address = "0.0.0.0";
  std::uint16_t port = 8080;
  ListenerTls tls{};
};

/// Active health checks: GET `path` every `interval` (± `jitter` of it), failing after
/// `timeout`; `unhealthy_threshold` failures in a row take the backend out, `healthy_threshold`
/// passes in a row bring it back. A 2xx answer passes (vLLM's /health is 200 once loaded).
struct HealthChecks {
  bool enabled = true;
  std::string path = "/health";
  Millis interval{2000};
  Millis timeout{1000};
  int healthy_threshold = 1;
  int unhealthy_threshold = 2;
  double jitter = 0.1;  // fraction of the interval, 0-0.5
};

/// A backend's own `health_checks:` keys; unset ones come from the top-level block.
struct HealthChecksOverride {
  std::optional<bool> enabled;
  std::optional<std::string> path;
  std::optional<Millis> interval, timeout;
  std::optional<int> healthy_threshold, unhealthy_threshold;
  std::optional<double> jitter;
};

/// `base` with the keys `checks` sets replaced.
void apply(const HealthChecksOverride& checks, HealthChecks& base);

/// Passive outlier detection from attempts' outcomes: `consecutive_failures` connect failures,
/// timeouts or 5xx in a row eject a backend for `base_ejection`, doubled for each ejection in a
/// row (no success in between), at most `max_ejection`. A backend that stops producing tokens on
/// the event streams it is in the middle of (upstream/stall.hpp: for half of `stall_timeout` on
/// every stream that was flowing, or for `stall_timeout` on one with no sign of life from the
/// backend meanwhile) is ejected at once and its silent streams end with an error event; 0: off.
struct OutlierDetection {
  bool enabled = true;
  int consecutive_failures = 3;
  Millis base_ejection{5000};
  Millis max_ejection{60000};
  Millis stall_timeout{3000};
};

/// An https:// backend's `tls: {ca_file, verify}`: its certificate is checked against `ca_file`
/// (PEM) or, when empty, the system's CA store, and against its host name; `verify: false`
/// checks nothing (lint warns).
struct BackendTls {
  std::string ca_file;
  bool verify = true;
};

/// What a backend does in prefill/decode disaggregation: `prefill` computes prompts only (its KV
/// cache fetched by a decode backend; never the client's answer), `decode` answers (fetching a
/// prefill's KV cache, or prefilling itself), `both` either — vLLM's `kv_role: kv_both` lets the
/// gateway decide per request.
enum class BackendRole : std::uint8_t { both, prefill, decode };
std::string_view to_string(BackendRole role);

struct Backend {
  std::string name;
  std::string url;  // http[s]://host[:port][/base-path]
  // Parsed from url by validate():
  std::string scheme, host, base_path;
  std::uint16_t port = 0;
  BackendTls tls{};      // https:// only
  std::string api_key;   // sent upstream as "Authorization: Bearer <key>" when set
  int weight = 1;        // 1-100
  int max_inflight = 0;  // 0: unlimited
  // An idle pooled connection to this backend is closed after this long: keep it below the
  // backend's own keep-alive timeout (uvicorn, which vLLM runs on, closes after 5 s), so the
  // gateway never sends a request on a connection the backend is closing.
  Millis pool_idle_timeout{4000};
  HealthChecksOverride health_override;  // as written under the backend
  HealthChecks health;                   // resolved by validate(): top level + override
  /// Send each request's priority class to the backend as vLLM's `priority` field (vLLM started
  /// with `--scheduling-policy priority`; without it vLLM refuses any value but 0).
  bool send_priority = false;
  /// Prefill/decode disaggregation (config/disaggregation.cpp): what the gateway may ask of it.
  BackendRole role = BackendRole::both;
};

struct RouteMatch {
  std::string path;                  // exact path ("" = any)
  std::string path_prefix;           // prefix ("" = any)
  std::vector<std::string> methods;  // upper case; empty = any
  std::vector<std::string> models;   // request body's "model"; empty = any
};

/// Hedging before the first token (gateway/hedge.hpp): a generation request whose backend has
/// produced no token after `after` (or `after_p99` times the learned time to first token, p99, of
/// the route's fastest backend) is sent to a second backend of the route as well, within the
/// route's retry budget; the first to produce a token wins, the other is cancelled. Off unless one
/// of the two is set.
struct Hedge {
  Millis after{0};       // a fixed wait (0: not set)
  double after_p99 = 0;  // a multiple of the route's learned p99 (`after: 2x`; 0: not set)
  bool enabled() const { return after.count() > 0 || after_p99 > 0; }
};

/// Prefill/decode disaggregation (gateway/disaggregation.hpp): a request's prompt is computed on
/// a prefill backend, whose KV cache a decode backend then fetches (vLLM's NixlConnector) to
/// generate the answer. `always`: every chat and completions request of the route; `automatic`
/// (`auto` in YAML): only prompts whose uncached part is above `threshold_tokens`, while the
/// prefill backends hold fewer than `max_queued_prefill_tokens` prompt tokens in prefill.
struct Disaggregation {
  enum class Mode : std::uint8_t { off, always, automatic };
  Mode mode = Mode::off;
  std::int64_t threshold_tokens = 8192;
  std::int64_t max_queued_prefill_tokens = 131072;
  bool enabled() const { return mode != Mode::off; }
};

struct Route {
  std::string name;  // defaults to "route<i>"
  RouteMatch match;
  std::vector<std::string> backends;   // names, in order
  std::string policy = "round_robin";  // policy::policy_names() (policy/policy.hpp)
  // The policy's options: `policy: {name: NAME, OPTION: VALUE, ...}` (none for round_robin and
  // first); checked by the policy registry when the config is validated.
  std::map<std::string, std::string> policy_options;
  Hedge hedge;
  Disaggregation disaggregation;
};

struct Timeouts {
  Millis connect{5000};         // TCP connect to a backend
  Millis first_byte{300000};    // request sent → first response byte (prefill can be long)
  Millis idle{120000};          // between two reads of a streaming response
  Millis client_header{30000};  // client connection → complete request header (408)
  Millis client_body{60000};    // the longest gap between two reads of a request body (408)
  Millis client_idle{75000};    // keep-alive connection idle between requests
  Millis drain{30000};          // SIGTERM: time running requests get to finish
};

struct Limits {
  std::uint64_t max_body_bytes = 16ull << 20;  // 413 above
  std::uint32_t max_header_bytes = 64 << 10;   // 431 above
  int max_connections = 0;     // open client connections; above: 503 and close (0: no limit)
  double connection_rate = 0;  // requests per second on one connection; above: 429 (0: none)
};

/// Retries of what never reached a backend (a refused or timed-out connect, a write that failed
/// before its first byte), always on a backend not yet tried.
struct Retries {
  int max_attempts = 2;          // attempts per request in all (1: no retry), 1-10
  Millis backoff{5};             // before the first retry, jittered (x1-2), doubled after each
  Millis request_budget{10000};  // no retry starts later than this after the request came
  double budget = 0.2;           // retries per second at most this fraction of the route's requests
  int min_retries_per_second = 10;  // ... but always this many (a quiet route can still retry)
};

/// Stream migration (gateway/migration.hpp): a chat or completions stream whose backend breaks
/// before its final event goes on from another backend of its route, which is asked to continue
/// what was generated so far; the client sees one stream.
struct Migration {
  bool enabled = true;
  int max_migrations = 2;  // continuation legs per request at most, 1-10
  /// The generated text a stream keeps to be continued (~8k tokens); beyond it a cut stream ends
  /// with an error event.
  std::uint64_t max_kept_bytes = 64 << 10;
};

/// Admission control: a request that finds every backend of its route at max_inflight waits in
/// the route's FIFO queue, at most `size` of them (more: 429) for at most `timeout` (then 503).
/// `size` 0: no queue (503 at once).
struct Queue {
  int size = 256;
  Millis timeout{60000};
};

/// Response affinity (gateway/affinity.hpp): the backend that returned a response id gets every
/// later request naming it (previous_response_id, /v1/responses/{id}...). The table keeps at
/// most `max_entries` ids, each for `ttl` after it was last used; an id it does not know is
/// looked for by asking the route's backends, each within `lookup_timeout`.
struct Affinity {
  bool enabled = true;
  std::int64_t max_entries = 1000000;
  Millis ttl{std::chrono::hours(24)};
  Millis lookup_timeout{2000};
};

/// Where the gateway's shared state lives (the response-id table): `memory` (this process), or a
/// Redis every replica shares (`redis://[[user:]password@]host[:port][/db]`), keys beginning
/// with `prefix` (one per deployment). A request waits at most `timeout` for Redis; when Redis
/// is slow or away the gateway goes on with what it knows locally (gateway/affinity.hpp).
struct State {
  std::string url = "memory";
  std::string prefix = "llmux:";
  Millis timeout{50};
  bool redis() const { return url != "memory"; }
};

/// Load signals from the backends themselves: their Prometheus `path` (vLLM's /metrics) read
/// every `interval` (each read within `timeout`, off the request path); a reading older than
/// `stale_after` no longer counts. For the least_load policy.
struct BackendMetrics {
  bool enabled = false;
  std::string path = "/metrics";
  Millis interval{1000};
  Millis timeout{1000};
  Millis stale_after{3000};
};

struct AccessLog {
  std::string target = "stdout";  // "stdout", "off", or a file path
};

/// The gateway's own metrics (GET /metrics, Prometheus text) and dashboard (GET /dashboard);
/// `enabled` false: nothing counted, those paths routed like any other. `listen` set: served on
/// that address only (not on the main listeners). `stream_usage`: a streaming chat/completions
/// request whose client did not ask for usage is sent asking for it, and the extra usage chunk
/// removed before the client sees it, so every stream's tokens count.
struct Metrics {
  bool enabled = true;
  std::vector<Listener> listen;  // at most one
  bool stream_usage = true;
};

/// The admin API (/admin/...): off unless a token is set (`token`, or the first line of
/// `token_file`); every call then needs `Authorization: Bearer <token>`.
struct Admin {
  std::string token;
  std::string token_file;
};

/// `tenants` (gateway/fair_queue.hpp): whom a request is for — its API key's name, else the value
/// of `header`, else "anonymous" — and how a route's queue shares its turns between them: by
/// tokens, in proportion to `weights` (1 for a tenant not named), each holding at most
/// `max_queued` places of each route's queue (0: none but queue.size).
struct Tenants {
  std::string header = "X-Llmux-Tenant";
  std::map<std::string, double, std::less<>> weights;
  int max_queued = 128;
  double weight(std::string_view tenant) const {
    const auto found = weights.find(tenant);
    return found == weights.end() ? 1.0 : found->second;
  }
};

/// One priority class (`priorities.classes`, highest first).
struct PriorityClass {
  std::string name;
  /// The requests of this class hold at most max_share of each backend's max_inflight (at least
  /// one slot): the rest stay free for the other classes. Not more than the class above's.
  double max_share = 1.0;
  /// A request waiting longer than this in a route's queue counts as one class higher (0: never;
  /// the highest class is never promoted).
  Millis promote_after{0};
  /// vLLM's `priority` for it (lower runs first), sent to backends with `send_priority`; unset:
  /// its distance from the default class (the default class is 0, the one above -1).
  std::optional<int> vllm_priority;
};

/// `priorities`: a request's class is named by `header`, else its key's `priority`, else
/// `default`; a key's `max_priority` caps it — a request above its key's cap is served at the
/// cap (with a log line), or refused with 403 when `refuse_above_key_cap`.
struct Priorities {
  std::string header = "X-Llmux-Priority";
  std::vector<PriorityClass> classes{{"interactive", 1.0, Millis{0}, std::nullopt},
                                     {"default", 1.0, Millis{15000}, std::nullopt},
                                     {"batch", 0.5, Millis{30000}, std::nullopt}};
  std::string default_class = "default";
  bool refuse_above_key_cap = false;
  /// The index of class `name` (0: highest), or -1.
  int index_of(std::string_view name) const {
    for (std::size_t i = 0; i < classes.size(); ++i)
      if (classes[i].name == name) return static_cast<int>(i);
    return -1;
  }
  /// The vLLM priority of class `index`.
  int vllm_priority(int index) const {
    const auto& rule = classes[static_cast<std::size_t>(index)];
    return rule.vllm_priority ? *rule.vllm_priority : index - index_of(default_class);
  }
};

/// A key's limits (auth/quota.hpp); 0: none. Tokens are those the responses' `usage` reports.
struct KeyLimits {
  std::int64_t requests_per_minute = 0;
  std::int64_t tokens_per_minute = 0;
  std::int64_t concurrent = 0;
};

/// One client API key (auth/keys.hpp). Written as `key:` (plaintext: hashed while loading, never
/// kept) or `sha256:` (its hex digest); only the digest is kept.
struct ApiKey {
  std::string name;                 // who it is, in usage and logs; unique
  std::string sha256;               // 64 lower-case hex digits (validate() lowers it)
  std::vector<std::string> models;  // allowed models; empty: all
  std::vector<std::string> routes;  // allowed route names; empty: all
  KeyLimits limits;
  std::string priority;      // its requests' class when they name none ("": priorities.default)
  std::string max_priority;  // the highest class it may ask for ("": any)
};

/// `auth`: on when any key is configured (inline or in `keys_file`); then every request needs
/// `Authorization: Bearer <key>`. `file_keys` is filled by validate() from `keys_file` (read on
/// every load and reload).
struct Auth {
  std::vector<ApiKey> keys;
  std::string keys_file;
  std::vector<ApiKey> file_keys;
  Millis usage_retention{std::chrono::hours(24 * 31)};  // usage ledger: hours kept
  bool enabled() const { return !keys.empty() || !keys_file.empty(); }
};

/// `quotas`: while the shared state store is away, each replica admits `local_share` of each
/// limit; unset: 1 / the number of replicas the state store reports (1 with `state: memory`).
struct Quotas {
  std::optional<double> local_share;
};

/// The SHA-256 of `key` as 64 lower-case hex digits: how `auth.keys[].sha256` is written.
std::string hash_key(std::string_view key);

struct GatewayConfig {
  std::vector<Listener> listeners{Listener{}};
  int threads = 0;  // 0: one per core
  std::vector<Backend> backends;
  std::vector<Route> routes;
  Timeouts timeouts;
  Limits limits;
  AccessLog access_log;
  std::string pid_file;        // the gateway's pid, for `llmux gateway --reload` ("": none)
  HealthChecks health_checks;  // defaults for every backend
  OutlierDetection outlier_detection;
  Retries retries;
  Migration migration;
  Queue queue;
  Affinity affinity;
  State state;
  BackendMetrics backend_metrics;
  Metrics metrics;
  Admin admin;
  Auth auth;
  Quotas quotas;
  Tenants tenants;
  Priorities priorities;
};

struct ConfigError {
  std::string field;   // e.g. "routes[2].backends[0]"
  std::string value;   // the offending value as written
  std::string reason;  // e.g. "no backend named 'server3' (known: server1, server2)"
  int line = 0;        // 1-based position in the YAML text when loading found it; 0: unknown
  int column = 0;
  /// "field: 'value': reason", with " (line L, column C)" appended when known; parts that are
  /// empty are left out (a YAML syntax error reads "line L, column C: reason").
  std::string to_string() const;
};

/// Loads YAML text; syntax and type errors come back as ConfigErrors (never throws).
/// The result is not validated yet.
GatewayConfig load_yaml(const std::string& text, std::vector<ConfigError>& errors);
GatewayConfig load_yaml_file(const std::string& path, std::vector<ConfigError>& errors);

/// load_yaml() then validate(): every error of both (a validation error about a field that
/// already failed to load is not repeated; after a syntax error nothing is validated).
/// Errors empty means the config is valid and ready to use.
GatewayConfig load_and_validate(const std::string& text, std::vector<ConfigError>& errors);
GatewayConfig load_and_validate_file(const std::string& path, std::vector<ConfigError>& errors);

/// The quick form: every path round-robined over `backends` ("NAME=URL"), listening on
/// 0.0.0.0:`port`. A malformed NAME=URL is an error; the result is not validated yet.
GatewayConfig quick_config(std::uint16_t port, const std::vector<std::string>& backends,
                           std::vector<ConfigError>& errors);

/// Checks everything and fills derived fields (backend scheme/host/port/base_path, route
/// names). Returns every error found; empty means valid.
std::vector<ConfigError> validate(GatewayConfig& cfg);

/// Parses "250ms", "5s", "2m", "1h", or a bare number of milliseconds (non-negative integers
/// only; nullopt for anything else or on overflow).
std::optional<Millis> parse_duration(const std::string& text);
/// Parses a multiple such as "2x" or "1.5X" (a positive number followed by x); nullopt for
/// anything else.
std::optional<double> parse_multiple(const std::string& text);
/// Parses "16MiB", "512KiB", "1GiB", "1000", "10MB" (MB = 10^6); units B, KB/MB/GB/TB,
/// KiB/MiB/GiB/TiB, case-insensitive. nullopt for anything else or on overflow.
std::optional<std::uint64_t> parse_size(const std::string& text);

}  // namespace llmux::config
