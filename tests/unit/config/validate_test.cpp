// SPDX-License-Identifier: Apache-2.0
// validate(): every rule produces its error (field, value, reason), all errors come back at
// once, derived fields are filled; quick_config().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include <string>

#include "config/config.hpp"
#include "policy/policy.hpp"
#include "test_util.hpp"

namespace llmux::config {
namespace {

using testing::dump;
using ::testing::HasSubstr;
using testing::kBackends;
using testing::on;
using testing::validate_yaml;

Backend backend(std::string name, std::string url) {
  Backend b;
  b.name = std::move(name);
  b.url = std::move(url);
  return b;
}

Route route(std::vector<std::string> backends, std::string path = "",
            std::string path_prefix = "") {
  Route r;
  r.backends = std::move(backends);
  r.match.path = std::move(path);
  r.match.path_prefix = std::move(path_prefix);
  return r;
}

/// A valid config: two backends, one catch-all route.
GatewayConfig valid() {
  GatewayConfig cfg;
  cfg.backends = {backend("server1", "http://192.0.2.101:30000"),
                  backend("server2", "http://192.0.2.102:30000")};
  cfg.routes = {route({"server1", "server2"})};
  return cfg;
}

/// The only error of `cfg`, which must have exactly one.
ConfigError only_error(GatewayConfig cfg) {
  auto errors = validate(cfg);
  EXPECT_EQ(errors.size(), 1u) << dump(errors);
  return errors.empty() ? ConfigError{"<none>", "", ""} : errors[0];
}

TEST(Validate, ValidConfigHasNoErrors) {
  GatewayConfig cfg = valid();
  auto errors = validate(cfg);
  EXPECT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(cfg.routes[0].name, "route0");
  // Validating twice is harmless (derived fields are recomputed, not appended).
  errors = validate(cfg);
  EXPECT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(cfg.backends[1].host, "192.0.2.102");
}

TEST(Validate, NoBackends) {
  GatewayConfig cfg = valid();
  cfg.backends.clear();
  cfg.routes[0].backends.clear();
  auto errors = validate(cfg);
  ASSERT_EQ(on(errors, "backends").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "backends")[0].reason, "at least one backend is required");
  EXPECT_EQ(on(errors, "routes[0].backends").size(), 1u) << dump(errors);
}

TEST(Validate, NoRoutes) {
  GatewayConfig cfg = valid();
  cfg.routes.clear();
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "routes");
  EXPECT_EQ(e.reason, "at least one route is required");
}

TEST(Validate, DuplicateBackendNames) {
  GatewayConfig cfg = valid();
  cfg.backends[1].name = "server1";
  cfg.routes[0].backends = {"server1"};
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "backends[1].name");
  EXPECT_EQ(e.value, "server1");
  EXPECT_EQ(e.reason, "duplicate backend name (also backends[0])");
}

TEST(Validate, BackendNameRequiredAndRestricted) {
  GatewayConfig cfg = valid();
  cfg.backends[0].name = "";
  cfg.backends[1].name = "server 2";
  cfg.routes[0].backends = {};

  auto errors = validate(cfg);
  ASSERT_EQ(on(errors, "backends[0].name").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "backends[0].name")[0].reason, "a backend needs a name");
  ASSERT_EQ(on(errors, "backends[1].name").size(), 1u) << dump(errors);
  EXPECT_THAT(on(errors, "backends[1].name")[0].reason, HasSubstr("letters, digits"));
}

struct UrlCase {
  std::string url;
  std::string reason_part;  // "" = valid
  std::string host = "";
  int port = 0;
  std::string base_path = "";
};

class BackendUrl : public ::testing::TestWithParam<UrlCase> {};

