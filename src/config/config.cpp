// The gateway's configuration: YAML loading, the quick form, validation.
//
// Schema (docs/config.md is the user-facing version of this comment; keep them in step):
//
//   listen: [{address: 0.0.0.0, port: 8080}]  # default. Also a string ":8080", "127.0.0.1:8080",
//                                              # "[::1]:8080", a bare port 8080, or a list of any
//                                              # of these. Port 0: a free port chosen at start.
//   threads: 0                                 # worker threads; 0 = one per core; 0-1024
//   backends:                                  # 1-64 of them
//     - name: server1                          # required; letters, digits, '-', '_', '.'
//       url: http://192.168.200.101:30000      # required; http:// only (https:// not yet);
//                                              # port 1-65535, default 80; an optional base
//                                              # path is prepended to every request path
//       api_key: "..."                         # optional; sent as "Authorization: Bearer ..."
//       weight: 1                              # 1-100, for round_robin
//       max_inflight: 0                        # 0 = unlimited
//       pool_idle_timeout: 4s                  # idle pooled connections closed after this;
//                                              # keep below the backend's keep-alive timeout
//   routes:                                    # matched in order; the first match wins
//     - name: responses                        # optional; default "route<i>" (i from 0)
//       match:                                 # all conditions must hold; none = every request
//         path_prefix: /v1/responses           # plain string prefix of the path, or
//         path: /v1/chat/completions           # the exact path (not both)
//         methods: [POST]                      # upper case; empty/absent = any method
//         models: [Qwen3.6-35B-A3B]            # the body's "model"; empty/absent = any model
//       backends: [server1]                    # names from `backends`, in order
//       policy: first                          # policy::policy_names(): round_robin (default),
//                                              # first
//   timeouts:                                  # "250ms", "5s", "2m", "1h", or a number of ms
//     {connect: 5s, first_byte: 300s, idle: 120s, client_header: 30s, client_body: 60s,
//      client_idle: 75s, drain: 30s}
//   limits: {max_body_bytes: 16MiB, max_header_bytes: 64KiB}  # KiB/MiB/GiB (2^10...),
//                                              # KB/MB/GB (10^3...), B, or a number of bytes
//   access_log: stdout                         # stdout, off, or a file path
//
// Loading is strict: unknown keys (with a "did you mean" for near misses), duplicate keys, wrong
// types and YAML syntax errors are all reported, with the field path ("routes[1].match.methods[0]")
// and the line and column. Nothing here throws. validate() then checks meaning and reports every
// problem at once; a route after one that matches everything it matches is an error
// (unreachable), never silently ignored.
#include "config/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/url/ipv4_address.hpp>
#include <boost/url/ipv6_address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "policy/policy.hpp"

