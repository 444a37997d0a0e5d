// SPDX-License-Identifier: Apache-2.0
// llmux client-config claude: the env entries that point Claude Code at the gateway
// (config/claude_settings.hpp), merged into a user's settings.json without losing what is
// theirs. Each merge is read back with Boost.JSON.
#include "config/claude_settings.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace llmux::config {
namespace {

namespace json = boost::json;

ClaudeOptions gateway_options() {
  ClaudeOptions o;
  o.gateway = "http://127.0.0.1:8080";
  return o;
}

std::string merge_into(const std::string& existing, const ClaudeOptions& o = gateway_options()) {
  std::vector<std::string> notes;
  return merge_claude_settings(existing, claude_settings(o), notes);
}

std::string env_entry(const json::value& v, std::string_view name) {
  const json::value* e = v.as_object().if_contains("env");
  if (!e) return "<no env>";
  const json::value* x = e->as_object().if_contains(name);
  return x && x->is_string() ? std::string(x->as_string()) : "<missing>";
}

std::vector<std::string> key_order(const json::object& o) {
  std::vector<std::string> out;
  for (const auto& m : o) out.emplace_back(m.key());
  return out;
}

TEST(ClaudeBaseUrl, NoV1AndChecked) {
  EXPECT_EQ(claude_base_url("http://192.0.2.1:8080"), "http://192.0.2.1:8080");
  EXPECT_EQ(claude_base_url("http://192.0.2.1:8080/"), "http://192.0.2.1:8080");
  // Claude Code appends /v1/messages: a /v1 given would be doubled.
  EXPECT_EQ(claude_base_url("https://gw.example/v1/"), "https://gw.example");
  EXPECT_EQ(claude_base_url("http://h:1/llm"), "http://h:1/llm");
  for (const char* bad : {"127.0.0.1:8080", "ftp://h", "http://", "", "http://h:1/?x=1"})
    EXPECT_THROW(claude_base_url(bad), std::invalid_argument) << bad;
}

TEST(ClaudeSettings, EveryModelVariableTheSwitchesAndAPlaceholderToken) {
  ClaudeOptions o = gateway_options();
  o.model = "m-1";
  o.context_window = 262144;
  const json::value v = json::parse(merge_into("", o));
  EXPECT_EQ(env_entry(v, "ANTHROPIC_BASE_URL"), "http://127.0.0.1:8080");
  for (const char* name :
       {"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_FABLE_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
        "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
        "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"})
    EXPECT_EQ(env_entry(v, name), "m-1") << name;
  for (const char* name :
       {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING",
        "DISABLE_AUTOUPDATER", "DISABLE_FEEDBACK_COMMAND", "DISABLE_BUG_COMMAND"})
    EXPECT_EQ(env_entry(v, name), "1") << name;
  EXPECT_EQ(env_entry(v, "CLAUDE_CODE_ATTRIBUTION_HEADER"), "0");
  EXPECT_EQ(env_entry(v, "CLAUDE_CODE_MAX_CONTEXT_TOKENS"), "262144");
  // No key given: a placeholder (Claude Code refuses to start without one), and the shell's
  // Anthropic key blanked so it never reaches the gateway.
  EXPECT_EQ(env_entry(v, "ANTHROPIC_AUTH_TOKEN"), kPlaceholderToken);
  EXPECT_EQ(env_entry(v, "ANTHROPIC_API_KEY"), "");
  EXPECT_FALSE(v.as_object().contains("apiKeyHelper"));
  // The context window only when asked for.
  EXPECT_EQ(env_entry(json::parse(merge_into("")), "CLAUDE_CODE_MAX_CONTEXT_TOKENS"), "<missing>");
}

TEST(ClaudeSettings, TokenOrTokenEnv) {
  ClaudeOptions o = gateway_options();
  o.token = "sk-gw-1";
  EXPECT_EQ(env_entry(json::parse(merge_into("", o)), "ANTHROPIC_AUTH_TOKEN"), "sk-gw-1");
  o.token.clear();
  o.token_env = "LLMUX_API_KEY";
  const json::value v = json::parse(merge_into("", o));
  // The helper's output goes out as Bearer and x-api-key; an empty token keeps a shell's from
  // being sent instead.
  EXPECT_EQ(v.at("apiKeyHelper").as_string(), "printenv LLMUX_API_KEY");
  EXPECT_EQ(env_entry(v, "ANTHROPIC_AUTH_TOKEN"), "");
  o.token = "x";
  EXPECT_THROW(claude_settings(o), std::invalid_argument);  // both
  for (const char* bad : {"1X", "A-B", "A;rm", "ANTHROPIC_AUTH_TOKEN"}) {
    ClaudeOptions b = gateway_options();
    b.token_env = bad;
    EXPECT_THROW(claude_settings(b), std::invalid_argument) << bad;
  }
  ClaudeOptions newline = gateway_options();
  newline.token = "a\nb";
  EXPECT_THROW(claude_settings(newline), std::invalid_argument);
}

TEST(ClaudeMerge, KeepsTheUsersKeysAndOrderAndReplacesOnlyOurs) {
  const std::string user = R"json({
  "model": "opus",
  "permissions": {"allow": ["Bash(git status)"], "deny": []},
  "env": {
    "MY_VAR": "mine",
    "ANTHROPIC_MODEL": "claude-old",
    "DISABLE_TELEMETRY": 1,
    "OTHER": "x"
  },
  "feedbackSurveyRate": 0.05,
  "cleanupPeriodDays": 30,
  "hooks": {}
})json";
  std::vector<std::string> notes;
  const std::string out = merge_claude_settings(user, claude_settings(gateway_options()), notes);
  const json::value v = json::parse(out);
  const json::object& root = v.as_object();
  // The user's keys, in their order; numbers as they were written (not 5E-2).
  EXPECT_EQ(key_order(root),
            (std::vector<std::string>{"model", "permissions", "env", "feedbackSurveyRate",
                                      "cleanupPeriodDays", "hooks"}));
  EXPECT_EQ(root.at("model").as_string(), "opus");
  EXPECT_EQ(root.at("permissions").at("allow").at(0).as_string(), "Bash(git status)");
  EXPECT_EQ(root.at("feedbackSurveyRate").as_double(), 0.05);
  EXPECT_EQ(root.at("cleanupPeriodDays").as_int64(), 30);
  EXPECT_NE(out.find("\"feedbackSurveyRate\": 0.05"), std::string::npos) << out;
  // env: the user's entries kept where they stood, ours replaced in place, the rest appended.
  const std::vector<std::string> env = key_order(root.at("env").as_object());
  ASSERT_GE(env.size(), 5u);
  EXPECT_EQ(env[0], "MY_VAR");
  EXPECT_EQ(env[1], "ANTHROPIC_MODEL");
  EXPECT_EQ(env[2], "DISABLE_TELEMETRY");
  EXPECT_EQ(env[3], "OTHER");
  EXPECT_EQ(env_entry(v, "MY_VAR"), "mine");
  EXPECT_EQ(env_entry(v, "ANTHROPIC_MODEL"), "Qwen3.6-35B-A3B");
  EXPECT_EQ(env_entry(v, "DISABLE_TELEMETRY"), "1");  // a number before: Claude Code wants strings
  EXPECT_EQ(env_entry(v, "ANTHROPIC_BASE_URL"), "http://127.0.0.1:8080");
  EXPECT_EQ(out.find("claude-old"), std::string::npos) << out;
  // Indented as Claude Code writes it.
  EXPECT_EQ(out.rfind("{\n  \"model\": \"opus\",\n", 0), 0u) << out;
  EXPECT_EQ(out.back(), '\n');
  // Merging again changes nothing.
  std::vector<std::string> again;
  EXPECT_EQ(merge_claude_settings(out, claude_settings(gateway_options()), again), out);
  EXPECT_EQ(again, (std::vector<std::string>{"already up to date"}));
}