TEST_P(BackendUrl, ParsesOrExplains) {
  const UrlCase& c = GetParam();
  GatewayConfig cfg = valid();
  cfg.backends[0].url = c.url;
  auto errors = validate(cfg);
  if (c.reason_part.empty()) {
    ASSERT_TRUE(errors.empty()) << dump(errors);
    EXPECT_EQ(cfg.backends[0].scheme, c.url.rfind("https", 0) == 0 ? "https" : "http");
    EXPECT_EQ(cfg.backends[0].host, c.host);
    EXPECT_EQ(cfg.backends[0].port, c.port);
    EXPECT_EQ(cfg.backends[0].base_path, c.base_path);
  } else {
    ASSERT_EQ(errors.size(), 1u) << dump(errors);
    EXPECT_EQ(errors[0].field, "backends[0].url");
    EXPECT_EQ(errors[0].value, c.url);
    EXPECT_THAT(errors[0].reason, HasSubstr(c.reason_part));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Config, BackendUrl,
    ::testing::Values(
        UrlCase{"http://192.0.2.101:30000", "", "192.0.2.101", 30000, ""},
        UrlCase{"http://example.com", "", "example.com", 80, ""},
        UrlCase{"http://example.com/", "", "example.com", 80, ""},
        UrlCase{"HTTP://h:1/v1/", "", "h", 1, "/v1"},
        UrlCase{"http://[::1]:8000/api", "", "::1", 8000, "/api"},
        UrlCase{"http://h:65535", "", "h", 65535, ""},
        UrlCase{"https://api.example.com", "", "api.example.com", 443, ""},
        UrlCase{"https://h:8443/v", "", "h", 8443, "/v"},
        UrlCase{"ftp://h:21", "unsupported scheme 'ftp'; only http:// or https:// is supported"},
        UrlCase{"192.0.2.101:30000", "expected http[s]://HOST[:PORT][/PATH]"},
        UrlCase{"http://", "a host is required"}, UrlCase{"http://:8000", "a host is required"},
        UrlCase{"http://h:0", "port must be 1-65535"},
        UrlCase{"http://h:65536", "port must be 1-65535"},
        UrlCase{"http://h:http", "port must be 1-65535"},
        UrlCase{"http://h h:1", "not a valid URL"}, UrlCase{"http://user:pw@h:1", "use api_key"},
        UrlCase{"http://h:1/?x=1", "query"}, UrlCase{"http://h:1/#top", "fragment"},
        // Found by config_fuzz: a typo after the port is not a path.
        UrlCase{"http://192.0.2.1x:80/a", "after the host and port"},
        UrlCase{"http://h:30000x", "after the host and port"},
        // The same verdicts whatever the Boost.URL version (1.81 and 1.83 parse these apart).
        UrlCase{"http://192.0.2.1234:80", "unexpected '4:80' after the host and port"},
        UrlCase{"http://h:80x/v1", "unexpected 'x/v1' after the host and port"},
        UrlCase{"http://h:x80", "port must be 1-65535"},
        UrlCase{"http://192.0.2.1.nip.io:8000/v1", "", "192.0.2.1.nip.io", 8000, "/v1"},
        UrlCase{"http://[::1]:80x", "unexpected 'x' after the host and port"},
        UrlCase{"", "a backend needs a url"}));

TEST(Validate, WeightAndMaxInflight) {
  GatewayConfig cfg = valid();
  cfg.backends[0].weight = 0;
  cfg.backends[1].weight = 101;
  cfg.backends[1].max_inflight = -1;
  auto errors = validate(cfg);
  ASSERT_EQ(errors.size(), 3u) << dump(errors);
  EXPECT_EQ(on(errors, "backends[0].weight").at(0).value, "0");
  EXPECT_EQ(on(errors, "backends[0].weight").at(0).reason, "must be 1-100");
  EXPECT_EQ(on(errors, "backends[1].weight").at(0).value, "101");
  EXPECT_EQ(on(errors, "backends[1].max_inflight").at(0).value, "-1");
  EXPECT_EQ(on(errors, "backends[1].max_inflight").at(0).reason, "must be 0 (unlimited) or more");
}

TEST(Validate, ApiKeyWithControlCharactersIsHidden) {
  GatewayConfig cfg = valid();
  cfg.backends[0].api_key = "sk-secret\r\nX-Evil: 1";
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "backends[0].api_key");
  EXPECT_EQ(e.value, "(hidden)");
  EXPECT_EQ(e.to_string().find("secret"), std::string::npos);
}

TEST(Validate, AtMost64Backends) {
  GatewayConfig cfg = valid();
  cfg.backends.clear();
  for (int i = 0; i < 64; ++i)
    cfg.backends.push_back(backend("b" + std::to_string(i), "http://h:1"));
  cfg.routes[0].backends = {"b0"};
  auto errors = validate(cfg);
  EXPECT_TRUE(errors.empty()) << dump(errors);
  cfg.backends.push_back(backend("b64", "http://h:1"));
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "backends");
  EXPECT_EQ(e.value, "65 backends");
  EXPECT_EQ(e.reason, "at most 64 backends are supported");
}

TEST(Validate, RouteWithoutBackends) {
  GatewayConfig cfg = valid();
  cfg.routes[0].backends.clear();
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "routes[0].backends");
  EXPECT_EQ(e.reason, "a route needs at least one backend");
}

TEST(Validate, UnknownBackendListsTheKnownOnes) {
  auto errors = validate_yaml(std::string(kBackends) + R"(
routes:
  - {match: {path_prefix: /v1/responses}, backends: [server1]}
  - {match: {path: /v1/chat/completions}, backends: [server1, server2]}
  - {match: {path_prefix: /}, backends: [server3]}
)");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].to_string(),
            "routes[2].backends[0]: 'server3': no backend named 'server3' (known: server1, "
            "server2)");
}