namespace llmux::config {

std::string ConfigError::to_string() const {
  std::string out;
  if (!field.empty())
    out = field;
  else if (line > 0)
    out = fmt::format("line {}, column {}", line, column);
  if (!value.empty()) {
    if (!out.empty()) out += ": ";
    out += fmt::format("'{}'", value);
  }
  if (!out.empty()) out += ": ";
  out += reason;
  if (!field.empty() && line > 0) out += fmt::format(" (line {}, column {})", line, column);
  return out;
}

namespace {

const std::vector<std::string> kHttpMethods{"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                            "CONNECT", "OPTIONS", "TRACE", "PATCH"};
constexpr int kMaxBackends = 64;  // policy::TriedSet is a 64-bit mask
constexpr int kMaxWeight = 100;   // RoundRobin walks the weight cycle on every pick
constexpr int kMaxThreads = 1024;

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

/// The closest of `known` to `word` if it is a near miss (edit distance <= 2, ignoring case, or
/// one is a prefix of the other and the shorter has at least 4 characters); "" otherwise.
std::string suggest(std::string_view word, const std::vector<std::string>& known) {
  const std::string w = lower(word);
  std::string best;
  std::size_t best_d = 3;
  for (const auto& k : known) {
    const std::string kl = lower(k);
    std::size_t d = edit_distance(w, kl);
    if (d > 2 && std::min(w.size(), kl.size()) >= 4 && (kl.starts_with(w) || w.starts_with(kl)))
      d = 2;
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best;
}

bool parse_uint(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
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

std::string format_millis(Millis ms) {
  return fmt::format("{}ms", ms.count());
}

/// Parses ":8080", "8080", "127.0.0.1:8080", "[::1]:8080".
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

// ------------------------------------------------------------------------------------------
// The YAML walker.

std::string child(const std::string& field, std::string_view key) {
  return field.empty() ? std::string(key) : fmt::format("{}.{}", field, key);
}

std::string index(const std::string& field, std::size_t i) {
  return fmt::format("{}[{}]", field, i);
}

/// The node as written, shortened, for error messages.
std::string render(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  std::string s = e.c_str();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string kind(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "a scalar";
}

class Loader {
 public:
  explicit Loader(std::vector<ConfigError>& errors) : errors_(errors) {}

  void error(const std::string& field, const YAML::Node& at, std::string value,
             std::string reason) {
    ConfigError e{field, std::move(value), std::move(reason)};
    const YAML::Mark m = at.Mark();
    if (!m.is_null() && m.line >= 0) {
      e.line = m.line + 1;
      e.column = m.column + 1;
    }
    errors_.push_back(std::move(e));
  }

  void type_error(const std::string& field, const YAML::Node& n, std::string_view expected) {
    error(field, n, render(n), fmt::format("expected {}, got {}", expected, kind(n)));
  }

  /// The entries of mapping `n` whose keys are in `known`; reports unknown and duplicate keys.
  std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& n,
                                                          const std::string& field,
                                                          const std::vector<std::string>& known) {
    std::vector<std::pair<std::string, YAML::Node>> out;
    if (!n.IsMap()) {
      type_error(field, n, "a mapping");
      return out;
    }
    std::set<std::string> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;
      if (!key.IsScalar()) {
        error(field, key, render(key), "keys must be plain names");
        continue;
      }
      const std::string& k = key.Scalar();
      if (k == "<<") {
        error(child(field, k), key, k, "YAML merge keys are not supported");
        continue;
      }
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        const std::string near = suggest(k, known);
        error(child(field, k), key, k,
              near.empty() ? fmt::format("unknown key (known: {})", join(known))
                           : fmt::format("unknown key; did you mean '{}'?", near));
        continue;
      }
      if (!seen.insert(k).second) {
        error(child(field, k), key, k, "duplicate key");
        continue;
      }
      out.emplace_back(k, it->second);
    }
    return out;
  }

  bool string(const YAML::Node& n, const std::string& field, std::string& out) {
    if (!n.IsScalar()) {
      type_error(field, n, "a string");
      return false;
    }
    out = n.Scalar();
    return true;
  }

  template <class Int>
  bool integer(const YAML::Node& n, const std::string& field, Int& out) {
    if (!n.IsScalar()) {
      type_error(field, n, "an integer");
      return false;
    }
    const std::string& s = n.Scalar();
    long long v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || p != s.data() + s.size() || ec == std::errc::invalid_argument) {
      error(field, n, s, "expected an integer");
      return false;
    }
    if (ec == std::errc::result_out_of_range || v < std::numeric_limits<Int>::min() ||
        v > std::numeric_limits<Int>::max()) {
      error(field, n, s, "out of range");
      return false;
    }
    out = static_cast<Int>(v);
    return true;
  }

  void strings(const YAML::Node& n, const std::string& field, std::vector<std::string>& out) {
    if (!n.IsSequence()) {
      type_error(field, n, "a list of strings");
      return;
    }
    out.clear();
    for (std::size_t i = 0; i < n.size(); ++i) {
      std::string s;
      if (string(n[i], index(field, i), s)) out.push_back(std::move(s));
    }
  }

  void duration(const YAML::Node& n, const std::string& field, Millis& out) {
    if (!n.IsScalar()) {
      type_error(field, n, "a duration");
      return;
    }
    if (auto d = parse_duration(n.Scalar()))
      out = *d;
    else
      error(field, n, n.Scalar(),
            "expected a duration such as 250ms, 5s, 2m or 1h (a bare number is milliseconds)");
  }

  bool size(const YAML::Node& n, const std::string& field, std::uint64_t& out) {
    if (!n.IsScalar()) {
      type_error(field, n, "a size");
      return false;
    }
    if (auto s = parse_size(n.Scalar())) {
      out = *s;
      return true;
    }
    error(field, n, n.Scalar(), "expected a size such as 16MiB, 512KiB, 10MB or a number of bytes");
    return false;
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
    for (const auto& [k, v] : entries(n, field, {"address", "port"})) {
      if (k == "address") string(v, child(field, k), l.address);
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
    for (const auto& [k, v] : entries(
             n, field, {"name", "url", "api_key", "weight", "max_inflight", "pool_idle_timeout"})) {
      const std::string f = child(field, k);
      if (k == "name") string(v, f, b.name);
      if (k == "url") string(v, f, b.url);
      if (k == "api_key") string(v, f, b.api_key);
      if (k == "weight") integer(v, f, b.weight);
      if (k == "max_inflight") integer(v, f, b.max_inflight);
      if (k == "pool_idle_timeout") duration(v, f, b.pool_idle_timeout);
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
      if (k == "policy") string(v, f, r.policy);
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
    for (const auto& [k, v] : entries(n, field, {"max_body_bytes", "max_header_bytes"})) {
      const std::string f = child(field, k);
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
                 {"listen", "threads", "backends", "routes", "timeouts", "limits", "access_log"})) {
      if (k == "listen") listen(v, cfg.listeners);
      if (k == "threads") integer(v, "threads", cfg.threads);
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
    }
  }

 private:
  std::vector<ConfigError>& errors_;
};

// ------------------------------------------------------------------------------------------
// Validation.

bool valid_backend_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

/// Fills b's scheme/host/port/base_path from b.url; reports what is wrong with it.
void parse_backend_url(Backend& b, const std::string& field, std::vector<ConfigError>& errs) {
  b.scheme.clear();
  b.host.clear();
  b.base_path.clear();
  b.port = 0;
  const std::string& url = b.url;
  auto fail = [&](std::string reason) { errs.push_back({field, url, std::move(reason)}); };
  if (url.empty()) return fail("a backend needs a url, e.g. http://127.0.0.1:30000");
  if (url.find("://") == std::string::npos) return fail("expected http://HOST[:PORT][/PATH]");
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) return fail(fmt::format("not a valid URL ({})", parsed.error().message()));
  const boost::urls::url_view u = *parsed;
  const std::string scheme = lower(u.scheme());
  if (scheme == "https")
    return fail("https:// backends are not supported yet; only http:// is supported");
  if (scheme != "http")
    return fail(fmt::format("unsupported scheme '{}'; only http:// is supported", scheme));
  if (u.has_userinfo()) return fail("credentials in the URL are not supported; use api_key");
  if (u.has_query()) return fail("a backend URL cannot have a query (?...)");
  if (u.has_fragment()) return fail("a backend URL cannot have a fragment (#...)");
  const std::string host = u.host_address();
  if (host.empty()) return fail("a host is required");
  std::uint16_t port = 80;
  if (u.has_port()) {
    std::uint64_t p = 0;
    if (!parse_uint(u.port(), p) || p < 1 || p > 65535) return fail("port must be 1-65535");
    port = static_cast<std::uint16_t>(p);
  }
  std::string path(u.encoded_path());
  while (!path.empty() && path.back() == '/') path.pop_back();
  b.scheme = scheme;
  b.host = host;
  b.port = port;
  b.base_path = path;
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

/// True if `field` is `prefix` or lies inside it ("a.b" and "a.b[0]" are inside "a.b").
bool inside(std::string_view field, std::string_view prefix) {
  if (!field.starts_with(prefix)) return false;
  if (field.size() == prefix.size()) return true;
  const char next = field[prefix.size()];
  return next == '.' || next == '[';
}

}  // namespace

// ------------------------------------------------------------------------------------------

std::optional<Millis> parse_duration(const std::string& text) {
  std::string_view s = text;
  std::size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  std::uint64_t n = 0;
  if (!parse_uint(s.substr(0, digits), n)) return std::nullopt;
  std::string_view unit = s.substr(digits);
  if (unit.starts_with(' ')) {  // "5 s", but not "5 "
    while (unit.starts_with(' ')) unit.remove_prefix(1);
    if (unit.empty()) return std::nullopt;
  }
  std::uint64_t factor = 0;
  if (unit.empty() || unit == "ms")
    factor = 1;
  else if (unit == "s")
    factor = 1000;
  else if (unit == "m")
    factor = 60 * 1000;
  else if (unit == "h")
    factor = 60 * 60 * 1000;
  else
    return std::nullopt;
  if (n > static_cast<std::uint64_t>(std::numeric_limits<Millis::rep>::max()) / factor)
    return std::nullopt;
  return Millis(static_cast<Millis::rep>(n * factor));
}

std::optional<std::uint64_t> parse_size(const std::string& text) {
  std::string_view s = text;
  std::size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  std::uint64_t n = 0;
  if (!parse_uint(s.substr(0, digits), n)) return std::nullopt;
  std::string_view rest = s.substr(digits);
  if (rest.starts_with(' ')) {  // "16 MiB", but not "16 "
    while (rest.starts_with(' ')) rest.remove_prefix(1);
    if (rest.empty()) return std::nullopt;
  }
  const std::string unit = lower(rest);
  static const std::vector<std::pair<std::string_view, std::uint64_t>> units{
      {"", 1},
      {"b", 1},
      {"kb", 1000ull},
      {"mb", 1000ull * 1000},
      {"gb", 1000ull * 1000 * 1000},
      {"tb", 1000ull * 1000 * 1000 * 1000},
      {"kib", 1ull << 10},
      {"mib", 1ull << 20},
      {"gib", 1ull << 30},
      {"tib", 1ull << 40},
  };
  for (const auto& [name, factor] : units) {
    if (unit != name) continue;
    if (n > std::numeric_limits<std::uint64_t>::max() / factor) return std::nullopt;
    return n * factor;
  }
  return std::nullopt;
}

GatewayConfig load_yaml(const std::string& text, std::vector<ConfigError>& errors) {
  GatewayConfig cfg;
  try {
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

GatewayConfig load_yaml_file(const std::string& path, std::vector<ConfigError>& errors) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors.push_back({"", path, fmt::format("cannot open: {}", std::strerror(errno))});
    return GatewayConfig{};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    errors.push_back({"", path, fmt::format("cannot read: {}", std::strerror(errno))});
    return GatewayConfig{};
  }
  return load_yaml(text.str(), errors);
}

GatewayConfig load_and_validate(const std::string& text, std::vector<ConfigError>& errors) {
  const std::size_t before = errors.size();
  GatewayConfig cfg = load_yaml(text, errors);
  const std::vector<ConfigError> load_errors(errors.begin() + before, errors.end());
  for (const auto& e : load_errors)
    if (e.field.empty()) return cfg;  // syntax error or empty document: nothing to validate
  for (auto& e : validate(cfg)) {
    const bool reported = std::any_of(load_errors.begin(), load_errors.end(), [&](auto& le) {
      return inside(e.field, le.field) || inside(le.field, e.field);
    });
    if (!reported) errors.push_back(std::move(e));
  }
  return cfg;
}

GatewayConfig load_and_validate_file(const std::string& path, std::vector<ConfigError>& errors) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors.push_back({"", path, fmt::format("cannot open: {}", std::strerror(errno))});
    return GatewayConfig{};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_and_validate(text.str(), errors);
}

GatewayConfig quick_config(std::uint16_t port, const std::vector<std::string>& backends,
                           std::vector<ConfigError>& errors) {
  GatewayConfig cfg;
  cfg.listeners = {Listener{"0.0.0.0", port}};
  Route all;
  all.name = "all";
  all.policy = "round_robin";
  for (std::size_t i = 0; i < backends.size(); ++i) {
    const std::string& spec = backends[i];
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      errors.push_back({fmt::format("--backend #{}", i + 1), spec,
                        "expected NAME=URL, e.g. server1=http://127.0.0.1:30000"});
      continue;
    }
    Backend b;
    b.name = spec.substr(0, eq);
    b.url = spec.substr(eq + 1);
    all.backends.push_back(b.name);
    cfg.backends.push_back(std::move(b));
  }
  if (backends.empty())
    errors.push_back({"--backend", "", "at least one --backend NAME=URL is required"});
  cfg.routes.push_back(std::move(all));
  return cfg;
}

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
    if (std::any_of(b.api_key.begin(), b.api_key.end(),
                    [](char c) { return std::iscntrl(static_cast<unsigned char>(c)) != 0; }))
      add(f + ".api_key", "(hidden)", "must not contain control characters");
    if (b.weight < 1 || b.weight > kMaxWeight)
      add(f + ".weight", std::to_string(b.weight), fmt::format("must be 1-{}", kMaxWeight));
    if (b.max_inflight < 0)
      add(f + ".max_inflight", std::to_string(b.max_inflight), "must be 0 (unlimited) or more");
    if (b.pool_idle_timeout.count() <= 0)
      add(f + ".pool_idle_timeout", format_millis(b.pool_idle_timeout), "must be greater than 0");
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

    if (!policy::make_policy(r.policy)) {
      const auto& known = policy::policy_names();
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

  // Limits.
  if (cfg.limits.max_body_bytes == 0) add("limits.max_body_bytes", "0", "must be greater than 0");
  if (cfg.limits.max_header_bytes == 0)
    add("limits.max_header_bytes", "0", "must be greater than 0");

  if (cfg.access_log.target.empty())
    add("access_log", "", "must be stdout, off or a file path; an empty string is not allowed");

  return errs;
}

}  // namespace llmux::config
