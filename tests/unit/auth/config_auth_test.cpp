// SPDX-License-Identifier: Apache-2.0
// The `auth` and `quotas` config sections: loading, the keys file, and every validation error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <string>

#include "config/config.hpp"
#include "config/lint.hpp"

namespace llmux::config {
namespace {

using ::testing::HasSubstr;

const std::string kBase = R"(
backends:
  - {name: server1, url: "http://192.0.2.101:30000"}
routes:
  - {name: responses, match: {path_prefix: /v1/responses}, backends: [server1]}
  - {name: chat, match: {path: /v1/chat/completions}, backends: [server1]}
)";

std::string dump(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const auto& e : errors) out += "  " + e.to_string() + "\n";
  return out;
}

/// load_and_validate() of kBase + `extra`.
GatewayConfig load(const std::string& extra, std::vector<ConfigError>& errors) {
  return load_and_validate(kBase + extra, errors);
}

/// The errors of `extra` whose field is `field`.
std::vector<ConfigError> errors_on(const std::string& extra, const std::string& field) {
  std::vector<ConfigError> errors;
  load(extra, errors);
  std::vector<ConfigError> out;
  for (auto& e : errors)
    if (e.field == field) out.push_back(e);
  EXPECT_FALSE(out.empty()) << "no error on " << field << "; got:\n" << dump(errors);
  return out;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/llmux_keys_XXXXXX";
    const int fd = mkstemp(name);
    ::close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

TEST(ConfigAuth, HashKeyIsSha256Hex) {
  EXPECT_EQ(hash_key("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hash_key(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(ConfigAuth, LoadsKeysLimitsAndQuotas) {
  std::vector<ConfigError> errors;
  const GatewayConfig cfg = load(R"(
auth:
  keys:
    - name: alice
      key: sk-alice-0123456789
      models: [qwen3.6-35b-a3b-fp8]
      routes: [responses, chat]
      limits: {requests_per_minute: 600, tokens_per_minute: 200000, concurrent: 8}
    - name: bob
      sha256: BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD
  usage_retention: 48h
quotas:
  local_share: 0.34
)",
                                 errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  ASSERT_TRUE(cfg.auth.enabled());
  ASSERT_EQ(cfg.auth.keys.size(), 2u);
  const ApiKey& a = cfg.auth.keys[0];
  EXPECT_EQ(a.name, "alice");
  EXPECT_EQ(a.sha256, hash_key("sk-alice-0123456789"));
  EXPECT_EQ(a.models, std::vector<std::string>{"qwen3.6-35b-a3b-fp8"});
  EXPECT_EQ(a.routes, (std::vector<std::string>{"responses", "chat"}));
  EXPECT_EQ(a.limits.requests_per_minute, 600);
  EXPECT_EQ(a.limits.tokens_per_minute, 200000);
  EXPECT_EQ(a.limits.concurrent, 8);
  // Upper-case hex is accepted and lowered.
  EXPECT_EQ(cfg.auth.keys[1].sha256, hash_key("abc"));
  EXPECT_EQ(cfg.auth.keys[1].limits.requests_per_minute, 0);
  EXPECT_EQ(cfg.auth.usage_retention, std::chrono::hours(48));
  ASSERT_TRUE(cfg.quotas.local_share.has_value());
  EXPECT_DOUBLE_EQ(*cfg.quotas.local_share, 0.34);
}

TEST(ConfigAuth, OffWithoutKeysAndShareUnsetByDefault) {
  std::vector<ConfigError> errors;
  const GatewayConfig cfg = load("", errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_FALSE(cfg.auth.enabled());
  EXPECT_FALSE(cfg.quotas.local_share.has_value());
}

TEST(ConfigAuth, PlaintextKeyIsNotKept) {
  const std::string secret = "sk-very-secret-key-42";
  std::vector<ConfigError> errors;
  const GatewayConfig cfg =
      load("auth:\n  keys:\n    - {name: alice, key: " + secret + ", models: [m]}\n", errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  const ApiKey& k = cfg.auth.keys.at(0);
  EXPECT_EQ(k.sha256, hash_key(secret));
  for (const std::string& s : {k.name, k.sha256}) EXPECT_EQ(s.find(secret), std::string::npos);
  for (const std::string& s : k.models) EXPECT_EQ(s.find(secret), std::string::npos);
}

TEST(ConfigAuth, MalformedPlaintextKeyIsNotShownInTheError) {
  const auto errs = errors_on("auth:\n  keys:\n    - {name: a, key: \"sk-secret with-space\"}\n",
                              "auth.keys[0].key");
  EXPECT_THAT(errs[0].reason, HasSubstr("without spaces"));
  EXPECT_EQ(errs[0].to_string().find("sk-secret"), std::string::npos) << errs[0].to_string();
  EXPECT_GT(errs[0].line, 0);
}

TEST(ConfigAuth, DuplicateNames) {
  const auto errs = errors_on(R"(
auth:
  keys:
    - {name: alice, key: k1}
    - {name: alice, key: k2}
)",
                              "auth.keys[1].name");
  EXPECT_THAT(errs[0].reason, HasSubstr("duplicate key name (also auth.keys[0])"));
}

TEST(ConfigAuth, DuplicateKeysPlainAndHashed) {
  const auto errs = errors_on(
      "auth:\n  keys:\n    - {name: a, key: abc}\n    - {name: b, sha256: " + hash_key("abc") +
          "}\n",
      "auth.keys[1]");
  EXPECT_THAT(errs[0].reason, HasSubstr("the same key as auth.keys[0]"));
}

TEST(ConfigAuth, MalformedSha256) {
  for (const std::string& bad : {std::string("abc"), std::string(63, 'a'), std::string(64, 'g')}) {
    const auto errs = errors_on("auth:\n  keys:\n    - {name: a, sha256: \"" + bad + "\"}\n",
                                "auth.keys[0].sha256");
    EXPECT_THAT(errs[0].reason, HasSubstr("64 hex digits")) << bad;
  }
}

TEST(ConfigAuth, KeyOrSha256) {
  EXPECT_THAT(errors_on("auth:\n  keys:\n    - {name: a}\n", "auth.keys[0]")[0].reason,
              HasSubstr("needs `key`"));
  EXPECT_THAT(
      errors_on("auth:\n  keys:\n    - {name: a, key: abc, sha256: " + hash_key("abc") + "}\n",
                "auth.keys[0].sha256")[0]
          .reason,
      HasSubstr("either key or sha256"));
}

TEST(ConfigAuth, NamesAreRequiredAndPlain) {
  EXPECT_THAT(errors_on("auth:\n  keys:\n    - {key: abc}\n", "auth.keys[0].name")[0].reason,
              HasSubstr("needs a name"));
  EXPECT_THAT(
      errors_on("auth:\n  keys:\n    - {name: \"a b\", key: abc}\n", "auth.keys[0].name")[0].reason,
      HasSubstr("letters, digits"));
}

TEST(ConfigAuth, NegativeLimits) {
  for (const std::string name : {"requests_per_minute", "tokens_per_minute", "concurrent"}) {
    const auto errs =
        errors_on("auth:\n  keys:\n    - {name: a, key: abc, limits: {" + name + ": -1}}\n",
                  "auth.keys[0].limits." + name);
    EXPECT_THAT(errs[0].reason, HasSubstr("0 (no limit) or more"));
    EXPECT_EQ(errs[0].value, "-1");
  }
}

TEST(ConfigAuth, LimitsMustBeIntegers) {
  const auto errs =
      errors_on("auth:\n  keys:\n    - {name: a, key: abc, limits: {concurrent: lots}}\n",
                "auth.keys[0].limits.concurrent");
  EXPECT_THAT(errs[0].reason, HasSubstr("integer"));
}

TEST(ConfigAuth, UnknownRouteWithSuggestion) {
  const auto errs =
      errors_on("auth:\n  keys:\n    - {name: a, key: abc, routes: [chat, respones]}\n",
                "auth.keys[0].routes[1]");
  EXPECT_THAT(errs[0].reason, HasSubstr("did you mean 'responses'"));
}

TEST(ConfigAuth, EmptyModelName) {
  EXPECT_THAT(errors_on("auth:\n  keys:\n    - {name: a, key: abc, models: [\"\"]}\n",
                        "auth.keys[0].models[0]")[0]
                  .reason,
              HasSubstr("empty model name"));
}

TEST(ConfigAuth, UnknownKeysAreReported) {
  EXPECT_THAT(errors_on("auth:\n  kyes: []\n", "auth.kyes")[0].reason,
              HasSubstr("did you mean 'keys'"));
  EXPECT_THAT(errors_on("auth:\n  keys:\n    - {name: a, key: abc, limits: {rpm: 3}}\n",
                        "auth.keys[0].limits.rpm")[0]
                  .reason,
              HasSubstr("unknown key"));
}

TEST(ConfigAuth, LocalShareRange) {
  for (const std::string bad : {"0", "-0.5", "1.5"}) {
    const auto errs = errors_on("quotas: {local_share: " + bad + "}\n", "quotas.local_share");
    EXPECT_THAT(errs[0].reason, HasSubstr("more than 0 and at most 1")) << bad;
  }
  std::vector<ConfigError> errors;
  load("quotas: {local_share: 1}\n", errors);
  EXPECT_TRUE(errors.empty()) << dump(errors);
}

TEST(ConfigAuth, UsageRetentionAtLeastAnHour) {
  EXPECT_THAT(errors_on("auth: {usage_retention: 30m}\n", "auth.usage_retention")[0].reason,
              HasSubstr("at least 1h"));
}

TEST(ConfigAuth, KeysFileIsReadOnEveryValidation) {
  TempFile file(R"(
keys:
  - name: carol
    key: sk-carol
    limits: {concurrent: 2}
  - {name: dave, sha256: )" +
                hash_key("sk-dave") + "}\n");
  std::vector<ConfigError> errors;
  GatewayConfig cfg = load("auth:\n  keys_file: " + file.path + "\n", errors);
  ASSERT_TRUE(errors.empty()) << dump(errors);
  EXPECT_TRUE(cfg.auth.enabled());
  ASSERT_EQ(cfg.auth.file_keys.size(), 2u);
  EXPECT_EQ(cfg.auth.file_keys[0].name, "carol");
  EXPECT_EQ(cfg.auth.file_keys[0].sha256, hash_key("sk-carol"));
  EXPECT_EQ(cfg.auth.file_keys[0].limits.concurrent, 2);
  EXPECT_EQ(cfg.auth.file_keys[1].sha256, hash_key("sk-dave"));
  // A reload validates again: the file is read afresh, not appended twice.
  std::ofstream(file.path) << "- {name: erin, key: sk-erin}\n";  // the bare-list form
  ASSERT_TRUE(validate(cfg).empty());
  ASSERT_EQ(cfg.auth.file_keys.size(), 1u);
  EXPECT_EQ(cfg.auth.file_keys[0].name, "erin");
}

TEST(ConfigAuth, KeysFileDuplicatesInlineAndErrors) {
  TempFile file("keys:\n  - {name: alice, key: other}\n  - {name: bob, sha256: nothex}\n");
  const std::string extra =
      "auth:\n  keys:\n    - {name: alice, key: abc}\n  keys_file: " + file.path + "\n";
  EXPECT_THAT(errors_on(extra, "auth.keys_file.keys[0].name")[0].reason,
              HasSubstr("also auth.keys[0]"));
  EXPECT_THAT(errors_on(extra, "auth.keys_file.keys[1].sha256")[0].reason,
              HasSubstr("64 hex digits"));
}

TEST(ConfigAuth, KeysFileMissingOrBroken) {
  EXPECT_THAT(
      errors_on("auth: {keys_file: /nonexistent/llmux-keys.yaml}\n", "auth.keys_file")[0].reason,
      HasSubstr("cannot be read"));
  TempFile broken("keys: [\n");
  EXPECT_THAT(errors_on("auth: {keys_file: " + broken.path + "}\n", "auth.keys_file")[0].reason,
              HasSubstr("YAML syntax error"));
  TempFile unknown("keyz: []\n");
  EXPECT_THAT(
      errors_on("auth: {keys_file: " + unknown.path + "}\n", "auth.keys_file.keyz")[0].reason,
      HasSubstr("unknown key"));
}

TEST(ConfigAuth, LintChecksUsageRetentionAsADuration) {
  // Keys and quotas are enforced: the only warning is a bare number where a duration belongs.
  const auto warnings =
      lint(kBase + "auth:\n  keys: [{name: a, key: abc}]\n  usage_retention: 3600000\n");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].field, "auth.usage_retention");
  EXPECT_TRUE(lint(kBase).empty());
}

}  // namespace
}  // namespace llmux::config