TEST(Validate, BackendListedTwiceInARoute) {
  GatewayConfig cfg = valid();
  cfg.routes[0].backends = {"server1", "server2", "server1"};
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "routes[0].backends[2]");
  EXPECT_THAT(e.reason, HasSubstr("listed twice"));
}

TEST(Validate, UnknownPolicy) {
  GatewayConfig cfg = valid();
  cfg.routes[0].policy = "least_conn";
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "routes[0].policy");
  EXPECT_EQ(e.value, "least_conn");
  EXPECT_EQ(
      e.reason,
      "unknown policy. Currently supported ones are: round_robin, first, least_inflight, adaptive, "
      "power_of_two, random, weighted, consistent_hash, prefix_aware, least_load");
}

TEST(Validate, UnknownPolicyNamesComeFromThePolicyFactory) {
  GatewayConfig cfg = valid();
  cfg.routes[0].policy = "nope";
  auto e = only_error(cfg);
  for (const auto& name : policy::policy_names()) EXPECT_THAT(e.reason, HasSubstr(name));
}

TEST(Validate, UnknownPolicyNearMissIsSuggested) {
  GatewayConfig cfg = valid();
  cfg.routes[0].policy = "round-robin";
  auto e = only_error(cfg);
  EXPECT_THAT(e.reason, HasSubstr("did you mean 'round_robin'?"));
}

TEST(Validate, DefaultRouteNamesAndDuplicates) {
  GatewayConfig cfg = valid();
  cfg.routes = {route({"server1"}, "/a"), route({"server1"}, "/b"), route({"server1"}, "/c")};
  cfg.routes[1].name = "route0";
  auto errors = validate(cfg);
  EXPECT_EQ(cfg.routes[0].name, "route0");
  EXPECT_EQ(cfg.routes[2].name, "route2");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "routes[1].name");
  EXPECT_EQ(errors[0].reason, "duplicate route name (also routes[0])");
}

TEST(Validate, RouteAfterCatchAllIsUnreachable) {
  auto errors = validate_yaml(std::string(kBackends) + R"(
routes:
  - {name: all, backends: [server1]}
  - {name: chat, match: {path: /v1/chat/completions}, backends: [server2]}
  - {name: also, match: {path_prefix: /}, backends: [server2]}
)");
  ASSERT_EQ(errors.size(), 2u) << dump(errors);
  EXPECT_EQ(errors[0].field, "routes[1]");
  EXPECT_EQ(errors[0].value, "chat");
  EXPECT_EQ(errors[0].reason, "unreachable: routes[0] ('all') before it matches every request");
  EXPECT_EQ(errors[1].field, "routes[2]");
}

TEST(Validate, PrefixCatchAllAlsoCountsAsCatchAll) {
  auto errors = validate_yaml(std::string(kBackends) + R"(
routes:
  - {match: {path_prefix: /}, backends: [server1]}
  - {match: {path_prefix: /v1/responses}, backends: [server1]}
)");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "routes[1]");
}

TEST(Validate, ShadowedRouteIsUnreachable) {
  auto errors = validate_yaml(std::string(kBackends) + R"(
routes:
  - {name: v1, match: {path_prefix: /v1}, backends: [server1]}
  - {name: chat, match: {path: /v1/chat/completions, methods: [POST]}, backends: [server2]}
  - {match: {path_prefix: /}, backends: [server1]}
)");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "routes[1]");
  EXPECT_EQ(errors[0].reason,
            "unreachable: routes[0] ('v1') before it matches every request this route matches");
}

TEST(Validate, NarrowerEarlierRoutesAreFine) {
  // Methods and models narrow a route: what they leave out still reaches the later ones.
  auto errors = validate_yaml(std::string(kBackends) + R"(
routes:
  - {match: {path_prefix: /v1, methods: [GET]}, backends: [server1]}
  - {match: {path_prefix: /v1, models: [m1]}, backends: [server2]}
  - {match: {path_prefix: /v1, models: [m1, m2]}, backends: [server2]}
  - {match: {path: /v1/chat/completions}, backends: [server1, server2]}
  - {match: {path_prefix: /v1/responses}, backends: [server1]}
  - {backends: [server1]}
)");
  EXPECT_TRUE(errors.empty()) << dump(errors);
}

TEST(Validate, ModelAndMethodSubsetsAreShadowed) {
  auto errors = validate_yaml(std::string(kBackends) + R"(
routes:
  - {match: {methods: [GET, POST], models: [m1, m2]}, backends: [server1]}
  - {match: {path: /x, methods: [POST], models: [m2]}, backends: [server2]}
  - {backends: [server1]}
)");
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "routes[1]");
}