TEST(ClaudeMerge, RefusesWhatIsNotASettingsObject) {
  // Not JSON (a comment, a trailing comma, two values): the position is named.
  try {
    merge_into("{\n  \"model\": \"opus\",\n}\n");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was changed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(merge_into("// mine\n{}"), std::runtime_error);
  EXPECT_THROW(merge_into("{} {}"), std::runtime_error);
  EXPECT_THROW(merge_into("[1, 2]"), std::runtime_error);
  // env that is not an object of variables.
  for (const char* env : {"[]", "\"x\"", "null", "1"}) {
    try {
      merge_into(std::string("{\"env\": ") + env + "}");
      FAIL() << env;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("\"env\""), std::string::npos) << e.what();
    }
  }
  // Empty and blank files are no settings yet.
  EXPECT_EQ(merge_into(""), merge_into(" \n"));
}

TEST(ClaudeMerge, ApiKeyHelperOfOursGoesAnotherIsKeptWithAWarning) {
  ClaudeOptions helper = gateway_options();
  helper.token_env = "LLMUX_API_KEY";
  const std::string with_helper = merge_into("{\"a\": 1}", helper);
  // Back to a written token: our helper would send its key as x-api-key beside it.
  ClaudeOptions token = gateway_options();
  token.token = "sk-gw-1";
  std::vector<std::string> notes;
  json::value v = json::parse(merge_claude_settings(with_helper, claude_settings(token), notes));
  EXPECT_FALSE(v.as_object().contains("apiKeyHelper"));
  EXPECT_EQ(v.as_object().begin()->key(), "a");  // the order kept
  // The user's own helper stays, with a note saying what it does.
  notes.clear();
  v = json::parse(
      merge_claude_settings("{\"apiKeyHelper\": \"~/bin/key.sh\"}", claude_settings(token), notes));
  EXPECT_EQ(v.at("apiKeyHelper").as_string(), "~/bin/key.sh");
  bool warned = false;
  for (const auto& n : notes) warned = warned || n.find("x-api-key") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(ClaudePrint, JsonToMergeAndShellExports) {
  ClaudeOptions o = gateway_options();
  o.token_env = "LLMUX_API_KEY";
  const std::string out = print_claude_settings(claude_settings(o));
  // The first block is the JSON to merge: it parses, and holds what a merge writes.
  const auto start = out.find("\n{") + 1;
  const auto end = out.find("\n}\n", start) + 2;
  const json::value v = json::parse(out.substr(start, end - start));
  EXPECT_EQ(v, json::parse(merge_into("", o)));
  // The shell form: quoted values, the token read from the named variable.
  EXPECT_NE(out.find("export ANTHROPIC_BASE_URL='http://127.0.0.1:8080'\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("export ANTHROPIC_AUTH_TOKEN=\"$LLMUX_API_KEY\"\n"), std::string::npos) << out;
  EXPECT_NE(out.find("export ANTHROPIC_API_KEY=''\n"), std::string::npos) << out;
  ClaudeOptions quote = gateway_options();
  quote.token = "it's";
  EXPECT_NE(print_claude_settings(claude_settings(quote))
                .find("export ANTHROPIC_AUTH_TOKEN='it'\\''s'\n"),
            std::string::npos);
}

class ClaudeFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("llmux-claude-settings-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::string read(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void write(const std::filesystem::path& p, const std::string& text) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(ClaudeFile, MergesKeepsABackupAndTightensTheModeForAToken) {
  const auto file = dir_ / ".claude" / "settings.json";
  write(file, "{\"model\": \"opus\"}\n");
  ::chmod(file.c_str(), 0644);
  ClaudeOptions o = gateway_options();
  o.token = "sk-gw-1";
  const auto lines = write_claude_settings(file, claude_settings(o));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("settings.json.bak"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find("sk-gw-1"), std::string::npos) << lines[0];  // no secret printed
  EXPECT_EQ(read(dir_ / ".claude" / "settings.json.bak"), "{\"model\": \"opus\"}\n");
  const json::value v = json::parse(read(file));
  EXPECT_EQ(v.at("model").as_string(), "opus");
  EXPECT_EQ(env_entry(v, "ANTHROPIC_AUTH_TOKEN"), "sk-gw-1");
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".llmux-tmp"));
}

