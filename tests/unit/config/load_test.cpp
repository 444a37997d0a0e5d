// SPDX-License-Identifier: Apache-2.0
// load_yaml / load_yaml_file: the schema's forms, the examples, and load errors (unknown keys,
// wrong types, YAML syntax) with field paths and positions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "config/config.hpp"
#include "test_util.hpp"

namespace llmux::config {
namespace {

using testing::dump;
using ::testing::HasSubstr;
using testing::on;

std::string example(const char* name) {
  return std::string(LLMUX_SOURCE_DIR) + "/examples/" + name;
}

TEST(Examples, SeedLoadsAndValidatesWithTheSeedsRouting) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_yaml_file(example("seed.yaml"), errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  errors = validate(cfg);
  ASSERT_TRUE(errors.empty()) << dump(errors);

  ASSERT_EQ(cfg.listeners.size(), 1u);
  EXPECT_EQ(cfg.listeners[0].address, "0.0.0.0");
  EXPECT_EQ(cfg.listeners[0].port, 8080);

  ASSERT_EQ(cfg.backends.size(), 2u);
  EXPECT_EQ(cfg.backends[0].name, "server1");
  EXPECT_EQ(cfg.backends[0].scheme, "http");
  // The hosts are the seed's LAN machines as written in the example (never connected to here).
  std::ifstream seed_file(std::string(LLMUX_SOURCE_DIR) + "/examples/seed.yaml");
  std::stringstream seed_stream;
  seed_stream << seed_file.rdbuf();
  const std::string seed_text = seed_stream.str();
  auto host_of = [&](std::size_t nth) {
    std::size_t at = 0;
    for (std::size_t i = 0; i <= nth; ++i) at = seed_text.find("url: http://", at) + 12;
    return seed_text.substr(at, seed_text.find(':', at) - at);
  };
  EXPECT_EQ(cfg.backends[0].host, host_of(0));
  EXPECT_NE(cfg.backends[0].host, cfg.backends[1].host);
  EXPECT_EQ(cfg.backends[0].port, 30000);
  EXPECT_EQ(cfg.backends[0].base_path, "");
  EXPECT_EQ(cfg.backends[1].name, "server2");
  EXPECT_EQ(cfg.backends[1].host, host_of(1));
  EXPECT_EQ(cfg.backends[1].port, 30000);

  // The seed's three rules, in order.
  ASSERT_EQ(cfg.routes.size(), 3u);
  const Route& responses = cfg.routes[0];
  EXPECT_EQ(responses.match.path_prefix, "/v1/responses");
  EXPECT_EQ(responses.match.path, "");
  EXPECT_EQ(responses.backends, std::vector<std::string>{"server1"});
  const Route& chat = cfg.routes[1];
  EXPECT_EQ(chat.match.path, "/v1/chat/completions");
  EXPECT_EQ(chat.backends, (std::vector<std::string>{"server1", "server2"}));
  EXPECT_EQ(chat.policy, "round_robin");
  const Route& rest = cfg.routes[2];
  EXPECT_TRUE(rest.match.path.empty());
  EXPECT_TRUE(rest.match.path_prefix.empty() || rest.match.path_prefix == "/");
  EXPECT_TRUE(rest.match.methods.empty());
  EXPECT_TRUE(rest.match.models.empty());
  EXPECT_EQ(rest.backends, std::vector<std::string>{"server1"});

  EXPECT_EQ(cfg.timeouts.first_byte, std::chrono::seconds(300));
  EXPECT_EQ(cfg.limits.max_body_bytes, 16ull << 20);
  EXPECT_EQ(cfg.access_log.target, "stdout");
}

TEST(Examples, QuickStartLoadsAndValidates) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_and_validate_file(example("quick-start.yaml"), errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  ASSERT_EQ(cfg.backends.size(), 2u);
  EXPECT_EQ(cfg.backends[0].host, "127.0.0.1");
  EXPECT_EQ(cfg.backends[0].port, 30001);
  EXPECT_EQ(cfg.backends[1].port, 30002);
  ASSERT_EQ(cfg.listeners.size(), 1u);
  EXPECT_EQ(cfg.listeners[0].address, "127.0.0.1");
}

TEST(Examples, FleetLoadsAndBalancesEveryRouteThatCanUseBothMachines) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_and_validate_file(example("fleet.yaml"), errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  GatewayConfig seed = load_and_validate_file(example("seed.yaml"), errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  // The seed's machines, as the seed's file names them.
  ASSERT_EQ(cfg.backends.size(), seed.backends.size());
  for (std::size_t i = 0; i < cfg.backends.size(); ++i) {
    EXPECT_EQ(cfg.backends[i].name, seed.backends[i].name);
    EXPECT_EQ(cfg.backends[i].url, seed.backends[i].url);
  }
  EXPECT_EQ(cfg.listeners[0].port, seed.listeners[0].port);
  EXPECT_TRUE(cfg.affinity.enabled) << "the Responses API over both machines needs affinity";
  for (const auto& r : cfg.routes) {
    EXPECT_EQ(r.backends.size(), 2u) << r.name;
    if (r.name == "responses" || r.name == "claude-code") {
      // Conversations by affinity, new turns and replayed histories where cached.
      EXPECT_EQ(r.policy, "prefix_aware");
      continue;
    }
    EXPECT_TRUE(r.policy == "adaptive" || r.policy == "least_inflight")
        << r.name << ": " << r.policy;
  }
}

TEST(Load, FullSchema) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_yaml(R"(
listen: [{address: 127.0.0.1, port: 9000}, {address: "::1", port: 9001}]
threads: 4
backends:
  - {name: a, url: "http://192.0.2.1:8000/base/", api_key: sk-123, weight: 3, max_inflight: 16}
routes:
  - name: chat
    match: {path: /v1/chat/completions, methods: [POST], models: [m1, m2]}
    backends: [a]
    policy: first
timeouts: {connect: 1s, first_byte: 2m, idle: 500ms, client_header: 3s, client_idle: 1h, drain: 7000}
limits: {max_body_bytes: 1MiB, max_header_bytes: 8KiB}
access_log: /var/log/llmux.jsonl
)",
                                errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  ASSERT_EQ(cfg.listeners.size(), 2u);
  EXPECT_EQ(cfg.listeners[0].address, "127.0.0.1");
  EXPECT_EQ(cfg.listeners[0].port, 9000);
  EXPECT_EQ(cfg.listeners[1].address, "::1");
  EXPECT_EQ(cfg.listeners[1].port, 9001);
  EXPECT_EQ(cfg.threads, 4);
  ASSERT_EQ(cfg.backends.size(), 1u);
  EXPECT_EQ(cfg.backends[0].api_key, "sk-123");
  EXPECT_EQ(cfg.backends[0].weight, 3);
  EXPECT_EQ(cfg.backends[0].max_inflight, 16);
  ASSERT_EQ(cfg.routes.size(), 1u);
  EXPECT_EQ(cfg.routes[0].name, "chat");
  EXPECT_EQ(cfg.routes[0].match.methods, std::vector<std::string>{"POST"});
  EXPECT_EQ(cfg.routes[0].match.models, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(cfg.routes[0].policy, "first");
  EXPECT_EQ(cfg.timeouts.connect, std::chrono::seconds(1));
  EXPECT_EQ(cfg.timeouts.first_byte, std::chrono::minutes(2));
  EXPECT_EQ(cfg.timeouts.idle, std::chrono::milliseconds(500));
  EXPECT_EQ(cfg.timeouts.client_header, std::chrono::seconds(3));
  EXPECT_EQ(cfg.timeouts.client_idle, std::chrono::hours(1));
  EXPECT_EQ(cfg.timeouts.drain, std::chrono::seconds(7));
  EXPECT_EQ(cfg.limits.max_body_bytes, 1u << 20);
  EXPECT_EQ(cfg.limits.max_header_bytes, 8u << 10);
  EXPECT_EQ(cfg.access_log.target, "/var/log/llmux.jsonl");

  ASSERT_TRUE(validate(cfg).empty());
  EXPECT_EQ(cfg.backends[0].host, "192.0.2.1");
  EXPECT_EQ(cfg.backends[0].port, 8000);
  EXPECT_EQ(cfg.backends[0].base_path, "/base");
}

TEST(Load, DefaultsWhenOmitted) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg =
      load_yaml(std::string(testing::kBackends) + "routes: [{backends: [server1]}]\n", errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  ASSERT_EQ(cfg.listeners.size(), 1u);
  EXPECT_EQ(cfg.listeners[0].address, "0.0.0.0");
  EXPECT_EQ(cfg.listeners[0].port, 8080);
  EXPECT_EQ(cfg.threads, 0);
  EXPECT_EQ(cfg.routes[0].policy, "round_robin");
  EXPECT_EQ(cfg.timeouts.connect, std::chrono::seconds(5));
  EXPECT_EQ(cfg.limits.max_header_bytes, 64u << 10);
  EXPECT_EQ(cfg.backends[0].weight, 1);
  ASSERT_TRUE(validate(cfg).empty());
  EXPECT_EQ(cfg.routes[0].name, "route0");
}

struct ListenCase {
  const char* yaml;
  std::vector<Listener> want;
};

class ListenForms : public ::testing::TestWithParam<ListenCase> {};

TEST_P(ListenForms, Parse) {
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load_yaml(std::string("listen: ") + GetParam().yaml + "\n", errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  ASSERT_EQ(cfg.listeners.size(), GetParam().want.size());
  for (std::size_t i = 0; i < cfg.listeners.size(); ++i) {
    EXPECT_EQ(cfg.listeners[i].address, GetParam().want[i].address) << i;
    EXPECT_EQ(cfg.listeners[i].port, GetParam().want[i].port) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Config, ListenForms,
    ::testing::Values(ListenCase{"\":8080\"", {{"0.0.0.0", 8080}}},
                      ListenCase{"\"127.0.0.1:9090\"", {{"127.0.0.1", 9090}}},
                      ListenCase{"\"[::1]:7000\"", {{"::1", 7000}}},
                      ListenCase{"8081", {{"0.0.0.0", 8081}}},
                      ListenCase{"\":0\"", {{"0.0.0.0", 0}}},
                      ListenCase{"{address: 192.0.2.3}", {{"192.0.2.3", 8080}}},
                      ListenCase{"[\":80\", \"127.0.0.1:81\", {address: \"::\", port: 82}]",
                                 {{"0.0.0.0", 80}, {"127.0.0.1", 81}, {"::", 82}}}));

TEST(LoadErrors, BadListenStrings) {
  for (const char* bad :
       {"\"localhost\"", "\":99999\"", "\"::1:8080\"", "\"[::1]\"", "\"1.2.3.4:\""}) {
    std::vector<ConfigError> errors;
    load_yaml(std::string("listen: ") + bad + "\n", errors);
    ASSERT_EQ(errors.size(), 1u) << bad << "\n" << dump(errors);
    EXPECT_EQ(errors[0].field, "listen") << bad;
  }
}

TEST(LoadErrors, UnknownTopLevelKeyWithSuggestion) {
  std::vector<ConfigError> errors;
  load_yaml("timeout: {connect: 1s}\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "timeout");
  EXPECT_EQ(errors[0].value, "timeout");
  EXPECT_EQ(errors[0].reason, "unknown key; did you mean 'timeouts'?");
  EXPECT_EQ(errors[0].line, 1);
  EXPECT_EQ(errors[0].column, 1);
}

TEST(LoadErrors, UnknownKeysEverywhere) {
  std::vector<ConfigError> errors;
  load_yaml(R"(
listeners: ":8080"
backends:
  - {name: a, url: "http://h:1", wieght: 2}
routes:
  - match: {path_prefx: /v1, method: [GET]}
    backend: [a]
    polcy: first
timeouts: {conect: 1s}
limits: {max_body: 1MiB}
colour: blue
)",
            errors);
  ASSERT_EQ(errors.size(), 9u) << dump(errors);
  auto reason = [&](const std::string& field) {
    auto e = on(errors, field);
    return e.size() == 1 ? e[0].reason : "<" + std::to_string(e.size()) + " errors>";
  };
  EXPECT_EQ(reason("listeners"), "unknown key; did you mean 'listen'?");
  EXPECT_EQ(reason("backends[0].wieght"), "unknown key; did you mean 'weight'?");
  EXPECT_EQ(reason("routes[0].match.path_prefx"), "unknown key; did you mean 'path_prefix'?");
  EXPECT_EQ(reason("routes[0].match.method"), "unknown key; did you mean 'methods'?");
  EXPECT_EQ(reason("routes[0].backend"), "unknown key; did you mean 'backends'?");
  EXPECT_EQ(reason("routes[0].polcy"), "unknown key; did you mean 'policy'?");
  EXPECT_EQ(reason("timeouts.conect"), "unknown key; did you mean 'connect'?");
  EXPECT_EQ(reason("limits.max_body"), "unknown key; did you mean 'max_body_bytes'?");
  // No suggestion when nothing is close: the known keys are listed instead.
  EXPECT_THAT(reason("colour"), HasSubstr("unknown key (known: listen,"));
}

TEST(LoadErrors, UnknownKeyWithoutNearMissListsKnownKeys) {
  std::vector<ConfigError> errors;
  load_yaml("colour: blue\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].reason,
            "unknown key (known: listen, threads, backends, routes, timeouts, limits, "
            "access_log, pid_file, health_checks, outlier_detection, retries, migration, queue, "
            "affinity, backend_metrics, metrics, admin, auth, quotas, state, tenants, priorities)");
}

TEST(LoadErrors, StrayCommaIsASyntaxErrorNotAHang) {
  // Found by config_fuzz: yaml-cpp 0.7's LoadAll() loops forever (and allocates until memory runs
  // out) on these; the loader must answer at once.
  for (const char* text : {",", "- x\n,", "backends: []\n,\n"}) {
    std::vector<ConfigError> errors;
    load_yaml(text, errors);
    ASSERT_FALSE(errors.empty()) << text;
    EXPECT_NE(errors[0].reason.find("YAML syntax error"), std::string::npos) << errors[0].reason;
  }
}

TEST(Load, PolicyWithOptions) {
  const std::string head =
      "backends:\n  - {name: a, url: \"http://192.0.2.1:8000\"}\nroutes:\n  - backends: [a]\n"
      "    policy: ";
  {
    std::vector<ConfigError> errors;
    GatewayConfig cfg = load_and_validate(head + "{name: first}\n", errors);
    EXPECT_TRUE(errors.empty()) << dump(errors);
    EXPECT_EQ(cfg.routes[0].policy, "first");
    EXPECT_TRUE(cfg.routes[0].policy_options.empty());
  }
  {
    // The loader keeps the options; the policy registry refuses those it does not know.
    std::vector<ConfigError> errors;
    GatewayConfig cfg = load_yaml(head + "{name: round_robin, spread: 3}\n", errors);
    EXPECT_TRUE(errors.empty()) << dump(errors);
    EXPECT_EQ(cfg.routes[0].policy_options.at("spread"), "3");
    load_and_validate(head + "{name: round_robin, spread: 3}\n", errors);
    ASSERT_EQ(on(errors, "routes[0].policy").size(), 1u) << dump(errors);
    EXPECT_THAT(on(errors, "routes[0].policy")[0].reason, HasSubstr("spread"));
  }
  {
    std::vector<ConfigError> errors;
    load_yaml(head + "{spread: 3}\n", errors);
    ASSERT_EQ(on(errors, "routes[0].policy.name").size(), 1u) << dump(errors);
    load_yaml(head + "[first]\n", errors);
    EXPECT_FALSE(on(errors, "routes[0].policy").empty()) << dump(errors);
  }
}

TEST(LoadErrors, DuplicateKey) {
  std::vector<ConfigError> errors;
  load_yaml("threads: 1\nthreads: 2\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "threads");
  EXPECT_EQ(errors[0].reason, "duplicate key");
  EXPECT_EQ(errors[0].line, 2);
}

TEST(LoadErrors, WrongTypesCarryTheFieldPath) {
  std::vector<ConfigError> errors;
  load_yaml(R"(threads: many
backends:
  - {name: [a], url: "http://h:1", weight: heavy, max_inflight: 1.5}
routes:
  - match: {path: /a, methods: [GET, [POST]], models: m1}
    backends: [a]
  - match: /b
    backends: a
timeouts: {connect: soon, idle: [1s]}
limits: {max_body_bytes: big, max_header_bytes: 8GiB}
access_log: {file: x}
)",
            errors);
  auto has = [&](const std::string& field, const std::string& reason_part) {
    for (const auto& e : on(errors, field))
      if (e.reason.find(reason_part) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("threads", "expected an integer")) << dump(errors);
  EXPECT_TRUE(has("backends[0].name", "expected a string, got a list")) << dump(errors);
  EXPECT_TRUE(has("backends[0].weight", "expected an integer")) << dump(errors);
  EXPECT_TRUE(has("backends[0].max_inflight", "expected an integer")) << dump(errors);
  EXPECT_TRUE(has("routes[0].match.methods[1]", "expected a string, got a list")) << dump(errors);
  EXPECT_TRUE(has("routes[0].match.models", "expected a list of strings, got a scalar"))
      << dump(errors);
  EXPECT_TRUE(has("routes[1].match", "expected a mapping, got a scalar")) << dump(errors);
  EXPECT_TRUE(has("routes[1].backends", "expected a list of strings")) << dump(errors);
  EXPECT_TRUE(has("timeouts.connect", "expected a duration")) << dump(errors);
  EXPECT_TRUE(has("timeouts.idle", "expected a duration, got a list")) << dump(errors);
  EXPECT_TRUE(has("limits.max_body_bytes", "expected a size")) << dump(errors);
  EXPECT_TRUE(has("limits.max_header_bytes", "at most 4GiB")) << dump(errors);
  EXPECT_TRUE(has("access_log", "expected stdout, off or a file path")) << dump(errors);
  EXPECT_EQ(errors.size(), 13u) << dump(errors);

  // Positions point at the offending value.
  auto methods = on(errors, "routes[0].match.methods[1]");
  ASSERT_EQ(methods.size(), 1u);
  EXPECT_EQ(methods[0].line, 5);
  EXPECT_GT(methods[0].column, 1);
  EXPECT_EQ(methods[0].value, "[POST]");
}

TEST(LoadErrors, IntegerOutOfRange) {
  std::vector<ConfigError> errors;
  load_yaml("threads: 99999999999\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].reason, "out of range");
}

TEST(LoadErrors, NullValueIsAnError) {
  std::vector<ConfigError> errors;
  load_yaml("backends:\n  - name:\n    url: http://h:1\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "backends[0].name");
  EXPECT_EQ(errors[0].reason, "expected a string, got nothing");
}

TEST(LoadErrors, BooleanAccessLogIsRejected) {
  std::vector<ConfigError> errors;
  load_yaml("access_log: false\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_THAT(errors[0].reason, HasSubstr("use stdout, off or a file path"));

  errors.clear();
  GatewayConfig cfg = load_yaml("access_log: off\n", errors);
  EXPECT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(cfg.access_log.target, "off");
}

TEST(LoadErrors, SyntaxErrorReportsLineAndColumn) {
  std::vector<ConfigError> errors;
  load_yaml("backends:\n  - {name: a, url: http://h:1\nroutes: []\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].field, "");
  EXPECT_THAT(errors[0].reason, HasSubstr("YAML syntax error"));
  EXPECT_GE(errors[0].line, 2);
  EXPECT_GE(errors[0].column, 1);
  EXPECT_THAT(errors[0].to_string(), ::testing::StartsWith("line "));
}

TEST(LoadErrors, BadIndentationIsASyntaxError) {
  std::vector<ConfigError> errors;
  load_yaml("threads: 1\n  listen: 8080\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].line, 2);
}

TEST(LoadErrors, EmptyDocument) {
  for (const char* text : {"", "# only a comment\n", "~\n"}) {
    std::vector<ConfigError> errors;
    load_yaml(text, errors);
    ASSERT_EQ(errors.size(), 1u) << dump(errors);
    EXPECT_THAT(errors[0].reason, HasSubstr("empty"));
  }
}

TEST(LoadErrors, RootMustBeAMapping) {
  std::vector<ConfigError> errors;
  load_yaml("- a\n- b\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_EQ(errors[0].reason, "expected a mapping, got a list");
}

TEST(LoadErrors, SeveralDocuments) {
  std::vector<ConfigError> errors;
  load_yaml("threads: 1\n---\nthreads: 2\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_THAT(errors[0].reason, HasSubstr("one YAML document"));
}

TEST(LoadErrors, MergeKeysAreNotSupported) {
  std::vector<ConfigError> errors;
  load_yaml("timeouts: {<<: {connect: 1s}}\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_THAT(errors[0].reason, HasSubstr("merge keys"));
}

TEST(LoadErrors, MissingFile) {
  std::vector<ConfigError> errors;
  load_yaml_file("/nonexistent/llmux.yaml", errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].value, "/nonexistent/llmux.yaml");
  EXPECT_THAT(errors[0].reason, HasSubstr("cannot open"));
}

TEST(LoadAndValidate, ReportsLoadAndValidationErrorsTogetherWithoutRepeats) {
  std::vector<ConfigError> errors;
  load_and_validate(R"(
threads: -1
backends:
  - {name: a, url: "ftp://h:1", weight: heavy}
routes:
  - backends: [a, b]
    polcy: first
)",
                    errors);
  auto fields = [&] {
    std::vector<std::string> out;
    for (const auto& e : errors) out.push_back(e.field);
    return out;
  }();
  EXPECT_THAT(fields,
              ::testing::UnorderedElementsAre("backends[0].weight", "routes[0].polcy", "threads",
                                              "backends[0].url", "routes[0].backends[1]"))
      << dump(errors);
}

TEST(LoadAndValidate, SyntaxErrorStopsThere) {
  std::vector<ConfigError> errors;
  load_and_validate("threads: [\n", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
  EXPECT_GT(errors[0].line, 0);
}

TEST(LoadAndValidate, MissingFile) {
  std::vector<ConfigError> errors;
  load_and_validate_file("/nonexistent/llmux.yaml", errors);
  ASSERT_EQ(errors.size(), 1u) << dump(errors);
}

}  // namespace
}  // namespace llmux::config