TEST(Validate, PathsMustStartWithSlash) {
  GatewayConfig cfg = valid();
  cfg.routes = {route({"server1"}, "v1/chat/completions"), route({"server1"}, "", "v1"),
                route({"server1"}, "/a?b"), route({"server1"})};
  auto errors = validate(cfg);
  ASSERT_EQ(errors.size(), 3u) << dump(errors);
  EXPECT_EQ(on(errors, "routes[0].match.path").at(0).reason, "must start with '/'");
  EXPECT_EQ(on(errors, "routes[0].match.path").at(0).value, "v1/chat/completions");
  EXPECT_EQ(on(errors, "routes[1].match.path_prefix").at(0).reason, "must start with '/'");
  EXPECT_THAT(on(errors, "routes[2].match.path").at(0).reason, HasSubstr("'?'"));
}

TEST(Validate, PathAndPrefixTogether) {
  GatewayConfig cfg = valid();
  cfg.routes[0].match.path = "/a";
  cfg.routes[0].match.path_prefix = "/a";
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "routes[0].match");
  EXPECT_EQ(e.reason, "set path or path_prefix, not both");
}

TEST(Validate, Methods) {
  GatewayConfig cfg = valid();
  cfg.routes[0].match.methods = {"POST", "get", "FETCH", "PATCH"};
  auto errors = validate(cfg);
  ASSERT_EQ(errors.size(), 2u) << dump(errors);
  EXPECT_EQ(errors[0].field, "routes[0].match.methods[1]");
  EXPECT_EQ(errors[0].reason, "methods are upper case; did you mean 'GET'?");
  EXPECT_EQ(errors[1].field, "routes[0].match.methods[2]");
  EXPECT_EQ(errors[1].value, "FETCH");
  EXPECT_THAT(errors[1].reason, HasSubstr("unknown HTTP method (known: GET, HEAD, POST"));
}

TEST(Validate, EmptyModelName) {
  GatewayConfig cfg = valid();
  cfg.routes[0].match.models = {"m1", ""};
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "routes[0].match.models[1]");
}

TEST(Validate, Threads) {
  for (int bad : {-1, 1025}) {
    GatewayConfig cfg = valid();
    cfg.threads = bad;
    auto e = only_error(cfg);
    EXPECT_EQ(e.field, "threads");
    EXPECT_EQ(e.value, std::to_string(bad));
  }
  for (int good : {0, 1, 1024}) {
    GatewayConfig cfg = valid();
    cfg.threads = good;
    EXPECT_TRUE(validate(cfg).empty()) << good;
  }
}

TEST(Validate, TimeoutsMustBePositive) {
  GatewayConfig cfg = valid();
  cfg.timeouts.connect = Millis(0);
  cfg.timeouts.drain = Millis(-5);
  auto errors = validate(cfg);
  ASSERT_EQ(errors.size(), 2u) << dump(errors);
  EXPECT_EQ(errors[0].field, "timeouts.connect");
  EXPECT_EQ(errors[0].value, "0ms");
  EXPECT_EQ(errors[0].reason, "must be greater than 0");
  EXPECT_EQ(errors[1].field, "timeouts.drain");
}

TEST(Validate, EveryTimeoutIsChecked) {
  auto errors = validate_yaml(std::string(kBackends) + R"(
routes: [{backends: [server1]}]
timeouts: {connect: 0s, first_byte: 0s, idle: 0ms, client_header: 0, client_idle: 0h, drain: 0m}
)");
  EXPECT_EQ(errors.size(), 6u) << dump(errors);
}

TEST(Validate, LimitsMustBePositive) {
  GatewayConfig cfg = valid();
  cfg.limits.max_body_bytes = 0;
  cfg.limits.max_header_bytes = 0;
  auto errors = validate(cfg);
  ASSERT_EQ(errors.size(), 2u) << dump(errors);
  EXPECT_EQ(errors[0].field, "limits.max_body_bytes");
  EXPECT_EQ(errors[1].field, "limits.max_header_bytes");
}

TEST(Validate, AccessLogNotEmpty) {
  GatewayConfig cfg = valid();
  cfg.access_log.target = "";
  auto e = only_error(cfg);
  EXPECT_EQ(e.field, "access_log");
}

TEST(Validate, Listeners) {
  {
    GatewayConfig cfg = valid();
    cfg.listeners.clear();
    EXPECT_EQ(only_error(cfg).field, "listen");
  }
  {
    GatewayConfig cfg = valid();
    cfg.listeners = {{"localhost", 8080}};
    auto e = only_error(cfg);
    EXPECT_EQ(e.field, "listen[0].address");
    EXPECT_THAT(e.reason, HasSubstr("expected an IP address"));
  }
}

