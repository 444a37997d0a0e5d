// SPDX-License-Identifier: Apache-2.0
// `state: redis://host:port/db` (issue 15): what RedisUrl::parse accepts, and why it refuses the
// rest.
#include <gtest/gtest.h>

#include <string>

#include "state/redis_client.hpp"

namespace llmux::state {
namespace {

TEST(RedisUrl, HostPortAndDatabase) {
  auto u = RedisUrl::parse("redis://192.0.2.5:6380/3");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "192.0.2.5");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->db, 3);
  EXPECT_TRUE(u->password.empty());
  EXPECT_EQ(u->str(), "redis://192.0.2.5:6380/3");
}

TEST(RedisUrl, PortAndDatabaseDefault) {
  for (const char* s :
       {"redis://cache.internal", "redis://cache.internal/", "REDIS://cache.internal"}) {
    auto u = RedisUrl::parse(s);
    ASSERT_TRUE(u) << s;
    EXPECT_EQ(u->host, "cache.internal") << s;
    EXPECT_EQ(u->port, 6379) << s;
    EXPECT_EQ(u->db, 0) << s;
  }
  auto u = RedisUrl::parse("redis://127.0.0.1:7000");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 7000);
  EXPECT_EQ(u->db, 0);
}

TEST(RedisUrl, BracketedIpv6) {
  auto u = RedisUrl::parse("redis://[::1]:6390/2");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 6390);
  EXPECT_EQ(u->db, 2);
  EXPECT_EQ(u->str(), "redis://[::1]:6390/2");
  auto v = RedisUrl::parse("redis://[fe80::1]");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->host, "fe80::1");
  EXPECT_EQ(v->port, 6379);
}

TEST(RedisUrl, CredentialsAreKeptButNeverPrinted) {
  auto u = RedisUrl::parse("redis://gw:s3cr@t@redis.lan:6379/1");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->user, "gw");
  EXPECT_EQ(u->password, "s3cr@t");
  EXPECT_EQ(u->host, "redis.lan");
  EXPECT_EQ(u->str().find("s3cr"), std::string::npos);
  auto p = RedisUrl::parse("redis://onlypass@redis.lan");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->user.empty());
  EXPECT_EQ(p->password, "onlypass");
}

TEST(RedisUrl, RefusesWhatIsNotOneAndSaysWhy) {
  struct Case {
    const char* url;
    const char* why;  // a part of the error
  } cases[] = {
      {"http://127.0.0.1:6379", "not a redis:// URL"},
      {"127.0.0.1:6379", "not a redis:// URL"},
      {"redis://", "no host"},
      {"redis://:6379/0", "no host"},
      {"redis://host:0", "port must be 1-65535"},
      {"redis://host:65536", "port must be 1-65535"},
      {"redis://host:abc", "port must be 1-65535"},
      {"redis://host:", "empty port"},
      {"redis://host:6379/x", "database must be a number"},
      {"redis://host:6379/-1", "database must be a number"},
      {"redis://host:6379/0/1", "database must be a number"},
      {"redis://host/0?timeout=1", "query"},
      {"redis://[::1", "unterminated"},
      {"redis://[::1]x", "expected ':port'"},
      {"redis://user:@host", "empty password"},
  };
  for (const auto& c : cases) {
    std::string error;
    EXPECT_FALSE(RedisUrl::parse(c.url, &error)) << c.url;
    EXPECT_NE(error.find(c.why), std::string::npos) << c.url << ": " << error;
  }
  EXPECT_FALSE(RedisUrl::parse("redis://a b:1"));  // without an error sink, too
}

}  // namespace
}  // namespace llmux::state
