// SPDX-License-Identifier: Apache-2.0
// TLS in the configuration (issue 15, part 6): `listen[i].tls: {cert, key}` and an https://
// backend's `tls: {ca_file, verify}` are loaded strictly; validate() refuses half a listener
// pair, files it cannot use (naming them), tls on an http:// backend or on metrics.listen; lint
// warns about `verify: false`. (Working files are the integration test's: gateway_tls_test.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"
#include "config/lint.hpp"
#include "test_util.hpp"

namespace llmux::config {
namespace {

using testing::dump;
using ::testing::HasSubstr;
using testing::on;
using testing::validate_yaml;

constexpr const char* kRoutes = "routes:\n  - {backends: [a]}\n";

TEST(TlsConfig, LoadsListenerAndBackendBlocks) {
  std::vector<ConfigError> errors;
  const GatewayConfig cfg = load_yaml(R"(
listen:
  - {address: 127.0.0.1, port: 8443, tls: {cert: /etc/llmux/cert.pem, key: /etc/llmux/key.pem}}
  - "127.0.0.1:8080"
backends:
  - {name: a, url: "https://gpu1", tls: {ca_file: /etc/llmux/ca.pem, verify: false}}
  - {name: b, url: "https://gpu2:30000"}
routes:
  - {backends: [a, b]}
)",
                                      errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  ASSERT_EQ(cfg.listeners.size(), 2u);
  EXPECT_EQ(cfg.listeners[0].tls.cert, "/etc/llmux/cert.pem");
  EXPECT_EQ(cfg.listeners[0].tls.key, "/etc/llmux/key.pem");
  EXPECT_TRUE(cfg.listeners[0].tls.enabled());
  EXPECT_FALSE(cfg.listeners[1].tls.enabled());
  EXPECT_EQ(cfg.backends[0].tls.ca_file, "/etc/llmux/ca.pem");
  EXPECT_FALSE(cfg.backends[0].tls.verify);
  EXPECT_TRUE(cfg.backends[1].tls.verify);
  EXPECT_TRUE(cfg.backends[1].tls.ca_file.empty());
}

TEST(TlsConfig, UnknownKeysAreRejected) {
  std::vector<ConfigError> errors;
  load_yaml(R"(
listen: [{port: 8443, tls: {cert: c.pem, key: k.pem, chain: x.pem}}]
backends:
  - {name: a, url: "https://h", tls: {ca: ca.pem}}
routes:
  - {backends: [a]}
)",
            errors);
  EXPECT_EQ(on(errors, "listen[0].tls.chain").size(), 1u) << dump(errors);
  EXPECT_EQ(on(errors, "backends[0].tls.ca").size(), 1u) << dump(errors);
}

TEST(TlsConfig, HttpsBackendsDefaultToPort443) {
  std::vector<ConfigError> load_errors;
  GatewayConfig cfg = load_yaml(
      std::string("backends:\n  - {name: a, url: \"https://gpu1/base\"}\n") + kRoutes, load_errors);
  ASSERT_TRUE(load_errors.empty()) << dump(load_errors);
  const auto errors = validate(cfg);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_EQ(cfg.backends[0].scheme, "https");
  EXPECT_EQ(cfg.backends[0].port, 443);
  EXPECT_EQ(cfg.backends[0].base_path, "/base");
}

TEST(TlsConfig, ListenerNeedsBothFilesAndUsableOnes) {
  const std::string backends = "backends:\n  - {name: a, url: \"http://192.0.2.1:1\"}\n";
  auto errors = validate_yaml("listen: [{port: 8443, tls: {cert: c.pem}}]\n" + backends + kRoutes);
  ASSERT_EQ(on(errors, "listen[0].tls.key").size(), 1u) << dump(errors);
  EXPECT_THAT(on(errors, "listen[0].tls.key")[0].reason, HasSubstr("needs a key"));

  errors = validate_yaml("listen: [{port: 8443, tls: {cert: /nonexistent/c.pem, key: k.pem}}]\n" +
                         backends + kRoutes);
  ASSERT_EQ(on(errors, "listen[0].tls").size(), 1u) << dump(errors);
  EXPECT_THAT(on(errors, "listen[0].tls")[0].reason, HasSubstr("/nonexistent/c.pem"));
}

TEST(TlsConfig, BackendTlsOnlyForHttpsAndWithAReadableCaFile) {
  auto errors = validate_yaml(
      "backends:\n  - {name: a, url: \"http://192.0.2.1:1\", tls: {ca_file: ca.pem}}\n" +
      std::string(kRoutes));
  ASSERT_EQ(on(errors, "backends[0].tls").size(), 1u) << dump(errors);
  EXPECT_THAT(on(errors, "backends[0].tls")[0].reason, HasSubstr("https:// backends only"));

  errors = validate_yaml(
      "backends:\n  - {name: a, url: \"https://192.0.2.1\", tls: {ca_file: "
      "/nonexistent/ca.pem}}\n" +
      std::string(kRoutes));
  ASSERT_EQ(on(errors, "backends[0].tls.ca_file").size(), 1u) << dump(errors);
  EXPECT_THAT(on(errors, "backends[0].tls.ca_file")[0].reason, HasSubstr("/nonexistent/ca.pem"));
}

TEST(TlsConfig, MetricsListenServesPlainHttpOnly) {
  const auto errors = validate_yaml(
      "metrics: {listen: {address: 127.0.0.1, port: 9100, tls: {cert: c.pem, key: k.pem}}}\n"
      "backends:\n  - {name: a, url: \"http://192.0.2.1:1\"}\n" +
      std::string(kRoutes));
  ASSERT_EQ(on(errors, "metrics.listen.tls").size(), 1u) << dump(errors);
}

TEST(TlsConfig, LintWarnsWhenVerificationIsOff) {
  const auto ws = lint("backends:\n  - {name: a, url: \"https://h\", tls: {verify: false}}\n" +
                       std::string(kRoutes));
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].field, "backends[0].tls.verify");
  EXPECT_THAT(ws[0].reason, HasSubstr("not checked"));
  EXPECT_TRUE(lint("backends:\n  - {name: a, url: \"https://h\", tls: {verify: true}}\n").empty());
}

}  // namespace
}  // namespace llmux::config