TEST(Validate, ListenerCollisions) {
  GatewayConfig cfg = valid();
  cfg.listeners = {{"127.0.0.1", 8080}, {"127.0.0.1", 8080}, {"0.0.0.0", 8081}, {"192.0.2.1", 8081},
                   {"127.0.0.1", 8082}, {"192.0.2.1", 8082}, {"::", 8083},      {"::1", 8083},
                   {"127.0.0.1", 0},    {"127.0.0.1", 0}};
  auto errors = validate(cfg);
  ASSERT_EQ(errors.size(), 3u) << dump(errors);
  EXPECT_EQ(errors[0].field, "listen[1]");
  EXPECT_EQ(errors[0].value, "127.0.0.1:8080");
  EXPECT_EQ(errors[0].reason, "same address and port as listen[0]");
  EXPECT_EQ(errors[1].field, "listen[3]");
  EXPECT_THAT(errors[1].reason, HasSubstr("wildcard"));
  EXPECT_EQ(errors[2].field, "listen[7]");
  EXPECT_EQ(errors[2].value, "[::1]:8083");
}

TEST(Validate, EveryErrorAtOnce) {
  std::vector<ConfigError> load_errors;
  GatewayConfig cfg = load_yaml(R"(
listen: [":8080", "0.0.0.0:8080"]
threads: 5000
backends:
  - {name: server1, url: "ftp://192.0.2.101:30000"}
  - {name: server1, url: "http://192.0.2.102:70000", weight: 0}
routes:
  - {match: {path_prefix: v1/responses}, backends: [server3], policy: sticky}
  - {backends: []}
  - {match: {path: /v1/chat/completions, methods: [post]}, backends: [server1]}
timeouts: {idle: 0s}
limits: {max_body_bytes: 0}
access_log: ""
)",
                                load_errors);
  ASSERT_TRUE(load_errors.empty()) << dump(load_errors);
  auto errors = validate(cfg);
  std::vector<std::string> fields;
  for (const auto& e : errors) fields.push_back(e.field);
  EXPECT_THAT(fields,
              ::testing::ElementsAre(
                  "listen[1]", "threads", "backends[0].url", "backends[1].name", "backends[1].url",
                  "backends[1].weight", "routes[0].match.path_prefix", "routes[0].backends[0]",
                  "routes[0].policy", "routes[1].backends", "routes[2].match.methods[0]",
                  "routes[2]", "timeouts.idle", "limits.max_body_bytes", "access_log"))
      << dump(errors);
}

TEST(QuickConfig, OneCatchAllRoundRobinRoute) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = quick_config(
      8080, {"server1=http://192.0.2.101:30000", "server2=http://192.0.2.102:30000"}, errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  errors = validate(cfg);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  ASSERT_EQ(cfg.listeners.size(), 1u);
  EXPECT_EQ(cfg.listeners[0].address, "0.0.0.0");
  EXPECT_EQ(cfg.listeners[0].port, 8080);
  ASSERT_EQ(cfg.backends.size(), 2u);
  EXPECT_EQ(cfg.backends[1].name, "server2");
  EXPECT_EQ(cfg.backends[1].host, "192.0.2.102");
  ASSERT_EQ(cfg.routes.size(), 1u);
  EXPECT_EQ(cfg.routes[0].policy, "round_robin");
  EXPECT_EQ(cfg.routes[0].backends, (std::vector<std::string>{"server1", "server2"}));
  EXPECT_TRUE(cfg.routes[0].match.path.empty());
  EXPECT_TRUE(cfg.routes[0].match.path_prefix.empty());
  EXPECT_TRUE(cfg.routes[0].match.methods.empty());
}

TEST(QuickConfig, PortZeroIsAllowed) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = quick_config(0, {"a=http://127.0.0.1:1"}, errors);
  ASSERT_TRUE(errors.empty());
  EXPECT_TRUE(validate(cfg).empty());
  EXPECT_EQ(cfg.listeners[0].port, 0);
}

TEST(QuickConfig, MalformedSpecs) {
  std::vector<ConfigError> errors;
  quick_config(8080, {"http://h:1", "=http://h:1", "a=", "ok=http://h:1"}, errors);
  ASSERT_EQ(errors.size(), 3u) << dump(errors);
  EXPECT_EQ(errors[0].field, "--backend #1");
  EXPECT_EQ(errors[0].value, "http://h:1");
  EXPECT_THAT(errors[0].reason, HasSubstr("expected NAME=URL"));
  EXPECT_EQ(errors[1].value, "=http://h:1");
  EXPECT_EQ(errors[2].value, "a=");
}

