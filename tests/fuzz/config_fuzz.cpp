// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the input is a gateway config file (YAML text) given to
// llmux::config::load_and_validate(). It must never crash or throw, and what it returns must be
// consistent:
//   - the same text gives the same errors twice;
//   - every error has a reason and renders with to_string();
//   - no errors exactly when load_yaml() has none and validate() finds none in its result;
//   - a config without errors keeps every promise validate() makes (routes name existing
//     backends, the catch-all is last, derived backend fields are filled, limits hold, ...);
//   - validating a valid config again finds nothing and changes nothing.
// A broken invariant prints what broke and aborts (libFuzzer saves the input as a crash).
//
// Regression seeds for what it found (both fixed in src/config): yaml-cpp 0.7 looping forever in
// LoadAll() on a stray ',' (yaml-cpp#1040; corpus/config/yaml-cpp-1040-comma.yaml), and Boost.URL
// taking text after HOST[:PORT] without a '/' as the path
// (corpus/config/url-path-without-slash.yaml).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "policy/policy.hpp"

namespace {

using llmux::config::ConfigError;
using llmux::config::GatewayConfig;

[[noreturn]] void fail(const char* what, const std::vector<ConfigError>& errors = {}) {
  std::fprintf(stderr, "config_fuzz: invariant broken: %s\n", what);
  for (const auto& e : errors) std::fprintf(stderr, "  %s\n", e.to_string().c_str());
  std::abort();
}

#define CHECK(cond)                        \
  do {                                     \
    if (!(cond)) fail("CHECK(" #cond ")"); \
  } while (0)

std::vector<std::string> rendered(const std::vector<ConfigError>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) {
    if (e.reason.empty()) fail("an error without a reason", {e});
    if (e.line < 0 || e.column < 0) fail("an error with a negative position", {e});
    std::string s = e.to_string();
    if (s.empty()) fail("an error that renders as nothing", {e});
    out.push_back(std::move(s) + "|" + e.field + "|" + e.value);
  }
  return out;
}

bool valid_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool matches_everything(const llmux::config::RouteMatch& m) {
  return m.path.empty() && (m.path_prefix.empty() || m.path_prefix == "/") && m.methods.empty() &&
         m.models.empty();
}

/// What validate() promises about a config it found no error in.
void check_valid(const GatewayConfig& cfg) {
  CHECK(!cfg.listeners.empty());
  CHECK(cfg.threads >= 0 && cfg.threads <= 1024);

  CHECK(!cfg.backends.empty() && cfg.backends.size() <= 64);
  std::set<std::string> names;
  for (const auto& b : cfg.backends) {
    CHECK(!b.name.empty());
    for (char c : b.name) CHECK(valid_name_char(c));
    CHECK(names.insert(b.name).second);  // unique
    CHECK(b.scheme == "http");
    CHECK(!b.host.empty());
    CHECK(b.port >= 1);
    CHECK(b.base_path.empty() || b.base_path.front() == '/');
    CHECK(b.base_path.empty() || b.base_path.back() != '/');
    CHECK(b.weight >= 1 && b.weight <= 100);
    CHECK(b.max_inflight >= 0);
    for (char c : b.api_key) CHECK(!std::iscntrl(static_cast<unsigned char>(c)));
  }

  CHECK(!cfg.routes.empty());
  std::set<std::string> route_names;
  for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
    const auto& r = cfg.routes[i];
    CHECK(!r.name.empty());
    CHECK(route_names.insert(r.name).second);  // unique
    CHECK(r.match.path.empty() || r.match.path_prefix.empty());
    CHECK(r.match.path.empty() || r.match.path.front() == '/');
    CHECK(r.match.path_prefix.empty() || r.match.path_prefix.front() == '/');
    for (const auto& m : r.match.methods) {
      CHECK(!m.empty());
      for (char c : m) CHECK(std::isupper(static_cast<unsigned char>(c)));
    }
    for (const auto& m : r.match.models) CHECK(!m.empty());
    // Every route's backends name existing backends, each at most once.
    CHECK(!r.backends.empty());
    std::set<std::string> seen;
    for (const auto& name : r.backends) {
      CHECK(names.count(name) == 1);
      CHECK(seen.insert(name).second);
    }
    CHECK(llmux::policy::make_policy(r.policy) != nullptr);
    // A route that matches every request makes every later route unreachable: it is last.
    if (matches_everything(r.match)) CHECK(i + 1 == cfg.routes.size());
  }

  CHECK(cfg.timeouts.connect.count() > 0);
  CHECK(cfg.timeouts.first_byte.count() > 0);
  CHECK(cfg.timeouts.idle.count() > 0);
  CHECK(cfg.timeouts.client_header.count() > 0);
  CHECK(cfg.timeouts.client_idle.count() > 0);
  CHECK(cfg.timeouts.drain.count() > 0);
  CHECK(cfg.limits.max_body_bytes > 0);
  CHECK(cfg.limits.max_header_bytes > 0);
  CHECK(!cfg.access_log.target.empty());
}

bool same_derived(const GatewayConfig& a, const GatewayConfig& b) {
  if (a.backends.size() != b.backends.size() || a.routes.size() != b.routes.size()) return false;
  for (std::size_t i = 0; i < a.backends.size(); ++i) {
    const auto &x = a.backends[i], &y = b.backends[i];
    if (x.scheme != y.scheme || x.host != y.host || x.port != y.port ||
        x.base_path != y.base_path || x.name != y.name || x.url != y.url)
      return false;
  }
  for (std::size_t i = 0; i < a.routes.size(); ++i)
    if (a.routes[i].name != b.routes[i].name || a.routes[i].backends != b.routes[i].backends)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  std::vector<ConfigError> errors;
  const GatewayConfig cfg = llmux::config::load_and_validate(text, errors);
  const std::vector<std::string> first = rendered(errors);

  // Deterministic.
  std::vector<ConfigError> again;
  llmux::config::load_and_validate(text, again);
  if (rendered(again) != first) fail("two loads of the same text disagree", again);

  // load_and_validate() == load_yaml() + validate(), as far as "is it valid" goes.
  std::vector<ConfigError> load_errors;
  GatewayConfig loaded = llmux::config::load_yaml(text, load_errors);
  rendered(load_errors);
  const std::vector<ConfigError> validate_errors = llmux::config::validate(loaded);
  rendered(validate_errors);
  const bool valid_by_parts = load_errors.empty() && validate_errors.empty();
  if (errors.empty() != valid_by_parts)
    fail(errors.empty() ? "load_and_validate() found no error, load_yaml()+validate() did"
                        : "load_and_validate() found errors, load_yaml()+validate() none",
         errors.empty() ? (load_errors.empty() ? validate_errors : load_errors) : errors);

  if (!errors.empty()) return 0;
  check_valid(cfg);

  // Validating a valid config again finds nothing and recomputes the same derived fields.
  GatewayConfig copy = cfg;
  const std::vector<ConfigError> revalidated = llmux::config::validate(copy);
  if (!revalidated.empty()) fail("a valid config does not validate again", revalidated);
  if (!same_derived(cfg, copy)) fail("validating a valid config again changed it");
  return 0;
}
