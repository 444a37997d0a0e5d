// SPDX-License-Identifier: Apache-2.0
// lint(): warnings about a valid but suspicious config, read from its YAML text — a backend URL
// ending in /v1 and a duration written as a bare number — with field, value and position; and
// nothing for the same config written as meant.
#include "config/lint.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.hpp"

namespace llmux::config {
namespace {

std::string dump(const std::vector<ConfigWarning>& ws) {
  std::string out;
  for (const auto& w : ws) out += "  " + w.to_string() + "\n";
  return out;
}

const ConfigWarning* find(const std::vector<ConfigWarning>& ws, const std::string& field) {
  for (const auto& w : ws)
    if (w.field == field) return &w;
  return nullptr;
}

TEST(Lint, CleanConfigHasNoWarnings) {
  const std::string yaml = R"(
listen: ":8080"
backends:
  - {name: a, url: "http://127.0.0.1:30001", pool_idle_timeout: 3s}
  - {name: b, url: "http://127.0.0.1:30002/api", health_checks: {interval: 500ms}}
routes:
  - {backends: [a, b]}
timeouts: {connect: 5s, first_byte: 300s, idle: 0ms, drain: 1m}
health_checks: {interval: 2s, timeout: 1s, healthy_threshold: 3}
outlier_detection: {consecutive_failures: 5, base_ejection: 5s, max_ejection: 1h}
)";
  const auto ws = lint(yaml);
  EXPECT_TRUE(ws.empty()) << dump(ws);
}

TEST(Lint, BareNumberDurationsAreFlaggedEverywhere) {
  const std::string yaml = R"(backends:
  - name: a
    url: "http://127.0.0.1:30001"
    pool_idle_timeout: 4000
    health_checks: {interval: 500, timeout: "200"}
routes:
  - {backends: [a]}
timeouts:
  connect: 5
  first_byte: 300s
health_checks: {interval: 2000, timeout: 1s}
outlier_detection: {consecutive_failures: 3, base_ejection: 5000, max_ejection: 60000}
)";
  const auto ws = lint(yaml);
  const char* expected[] = {
      "backends[0].pool_idle_timeout",
      "backends[0].health_checks.interval",
      "backends[0].health_checks.timeout",
      "timeouts.connect",
      "health_checks.interval",
      "outlier_detection.base_ejection",
      "outlier_detection.max_ejection",
  };
  ASSERT_EQ(ws.size(), std::size(expected)) << dump(ws);
  for (const char* f : expected) EXPECT_NE(find(ws, f), nullptr) << f << " in\n" << dump(ws);
  // Not a duration, or written with a unit: no warning.
  EXPECT_EQ(find(ws, "outlier_detection.consecutive_failures"), nullptr) << dump(ws);
  EXPECT_EQ(find(ws, "timeouts.first_byte"), nullptr) << dump(ws);

  const ConfigWarning* connect = find(ws, "timeouts.connect");
  ASSERT_NE(connect, nullptr);
  EXPECT_EQ(connect->value, "5");
  EXPECT_EQ(connect->line, 9);
  EXPECT_EQ(connect->column, 12);
  EXPECT_NE(connect->reason.find("5ms"), std::string::npos) << connect->reason;
  EXPECT_EQ(connect->to_string().find("timeouts.connect: '5': "), 0u) << connect->to_string();
  EXPECT_NE(connect->to_string().find("(line 9, column 12)"), std::string::npos)
      << connect->to_string();
}

TEST(Lint, ZeroIsLeftToValidation) {
  // 0 is an error whatever its unit; validate() says so, lint() does not add a warning.
  const auto ws = lint("timeouts: {connect: 0, idle: 000}\n");
  EXPECT_TRUE(ws.empty()) << dump(ws);
}

TEST(Lint, BackendUrlEndingInV1) {
  const std::string yaml = R"(backends:
  - {name: a, url: "http://127.0.0.1:30001/v1"}
  - {name: b, url: "http://127.0.0.1:30002/v1/"}
  - {name: c, url: "http://127.0.0.1:30003/api/v1"}
  - {name: d, url: "http://127.0.0.1:30004/v1beta"}
  - {name: e, url: "http://127.0.0.1:30005/v1/x"}
  - {name: f, url: "http://127.0.0.1:30006"}
routes:
  - {backends: [a, b, c, d, e, f]}
)";
  const auto ws = lint(yaml);
  ASSERT_EQ(ws.size(), 3u) << dump(ws);
  EXPECT_EQ(ws[0].field, "backends[0].url");
  EXPECT_EQ(ws[0].value, "http://127.0.0.1:30001/v1");
  EXPECT_EQ(ws[0].line, 2);
  EXPECT_NE(ws[0].reason.find("/v1/v1/chat/completions"), std::string::npos) << ws[0].reason;
  EXPECT_EQ(ws[1].field, "backends[1].url");
  EXPECT_EQ(ws[2].field, "backends[2].url");
  EXPECT_NE(ws[2].reason.find("/api/v1/v1/"), std::string::npos) << ws[2].reason;
}

TEST(Lint, QuickFormUrl) {
  auto w = lint_backend_url("--backend a", "http://192.0.2.1:8000/v1");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->field, "--backend a");
  EXPECT_EQ(w->line, 0);
  EXPECT_EQ(w->to_string().find("--backend a: 'http://192.0.2.1:8000/v1': "), 0u) << w->to_string();
  EXPECT_FALSE(lint_backend_url("f", "http://192.0.2.1:8000").has_value());
  EXPECT_FALSE(lint_backend_url("f", "not a url/v1").has_value());  // validate()'s job
}

TEST(Lint, WhatLoadingRejectsIsSkippedQuietly) {
  // Syntax errors, a scalar document, wrong types, non-scalar keys: loading reports all of
  // these; lint() must neither throw nor invent warnings.
  EXPECT_TRUE(lint("backends: [\n  - {name: a\n").empty());
  EXPECT_TRUE(lint("just a string").empty());
  EXPECT_TRUE(lint("").empty());
  EXPECT_TRUE(lint("timeouts: 5\nbackends: {a: 1}\nhealth_checks: [1, 2]\n").empty());
  EXPECT_TRUE(lint("timeouts: {connect: [5], idle: {a: 1}}\n").empty());
  EXPECT_TRUE(lint("backends:\n  - 5\n  - {url: [1]}\n").empty());
  EXPECT_TRUE(lint("? [a]\n: 1\n").empty());
  // A second document is not read (loading rejects it).
  EXPECT_EQ(lint("timeouts: {connect: 5}\n---\ntimeouts: {idle: 7}\n").size(), 1u);
}

}  // namespace
}  // namespace llmux::config
