// SPDX-License-Identifier: Apache-2.0
// llmux client-config codex: the files current Codex reads (config/codex_profiles.hpp), merged
// into a user's config.toml without losing what is theirs. Each merge is read back with toml++,
// as Codex reads it.
#include "config/codex_profiles.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

namespace llmux::config {
namespace {

CodexOptions options() {
  CodexOptions o;
  o.gateway = "http://127.0.0.1:8080";
  o.direct = "http://127.0.0.1:30000/v1/";
  return o;
}

std::string merged(const std::string& existing, const CodexOptions& o = options()) {
  std::vector<std::string> notes;
  return merge_codex_config(existing, codex_files(o), notes);
}

std::string str(const toml::table& t, std::string_view a, std::string_view b, std::string_view c) {
  return t[a][b][c].value_or(std::string("<missing>"));
}

TEST(CodexBaseUrl, SchemeRequiredAndV1Appended) {
  EXPECT_EQ(codex_base_url("http://192.0.2.1:8080"), "http://192.0.2.1:8080/v1");
  EXPECT_EQ(codex_base_url("https://gw.example/v1/"), "https://gw.example/v1");
  EXPECT_EQ(codex_base_url("http://h:1/prefix"), "http://h:1/prefix/v1");
  for (const char* bad :
       {"127.0.0.1:30001", "localhost:30001", "ftp://h/v1", "http://", "", "http://h:1/v1?x=1"}) {
    EXPECT_THROW(codex_base_url(bad), std::invalid_argument) << bad;
  }
  try {
    codex_base_url("localhost:30001");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("http://localhost:30001"), std::string::npos) << e.what();
  }
}

TEST(CodexFiles, ProfilesNameTheirProvidersAndModel) {
  CodexOptions o = options();
  o.name = "spark";
  o.model = "m-1";
  const CodexFiles f = codex_files(o);
  ASSERT_EQ(f.profiles.size(), 2u);
  EXPECT_EQ(f.profiles[0].first, "spark.config.toml");
  EXPECT_EQ(f.profiles[1].first, "spark-direct.config.toml");
  const toml::table p0 = toml::parse(f.profiles[0].second);
  const toml::table p1 = toml::parse(f.profiles[1].second);
  EXPECT_EQ(p0["model"].value_or(std::string()), "m-1");
  EXPECT_EQ(p0["model_provider"].value_or(std::string()), "spark");
  EXPECT_EQ(p1["model_provider"].value_or(std::string()), "spark-direct");
  // A profile file holds no tables: Codex takes providers from config.toml only.
  for (const auto& [k, v] : p0) EXPECT_FALSE(v.is_table()) << k.str();
  EXPECT_THROW(codex_files([] {
                 auto x = options();
                 x.name = "../evil";
                 return x;
               }()),
               std::invalid_argument);
}

TEST(CodexMerge, IntoNothing) {
  CodexOptions o = options();
  o.env_key = "LLMUX_KEY";
  o.headers = {{"X-Team", "a \"quoted\" value"}};
  const toml::table t = toml::parse(merged("", o));
  EXPECT_EQ(str(t, "model_providers", "dgx", "base_url"), "http://127.0.0.1:8080/v1");
  EXPECT_EQ(str(t, "model_providers", "dgx-direct", "base_url"), "http://127.0.0.1:30000/v1");
  EXPECT_EQ(str(t, "model_providers", "dgx", "wire_api"), "responses");
  EXPECT_EQ(str(t, "model_providers", "dgx", "env_key"), "LLMUX_KEY");
  EXPECT_EQ(t["model_providers"]["dgx"]["http_headers"]["X-Team"].value_or(std::string()),
            "a \"quoted\" value");
  EXPECT_FALSE(t.contains("model_context_window"));  // only when asked for
}

TEST(CodexMerge, KeepsTheUsersFileAndReplacesOnlyOurs) {
  const std::string user =
      "# my settings\n"
      "model = \"gpt-5\"\n"
      "approval_policy = \"on-request\"\n"
      "\n"
      "[model_providers.\"dgx\"]\n"
      "name = \"old\"\n"
      "base_url = \"http://old.invalid:1/v1\"\n"
      "\n"
      "# about mcp\n"
      "[mcp_servers.foo]\n"
      "command = \"npx\"\n"
      "args = [\"-y\", \"[model_providers.dgx]\",\n"
      "  \"more\"]\n"
      "note = \"\"\"\n"
      "[profiles.dgx]\n"
      "\"\"\"\n"
      "\n"
      "[profiles.dgx]\n"
      "model = \"x\"\n"
      "\n"
      "[profiles.dgx.sub]\n"
      "k = 1\n"
      "\n"
      "[profiles.other]\n"
      "model = \"y\"\n";
  CodexOptions o = options();
  o.context_window = 262144;
  std::vector<std::string> notes;
  const std::string out = merge_codex_config(user, codex_files(o), notes);
  const toml::table t = toml::parse(out);
  // Ours, exactly once.
  EXPECT_EQ(str(t, "model_providers", "dgx", "base_url"), "http://127.0.0.1:8080/v1");
  EXPECT_FALSE(t["model_providers"]["dgx"]["name"].value_or(std::string()) == "old");
  EXPECT_EQ(str(t, "model_providers", "dgx-direct", "base_url"), "http://127.0.0.1:30000/v1");
  EXPECT_EQ(t["model_context_window"].value_or(0LL), 262144);
  // The old [profiles.dgx] (and its subtable) gone; the user's other profile kept.
  EXPECT_FALSE(t["profiles"]["dgx"]);
  EXPECT_EQ(t["profiles"]["other"]["model"].value_or(std::string()), "y");
  // The user's settings, comments and values that look like headers, untouched.
  EXPECT_EQ(t["model"].value_or(std::string()), "gpt-5");
  EXPECT_EQ(t["approval_policy"].value_or(std::string()), "on-request");
  EXPECT_EQ(t["mcp_servers"]["foo"]["args"][1].value_or(std::string()), "[model_providers.dgx]");
  EXPECT_EQ(t["mcp_servers"]["foo"]["note"].value_or(std::string()), "[profiles.dgx]\n");
  for (const char* kept : {"# my settings\n", "# about mcp\n", "  \"more\"]\n"})
    EXPECT_NE(out.find(kept), std::string::npos) << kept << "\n" << out;
  // Replaced where it stood: before the user's next table.
  EXPECT_LT(out.find("[model_providers.dgx]"), out.find("[mcp_servers.foo]")) << out;
  EXPECT_EQ(out.find("old.invalid"), std::string::npos) << out;
  EXPECT_EQ(notes.size(), 5u);  // removed 2 profile tables, replaced 1, added 1, set 1 key
  // Merging again changes nothing.
  std::vector<std::string> again;
  EXPECT_EQ(merge_codex_config(out, codex_files(o), again), out);
}

TEST(CodexMerge, RefusesWhatItCannotMergeCleanly) {
  // Not TOML at all.
  EXPECT_THROW(merged("model = \n[x"), std::runtime_error);
  // The provider defined with dotted keys: adding a table would redefine it.
  EXPECT_THROW(merged("model_providers.dgx.base_url = \"http://old:1/v1\"\n"), std::runtime_error);
  // As an inline table inside [model_providers].
  EXPECT_THROW(merged("[model_providers]\ndgx = { base_url = \"http://old:1/v1\" }\n"),
               std::runtime_error);
}

TEST(CodexMerge, ProfileFileKeepsTheUsersKeys) {
  const CodexFiles f = codex_files(options());
  const std::string out = merge_codex_profile(
      "approval_policy = \"never\"\nmodel = \"old\"\n\n[tools]\nweb_search = true\n",
      f.profiles[0].second);
  const toml::table t = toml::parse(out);
  EXPECT_EQ(t["model"].value_or(std::string()), "Qwen3.6-35B-A3B");
  EXPECT_EQ(t["model_provider"].value_or(std::string()), "dgx");
  EXPECT_EQ(t["approval_policy"].value_or(std::string()), "never");
  EXPECT_TRUE(t["tools"]["web_search"].value_or(false));
}

TEST(CodexHome, WritesMergedFilesAndKeepsABackup) {
  namespace fs = std::filesystem;
  const fs::path home =
      fs::temp_directory_path() /
      ("llmux-codex-home-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       "-" + std::to_string(reinterpret_cast<std::uintptr_t>(&home)));
  fs::remove_all(home);
  fs::create_directories(home);
  { std::ofstream(home / "config.toml") << "approval_policy = \"never\"\n"; }
  const auto lines = write_codex_home(home, codex_files(options()));
  EXPECT_EQ(lines.size(), 3u);
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(read(home / "config.toml.bak"), "approval_policy = \"never\"\n");
  const toml::table t = toml::parse(read(home / "config.toml"));
  EXPECT_EQ(t["approval_policy"].value_or(std::string()), "never");
  EXPECT_EQ(str(t, "model_providers", "dgx", "base_url"), "http://127.0.0.1:8080/v1");
  EXPECT_TRUE(fs::exists(home / "dgx.config.toml"));
  EXPECT_TRUE(fs::exists(home / "dgx-direct.config.toml"));
  // A config.toml it cannot merge: nothing is replaced.
  { std::ofstream(home / "config.toml") << "model = \n"; }
  fs::remove(home / "dgx.config.toml");
  EXPECT_THROW(write_codex_home(home, codex_files(options())), std::runtime_error);
  EXPECT_EQ(read(home / "config.toml"), "model = \n");
  EXPECT_FALSE(fs::exists(home / "dgx.config.toml"));
  fs::remove_all(home);
}

}  // namespace
}  // namespace llmux::config