TEST(QuickConfig, NoBackends) {
  std::vector<ConfigError> errors;
  quick_config(8080, {}, errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field, "--backend");
}

TEST(QuickConfig, BadUrlIsCaughtByValidate) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = quick_config(8080, {"a=ftp://h:1"}, errors);
  ASSERT_TRUE(errors.empty());
  errors = validate(cfg);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "backends[0].url");
}

}  // namespace
}  // namespace llmux::config

namespace llmux::config {
namespace {

using testing::dump;
using testing::kBackends;
using testing::on;

constexpr const char* kRoute = "routes:\n  - {backends: [server1, server2]}\n";

TEST(HealthConfig, DefaultsThenTopLevelThenPerBackend) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_and_validate(std::string(R"(
health_checks: {interval: 5s, unhealthy_threshold: 3}
outlier_detection: {consecutive_failures: 5, base_ejection: 2s, max_ejection: 1m}
backends:
  - {name: server1, url: "http://192.0.2.101:30000", health_checks: {path: /ping, timeout: 250ms}}
  - {name: server2, url: "http://192.0.2.102:30000", health_checks: {enabled: false}}
)") + kRoute,
                                        errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  const HealthChecks& h1 = cfg.backends[0].health;
  EXPECT_TRUE(h1.enabled);
  EXPECT_EQ(h1.path, "/ping");
  EXPECT_EQ(h1.interval, std::chrono::seconds(5));
  EXPECT_EQ(h1.timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(h1.unhealthy_threshold, 3);
  EXPECT_EQ(h1.healthy_threshold, HealthChecks{}.healthy_threshold);
  EXPECT_FALSE(cfg.backends[1].health.enabled);
  EXPECT_EQ(cfg.backends[1].health.path, "/health");
  EXPECT_EQ(cfg.outlier_detection.consecutive_failures, 5);
  EXPECT_EQ(cfg.outlier_detection.max_ejection, std::chrono::minutes(1));
}

TEST(HealthConfig, BadValuesAreNamedOnceWhereWritten) {
  std::vector<ConfigError> errors;
  load_and_validate(std::string(R"(
health_checks: {interval: 50ms, jitter: 0.9}
outlier_detection: {consecutive_failures: 0, base_ejection: 10s, max_ejection: 5s}
backends:
  - {name: server1, url: "http://192.0.2.101:30000", health_checks: {path: health, timeout: 1m}}
  - {name: server2, url: "http://192.0.2.102:30000"}
)") + kRoute,
                    errors);
  EXPECT_EQ(on(errors, "health_checks.interval").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "health_checks.jitter").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "backends[0].health_checks.path").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "backends[0].health_checks.timeout").size(), 1u) << dump(errors);
  EXPECT_TRUE(on(errors, "backends[1].health_checks.interval").empty())
      << "an inherited bad value is reported under the top-level block only: " << dump(errors);
  EXPECT_EQ(on(errors, "outlier_detection.consecutive_failures").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "outlier_detection.max_ejection").size(), 1u) << dump(errors);
}

TEST(HealthConfig, TypesAreChecked) {
  std::vector<ConfigError> errors;
  load_yaml(std::string("health_checks: {enabled: maybe, jitter: lots}\n") + kBackends + kRoute,
            errors);
  EXPECT_EQ(on(errors, "health_checks.enabled").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "health_checks.jitter").size(), 1u) << dump(errors);
}