TEST_F(ClaudeFile, CreatesTheFileAndItsFolder) {
  const auto file = dir_ / "new" / "settings.json";
  write_claude_settings(file, claude_settings(gateway_options()));
  EXPECT_EQ(env_entry(json::parse(read(file)), "ANTHROPIC_BASE_URL"), "http://127.0.0.1:8080");
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".bak"));
}

TEST_F(ClaudeFile, InvalidFileOrEnvChangesNothing) {
  const auto file = dir_ / "settings.json";
  for (const std::string bad : {"{\"model\": \"opus\",}\n", "{\"env\": [\"A=1\"]}\n"}) {
    write(file, bad);
    std::filesystem::remove(file.string() + ".bak");
    EXPECT_THROW(write_claude_settings(file, claude_settings(gateway_options())),
                 std::runtime_error);
    EXPECT_EQ(read(file), bad);
    EXPECT_FALSE(std::filesystem::exists(file.string() + ".bak"));
    EXPECT_FALSE(std::filesystem::exists(file.string() + ".llmux-tmp"));
  }
}

TEST_F(ClaudeFile, ALinkStaysALink) {
  const auto real = dir_ / "dotfiles" / "claude.json";
  const auto link = dir_ / ".claude" / "settings.json";
  write(real, "{}\n");
  std::filesystem::create_directories(link.parent_path());
  std::filesystem::create_symlink(real, link);
  write_claude_settings(link, claude_settings(gateway_options()));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(env_entry(json::parse(read(real)), "ANTHROPIC_BASE_URL"), "http://127.0.0.1:8080");
}

}  // namespace
}  // namespace llmux::config
