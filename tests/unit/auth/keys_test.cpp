// SPDX-License-Identifier: Apache-2.0
// KeyTable: Bearer parsing, lookup by digest, 401s, model and route restrictions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "auth/keys.hpp"
#include "config/config.hpp"

namespace llmux::auth {
namespace {

using ::testing::HasSubstr;

config::ApiKey plain(std::string name, std::string_view key, std::vector<std::string> models = {},
                     std::vector<std::string> routes = {}) {
  config::ApiKey k;
  k.name = std::move(name);
  k.sha256 = config::hash_key(key);
  k.models = std::move(models);
  k.routes = std::move(routes);
  return k;
}

KeyTable table() {
  config::Auth a;
  a.keys.push_back(plain("alice", "sk-alice"));
  a.keys.push_back(plain("bob", "sk-bob", {"qwen"}, {"chat"}));
  return KeyTable(a);
}

boost::json::object error_of(const Decision& d) {
  return boost::json::parse(d.body).as_object().at("error").as_object();
}

TEST(BearerToken, Parsing) {
  EXPECT_EQ(bearer_token("Bearer sk-1"), "sk-1");
  EXPECT_EQ(bearer_token("bearer sk-1"), "sk-1");
  EXPECT_EQ(bearer_token("BEARER   sk-1  "), "sk-1");
  EXPECT_EQ(bearer_token(" Bearer\tsk-1"), "sk-1");
  EXPECT_EQ(bearer_token(""), std::nullopt);
  EXPECT_EQ(bearer_token("Bearer"), std::nullopt);
  EXPECT_EQ(bearer_token("Bearer   "), std::nullopt);
  EXPECT_EQ(bearer_token("Bearersk-1"), std::nullopt);
  EXPECT_EQ(bearer_token("Basic c2stMQ=="), std::nullopt);
  EXPECT_EQ(bearer_token("sk-1"), std::nullopt);
}

TEST(KeyTable, FindsKnownKeysOnly) {
  const KeyTable t = table();
  EXPECT_TRUE(t.enabled());
  EXPECT_EQ(t.size(), 2u);
  const KeyEntry* a = t.find("Bearer sk-alice");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "alice");
  ASSERT_NE(t.find("bearer sk-bob"), nullptr);
  EXPECT_EQ(t.find("Bearer sk-bob")->name, "bob");
  EXPECT_EQ(t.find("Bearer sk-alice2"), nullptr);
  EXPECT_EQ(t.find("Bearer sk-alic"), nullptr);
  EXPECT_EQ(t.find(""), nullptr);
  EXPECT_EQ(t.find("sk-alice"), nullptr);  // no scheme
}

TEST(KeyTable, HashedAndPlainConfigGiveTheSameEntry) {
  std::vector<config::ConfigError> errors;
  const std::string base =
      "backends: [{name: s, url: \"http://192.0.2.1:1\"}]\nroutes: [{backends: [s]}]\n"
      "auth:\n  keys:\n    - name: alice\n";
  config::GatewayConfig from_plain =
      config::load_and_validate(base + "      key: sk-alice-123\n", errors);
  config::GatewayConfig from_hash = config::load_and_validate(
      base + "      sha256: " + config::hash_key("sk-alice-123") + "\n", errors);
  ASSERT_TRUE(errors.empty()) << errors[0].to_string();
  const KeyTable p(from_plain.auth), h(from_hash.auth);
  const KeyEntry* ep = p.find("Bearer sk-alice-123");
  const KeyEntry* eh = h.find("Bearer sk-alice-123");
  ASSERT_NE(ep, nullptr);
  ASSERT_NE(eh, nullptr);
  EXPECT_EQ(ep->name, eh->name);
  EXPECT_EQ(ep->sha256, eh->sha256);
  EXPECT_EQ(ep->sha256, digest("sk-alice-123"));
}

TEST(KeyTable, EntryKeepsNoPlaintext) {
  const std::string secret = "sk-plaintext-secret";
  config::Auth a;
  a.keys.push_back(plain("alice", secret, {"m"}, {"chat"}));
  const KeyTable t(a);
  const KeyEntry* e = t.find("Bearer " + secret);
  ASSERT_NE(e, nullptr);
  const std::string raw(reinterpret_cast<const char*>(e->sha256.data()), e->sha256.size());
  for (const std::string& s : {e->name, raw, e->models[0], e->routes[0]})
    EXPECT_EQ(s.find(secret), std::string::npos);
  // Nor does a refusal echo it.
  EXPECT_EQ(t.authorize("Bearer " + secret + "x", "chat", "m").decision.body.find(secret),
            std::string::npos);
}

TEST(KeyTable, MissingAndUnknownKeysAre401) {
  const KeyTable t = table();
  const auto missing = t.authorize("", "chat", "qwen");
  EXPECT_EQ(missing.key, nullptr);
  EXPECT_EQ(missing.decision.status, 401);
  auto err = error_of(missing.decision);
  EXPECT_THAT(std::string(err.at("message").as_string()),
              HasSubstr("You didn't provide an API key"));
  EXPECT_EQ(err.at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(err.at("code").as_string(), "invalid_api_key");
  EXPECT_TRUE(err.at("param").is_null());

  const auto unknown = t.authorize("Bearer sk-mallory", "chat", "qwen");
  EXPECT_EQ(unknown.decision.status, 401);
  err = error_of(unknown.decision);
  EXPECT_THAT(std::string(err.at("message").as_string()), HasSubstr("Incorrect API key provided"));
  EXPECT_EQ(err.at("code").as_string(), "invalid_api_key");
  EXPECT_EQ(t.check(nullptr, "chat", "qwen").status, 401);
  // A scheme other than Bearer is no key at all.
  EXPECT_THAT(t.authorize("Basic abc", "chat", {}).decision.body, HasSubstr("didn't provide"));
}

TEST(PresentedKey, BearerFirstThenXApiKey) {
  EXPECT_EQ(presented_key("Bearer sk-1", "sk-2"), "sk-1");
  EXPECT_EQ(presented_key("", " sk-2 "), "sk-2");
  EXPECT_EQ(presented_key("Basic abc", "sk-2"), "sk-2");
  EXPECT_EQ(presented_key("", "  "), std::nullopt);
  EXPECT_EQ(presented_key("", ""), std::nullopt);
}

TEST(KeyTable, XApiKeyIsAKeyAsBearerIs) {
  // Anthropic's clients send their key in x-api-key.
  const KeyTable t = table();
  const auto by_header = t.authorize("", "chat", "qwen", "sk-bob");
  ASSERT_NE(by_header.key, nullptr);
  EXPECT_EQ(by_header.key->name, "bob");
  EXPECT_TRUE(by_header.decision.ok());
  EXPECT_EQ(t.find("", "sk-alice"), t.find("Bearer sk-alice"));
  // Known Bearer wins over an unknown x-api-key; an unknown x-api-key is an incorrect key.
  EXPECT_EQ(t.authorize("Bearer sk-alice", "chat", "qwen", "sk-mallory").key->name, "alice");
  const auto unknown = t.authorize("", "chat", "qwen", "sk-mallory");
  EXPECT_EQ(unknown.decision.status, 401);
  EXPECT_THAT(unknown.decision.message, HasSubstr("Incorrect API key"));
  // The refusal's message alone, for a client of another dialect, is the body's message.
  EXPECT_EQ(error_of(unknown.decision).at("message").as_string(), unknown.decision.message);
  const auto forbidden = t.authorize("", "responses", "qwen", "sk-bob");
  EXPECT_EQ(forbidden.decision.status, 403);
  EXPECT_EQ(error_of(forbidden.decision).at("message").as_string(), forbidden.decision.message);
}

TEST(KeyTable, AuthOffAllowsEverything) {
  const KeyTable off;
  EXPECT_FALSE(off.enabled());
  const auto r = off.authorize("", "chat", "anything");
  EXPECT_TRUE(r.decision.ok());
  EXPECT_EQ(r.key, nullptr);
  // An empty keys file still turns auth on: every key is refused.
  config::Auth a;
  a.keys_file = "/etc/llmux/keys.yaml";
  const KeyTable locked(a);
  EXPECT_TRUE(locked.enabled());
  EXPECT_EQ(locked.authorize("Bearer x", "chat", {}).decision.status, 401);
}

TEST(KeyTable, UnrestrictedKeyMayUseAnything) {
  const KeyTable t = table();
  const auto r = t.authorize("Bearer sk-alice", "responses", "any-model");
  EXPECT_TRUE(r.decision.ok()) << r.decision.body;
  ASSERT_NE(r.key, nullptr);
  EXPECT_EQ(r.key->name, "alice");
  EXPECT_TRUE(t.authorize("Bearer sk-alice", "chat", "").decision.ok());
}

TEST(KeyTable, RouteRestriction) {
  const KeyTable t = table();
  EXPECT_TRUE(t.authorize("Bearer sk-bob", "chat", "qwen").decision.ok());
  const auto r = t.authorize("Bearer sk-bob", "responses", "qwen");
  ASSERT_NE(r.key, nullptr);
  EXPECT_EQ(r.decision.status, 403);
  const auto err = error_of(r.decision);
  EXPECT_THAT(std::string(err.at("message").as_string()), HasSubstr("route 'responses'"));
  EXPECT_THAT(std::string(err.at("message").as_string()), HasSubstr("chat"));
  // The route applies to requests that name no model, too.
  EXPECT_EQ(t.authorize("Bearer sk-bob", "responses", std::nullopt).decision.status, 403);
}

TEST(KeyTable, ModelRestriction) {
  const KeyTable t = table();
  const auto r = t.authorize("Bearer sk-bob", "chat", "llama");
  EXPECT_EQ(r.decision.status, 403);
  const auto err = error_of(r.decision);
  EXPECT_THAT(std::string(err.at("message").as_string()), HasSubstr("model 'llama'"));
  EXPECT_EQ(err.at("param").as_string(), "model");
  // A body without a model would let the backend choose: refused for a limited key.
  EXPECT_EQ(t.authorize("Bearer sk-bob", "chat", "").decision.status, 403);
  // A request that names no model by its nature (a GET) passes on the route alone.
  EXPECT_TRUE(t.authorize("Bearer sk-bob", "chat", std::nullopt).decision.ok());
  // Exact names: no prefix or case folding.
  EXPECT_EQ(t.authorize("Bearer sk-bob", "chat", "Qwen").decision.status, 403);
  EXPECT_EQ(t.authorize("Bearer sk-bob", "chat", "qwen2").decision.status, 403);
}

}  // namespace
}  // namespace llmux::auth