TEST(AffinityConfig, DefaultsLoadedValuesAndBadOnesNamed) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_and_validate(std::string(kBackends) + kRoute, errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_TRUE(cfg.affinity.enabled);
  EXPECT_EQ(cfg.affinity.max_entries, 1000000);
  EXPECT_FALSE(cfg.backend_metrics.enabled);
  cfg = load_and_validate(std::string(R"(
affinity: {enabled: false, max_entries: 500, ttl: 2h, lookup_timeout: 750ms}
backend_metrics: {enabled: true, path: /m, interval: 250ms, timeout: 200ms, stale_after: 1s}
)") + kBackends + kRoute,
                          errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_FALSE(cfg.affinity.enabled);
  EXPECT_EQ(cfg.affinity.max_entries, 500);
  EXPECT_EQ(cfg.affinity.ttl, std::chrono::hours(2));
  EXPECT_EQ(cfg.affinity.lookup_timeout.count(), 750);
  EXPECT_TRUE(cfg.backend_metrics.enabled);
  EXPECT_EQ(cfg.backend_metrics.path, "/m");
  EXPECT_EQ(cfg.backend_metrics.interval.count(), 250);
  EXPECT_EQ(cfg.backend_metrics.stale_after.count(), 1000);

  errors.clear();
  load_and_validate(std::string(R"(
affinity: {max_entries: 0, ttl: 0s, lookup_timeout: 0}
backend_metrics: {path: metrics, interval: 10ms, timeout: 0, stale_after: 5ms, scrape: yes}
)") + kBackends + kRoute,
                    errors);
  for (const char* f :
       {"affinity.max_entries", "affinity.ttl", "affinity.lookup_timeout", "backend_metrics.path",
        "backend_metrics.interval", "backend_metrics.timeout", "backend_metrics.scrape"})
    EXPECT_EQ(on(errors, f).size(), 1u) << f << "\n" << dump(errors);
}

TEST(MetricsAdminConfig, DefaultsValuesAndBadOnesNamed) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_and_validate(std::string(kBackends) + kRoute, errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_TRUE(cfg.metrics.enabled);
  EXPECT_TRUE(cfg.metrics.stream_usage);
  EXPECT_TRUE(cfg.metrics.listen.empty());
  EXPECT_TRUE(cfg.admin.token.empty()) << "the admin API is off by default";
  cfg = load_and_validate(std::string(R"(
metrics: {enabled: false, listen: "127.0.0.1:9464", stream_usage: no}
admin: {token: "0123456789abcdef-token"}
)") + kBackends + kRoute,
                          errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_FALSE(cfg.metrics.enabled);
  EXPECT_FALSE(cfg.metrics.stream_usage);
  ASSERT_EQ(cfg.metrics.listen.size(), 1u);
  EXPECT_EQ(cfg.metrics.listen[0].port, 9464);
  EXPECT_EQ(cfg.admin.token, "0123456789abcdef-token");

  // The token from a file: its first line, trailing CR and spaces dropped.
  const std::string file = ::testing::TempDir() + "/llmux-admin-token";
  std::ofstream(file) << "from-a-file-0123456789 \r\nsecond line\n";
  cfg = load_and_validate("admin: {token_file: \"" + file + "\"}\n" + kBackends + kRoute, errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(cfg.admin.token, "from-a-file-0123456789");
  std::remove(file.c_str());

  for (const auto& [yaml, field] : std::vector<std::pair<std::string, std::string>>{
           {"admin: {token: short}\n", "admin.token"},
           {"admin: {token: \"has a space in it 0123\"}\n", "admin.token"},
           {"admin: {token_file: /nonexistent/llmux-token}\n", "admin.token_file"},
           {"metrics: {listen: \"localhost:9464\"}\n", "metrics.listen"},
           {"listen: \"0.0.0.0:8080\"\nmetrics: {listen: \"127.0.0.1:8080\"}\n", "metrics.listen"},
           {"metrics: {scrape: yes}\n", "metrics.scrape"}}) {
    errors.clear();
    load_and_validate(yaml + kBackends + kRoute, errors);
    EXPECT_GE(on(errors, field).size(), 1u) << yaml << dump(errors);
    for (const auto& e : errors) EXPECT_EQ(e.value.find("short"), std::string::npos);
  }
}

}  // namespace
}  // namespace llmux::config

namespace llmux::config {
namespace {

TEST(Validate, StateIsMemoryOrARedisUrl) {
  GatewayConfig cfg;
  cfg.backends = {backend("server1", "http://192.0.2.101:30000")};
  cfg.routes = {route({"server1"})};
  EXPECT_FALSE(cfg.state.redis()) << "memory by default";
  cfg.state.url = "redis://127.0.0.1:6379/2";
  EXPECT_TRUE(validate(cfg).empty());
  cfg.state.url = "127.0.0.1:6379";
  ConfigError e = only_error(cfg);
  EXPECT_EQ(e.field, "state.url");
  EXPECT_THAT(e.reason, HasSubstr("redis://"));
  cfg.state.url = "redis://:s3cret@127.0.0.1:notaport";
  e = only_error(cfg);
  EXPECT_EQ(e.value, "(hidden)") << "a password never appears in an error";
  cfg.state.url = "memory";
  cfg.state.timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(only_error(cfg).field, "state.timeout");
}

TEST(Load, StateAsAUrlOrAMapping) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg =
      load_yaml(std::string(kBackends) + "state: redis://127.0.0.1:7000/1\n", errors);
  EXPECT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(cfg.state.url, "redis://127.0.0.1:7000/1");
  EXPECT_EQ(cfg.state.prefix, "llmux:");
  cfg = load_yaml(std::string(kBackends) +
                      "state: {url: \"redis://127.0.0.1\", prefix: \"team-a:\", timeout: 20ms}\n",
                  errors);
  EXPECT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(cfg.state.prefix, "team-a:");
  EXPECT_EQ(cfg.state.timeout.count(), 20);
  load_yaml(std::string(kBackends) + "state: {url: memory, prefx: a}\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "state.prefx");
}

}  // namespace
}  // namespace llmux::config

namespace llmux::config {
namespace {

TEST(Validate, MigrationSettingsNameTheirField) {
  // Loaded and validated: out-of-range values are errors naming the field.
  const std::string routes = "routes:\n  - {backends: [server1, server2]}\n";
  auto errors = validate_yaml(std::string(testing::kBackends) + routes +
                              "migration: {max_migrations: 0, max_kept_bytes: 10}\n");
  ASSERT_EQ(on(errors, "migration.max_migrations").size(), 1u) << dump(errors);
  EXPECT_THAT(on(errors, "migration.max_migrations")[0].reason, HasSubstr("1-10"));
  ASSERT_EQ(on(errors, "migration.max_kept_bytes").size(), 1u) << dump(errors);
  EXPECT_TRUE(
      validate_yaml(std::string(testing::kBackends) + routes +
                    "migration: {enabled: false, max_migrations: 3, max_kept_bytes: 1MiB}\n")
          .empty());
  // A wrong type or an unknown key fails at load, naming the field.
  std::vector<ConfigError> load_errors;
  load_yaml(std::string(testing::kBackends) + routes + "migration: {enabled: maybe, hedge: 1}\n",
            load_errors);
  EXPECT_EQ(on(load_errors, "migration.enabled").size(), 1u) << dump(load_errors);
  EXPECT_EQ(on(load_errors, "migration.hedge").size(), 1u) << dump(load_errors);
}

TEST(Validate, HedgeSettingsNameTheirField) {
  auto route = [](const std::string& hedge, const std::string& backends = "server1, server2") {
    return std::string(testing::kBackends) + "routes:\n  - {backends: [" + backends +
           "], hedge: " + hedge + "}\n";
  };
  // A wait or a multiple of the learned p99, each checked.
  std::vector<ConfigError> load_errors;
  const GatewayConfig fixed = load_yaml(route("{after: 300ms}"), load_errors);
  ASSERT_TRUE(load_errors.empty()) << dump(load_errors);
  EXPECT_EQ(fixed.routes[0].hedge.after, Millis(300));
  EXPECT_TRUE(fixed.routes[0].hedge.enabled());
  const GatewayConfig multiple = load_yaml(route("{after: 1.5x}"), load_errors);
  ASSERT_TRUE(load_errors.empty()) << dump(load_errors);
  EXPECT_DOUBLE_EQ(multiple.routes[0].hedge.after_p99, 1.5);
  EXPECT_TRUE(validate_yaml(route("{after: 2x}")).empty());
  // Off unless set.
  EXPECT_FALSE(load_yaml(route("{}"), load_errors).routes[0].hedge.enabled());
  for (const char* bad : {"{after: 0x}", "{after: -2x}", "{after: twox}", "{after: 0ms}",
                          "{after: soon}", "{after: [1]}", "{before: 1s}"}) {
    load_errors.clear();
    load_yaml(route(bad), load_errors);
    ASSERT_EQ(load_errors.size(), 1u) << bad << ": " << dump(load_errors);
    EXPECT_THAT(load_errors[0].field, HasSubstr("routes[0].hedge")) << bad;
  }
  // Validated: one backend, a multiple of 1 or less or beyond 100, a wait as long as first_byte.
  auto one_backend = validate_yaml(route("{after: 1s}", "server1"));
  ASSERT_EQ(on(one_backend, "routes[0].hedge").size(), 1u) << dump(one_backend);
  EXPECT_THAT(on(one_backend, "routes[0].hedge")[0].reason, HasSubstr("two backends"));
  auto too_many = validate_yaml(route("{after: 500x}"));
  ASSERT_EQ(on(too_many, "routes[0].hedge.after").size(), 1u) << dump(too_many);
  auto too_few = validate_yaml(route("{after: 1x}"));
  ASSERT_EQ(on(too_few, "routes[0].hedge.after").size(), 1u) << dump(too_few);
  EXPECT_THAT(on(too_few, "routes[0].hedge.after")[0].reason, HasSubstr("above 1x"));
  auto too_long = validate_yaml(route("{after: 10m}"));
  ASSERT_EQ(on(too_long, "routes[0].hedge.after").size(), 1u) << dump(too_long);
  EXPECT_THAT(on(too_long, "routes[0].hedge.after")[0].reason, HasSubstr("first_byte"));
}

}  // namespace
}  // namespace llmux::config
