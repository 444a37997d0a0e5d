// SPDX-License-Identifier: Apache-2.0
#include "config/claude_settings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <boost/json.hpp>

#include "config/codex_profiles.hpp"

namespace llmux::config {

namespace {

namespace json = boost::json;

constexpr const char* kAuthToken = "ANTHROPIC_AUTH_TOKEN";
constexpr std::string_view kHelperCommand = "printenv ";

bool variable_name(std::string_view name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), [](char character) {
           return std::isalnum(static_cast<unsigned char>(character)) || character == '_';
         });
}

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char character) {
    const auto code = static_cast<unsigned char>(character);
    return code < 0x20 || code == 0x7f;
  });
}

bool blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char character) {
    return character == ' ' || character == '\t' || character == '\r' || character == '\n';
  });
}

/// A number as JSON text that parses back to the same kind and value: Boost.JSON would write
/// 0.05 as 5E-2; the shortest round-trip form reads better, and keeps a `.0` so that a double
/// stays a double.
std::string number_text(const json::value& value) {
  if (!value.is_double()) return json::serialize(value);
  std::string out = fmt::format("{}", value.get_double());
  if (out.find_first_of(".eEn") == std::string::npos) out += ".0";
  return out;
}

/// `value` indented by two spaces per level, as Claude Code (JSON.stringify(value, null, 2))
/// writes settings.json.
void write_indented(std::string& out, const json::value& value, int depth) {
  const std::string pad(static_cast<std::size_t>(depth + 1) * 2, ' ');
  const std::string close(static_cast<std::size_t>(depth) * 2, ' ');
  if (const auto* object = value.if_object()) {
    if (object->empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    std::size_t index = 0;
    for (const auto& member : *object) {
      out += pad + json::serialize(member.key()) + ": ";
      write_indented(out, member.value(), depth + 1);
      out += ++index < object->size() ? ",\n" : "\n";
    }
    out += close + "}";
  } else if (const auto* array = value.if_array()) {
    if (array->empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < array->size(); ++i) {
      out += pad;
      write_indented(out, (*array)[i], depth + 1);
      out += i + 1 < array->size() ? ",\n" : "\n";
    }
    out += close + "]";
  } else if (value.is_number()) {
    out += number_text(value);
  } else {
    out += json::serialize(value);
  }
}

std::string indented(const json::value& value) {
  std::string out;
  write_indented(out, value, 0);
  return out + "\n";
}

const char* kind_name(const json::value& value) {
  switch (value.kind()) {
    case json::kind::object:
      return "an object";
    case json::kind::array:
      return "an array";
    case json::kind::string:
      return "a string";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::null:
      return "null";
    default:
      return "a number";
  }
}

/// `text` parsed as strict JSON (no comments, no trailing commas, one value). Throws
/// std::runtime_error naming the line and column of the first error.
json::value parse_strict(const std::string& text, std::string_view what) {
  json::stream_parser parser;
  boost::system::error_code error;
  const std::size_t used = parser.write(text.data(), text.size(), error);
  if (!error) parser.finish(error);
  if (error) {
    std::size_t line = 1;
    std::size_t column = 1;
    for (std::size_t i = 0; i < std::min(used, text.size()); ++i) {
      column = text[i] == '\n' ? 1 : column + 1;
      if (text[i] == '\n') ++line;
    }
    throw std::runtime_error(
        fmt::format("{} is not valid JSON ({} at line {}, column {}); nothing was changed", what,
                    error.message(), line, column));
  }
  return parser.release();
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error(fmt::format("cannot read {}", path.string()));
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

/// Writes `text` to `path` (created or truncated), flushed to the disk. Its mode: `mode` less the
/// umask, or exactly `mode` when `exact`.
void write_synced(const std::filesystem::path& path, const std::string& text, ::mode_t mode,
                  bool exact) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}", path.string()));
  std::size_t done = 0;
  bool ok = !exact || ::fchmod(fd, mode) == 0;
  while (ok && done < text.size()) {
    const ::ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    ok = wrote > 0;
    if (ok) done += static_cast<std::size_t>(wrote);
  }
  ok = ok && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  }
}

/// Whether `settings` puts a real key into the file (not the placeholder, not empty).
bool holds_token(const ClaudeSettings& settings) {
  return std::any_of(settings.env.begin(), settings.env.end(), [](const auto& entry) {
    return entry.first == kAuthToken && !entry.second.empty() && entry.second != kPlaceholderToken;
  });
}

/// Shell single quotes around `text`.
std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (const char character : text) {
    if (character == '\'') {
      out += "'\\''";
    } else {
      out += character;
    }
  }
  return out + "'";
}

}  // namespace

std::string claude_base_url(const std::string& url) {
  std::string out = codex_base_url(url);  // checked, trailing slashes gone, ends in /v1
  out.resize(out.size() - 3);             // Claude Code appends /v1/messages itself
  return out;
}

ClaudeSettings claude_settings(const ClaudeOptions& options) {
  if (options.model.empty() || has_control_character(options.model))
    throw std::invalid_argument("the model must be a name without control characters");
  if (!options.token.empty() && !options.token_env.empty())
    throw std::invalid_argument("give --token or --token-env, not both");
  if (has_control_character(options.token))
    throw std::invalid_argument("--token: a key without control characters (it goes in a header)");
  if (!options.token_env.empty() && !variable_name(options.token_env))
    throw std::invalid_argument(
        fmt::format("--token-env '{}': name an environment variable (letters, digits and '_')",
                    options.token_env));
  if (options.token_env.starts_with("ANTHROPIC_"))
    throw std::invalid_argument(fmt::format(
        "--token-env {}: the settings set the ANTHROPIC_ credentials themselves; keep the key in "
        "a variable of your own, e.g. LLMUX_API_KEY",
        options.token_env));
  if (options.context_window && *options.context_window <= 0)
    throw std::invalid_argument("--context-window must be a positive number of tokens");
  ClaudeSettings settings;
  auto& env = settings.env;
  env.emplace_back("ANTHROPIC_BASE_URL", claude_base_url(options.gateway));
  // With the helper, an empty token: a token from the shell would otherwise be sent instead.
  env.emplace_back(kAuthToken, !options.token_env.empty() ? std::string()
                               : options.token.empty()    ? std::string(kPlaceholderToken)
                                                          : options.token);
  env.emplace_back("ANTHROPIC_API_KEY", "");
  for (const char* name :
       {"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_FABLE_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
        "ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL",
        "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"})
    env.emplace_back(name, options.model);
  if (options.context_window)
    env.emplace_back("CLAUDE_CODE_MAX_CONTEXT_TOKENS", std::to_string(*options.context_window));
  for (const char* name :
       {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING",
        "DISABLE_AUTOUPDATER", "DISABLE_FEEDBACK_COMMAND", "DISABLE_BUG_COMMAND"})
    env.emplace_back(name, "1");
  // The attribution block differs per conversation at the start of the system prompt, which
  // keeps a prefix cache from sharing the rest between conversations (recent vLLM drops it).
  env.emplace_back("CLAUDE_CODE_ATTRIBUTION_HEADER", "0");
  if (!options.token_env.empty()) {
    settings.api_key_helper = std::string(kHelperCommand) + options.token_env;
    settings.token_env = options.token_env;
  }
  return settings;
}

std::string merge_claude_settings(const std::string& existing, const ClaudeSettings& settings,
                                  std::vector<std::string>& notes) {
  json::object root;
  if (!blank(existing)) {
    json::value parsed = parse_strict(existing, "the existing settings.json");
    if (!parsed.is_object())
      throw std::runtime_error(
          fmt::format("the existing settings.json holds {}, not an object; nothing was changed",
                      kind_name(parsed)));
    root = std::move(parsed.as_object());
  }
  json::value* env_value = root.if_contains("env");
  if (env_value && !env_value->is_object())
    throw std::runtime_error(
        fmt::format("the existing settings.json's \"env\" is {}, not an object of variables; "
                    "nothing was changed",
                    kind_name(*env_value)));
  if (!env_value) env_value = &root.emplace("env", json::object()).first->value();
  json::object& env = env_value->as_object();
  std::vector<std::string> replaced;
  std::size_t added = 0;
  for (const auto& [name, text] : settings.env) {
    if (json::value* current = env.if_contains(name)) {
      if (current->is_string() && current->as_string() == text) continue;
      *current = text;
      replaced.push_back(name);
    } else {
      env.emplace(name, text);
      ++added;
    }
  }
  if (added) notes.push_back(fmt::format("env: {} added", added));
  if (!replaced.empty())
    notes.push_back(fmt::format("env: replaced {}", fmt::join(replaced, ", ")));
  const json::value* helper = root.if_contains("apiKeyHelper");
  const std::string current_helper =
      helper && helper->is_string() ? std::string(helper->as_string()) : std::string();
  if (!settings.api_key_helper.empty()) {
    if (current_helper != settings.api_key_helper) {
      root["apiKeyHelper"] = settings.api_key_helper;
      notes.push_back(fmt::format("apiKeyHelper: {}", settings.api_key_helper));
    }
  } else if (current_helper.starts_with(kHelperCommand) &&
             variable_name(std::string_view(current_helper).substr(kHelperCommand.size()))) {
    root.stable_erase("apiKeyHelper");  // ours, from an earlier --token-env
    notes.push_back(fmt::format("removed apiKeyHelper \"{}\"", current_helper));
  } else if (helper) {
    notes.push_back(
        "kept apiKeyHelper: Claude Code sends what it prints to the gateway too, as x-api-key; "
        "remove it unless it prints your gateway key");
  }
  if (notes.empty()) notes.push_back("already up to date");
  std::string merged = indented(root);
  // What Claude Code will read must be exactly the merged object.
  if (parse_strict(merged, "the merged settings.json") != json::value(root))
    throw std::runtime_error("settings.json did not merge cleanly; nothing was changed");
  return merged;
}

std::vector<std::string> write_claude_settings(const std::filesystem::path& file,
                                               const ClaudeSettings& settings) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A settings.json kept elsewhere (a dotfiles repository) stays a link: write where it points.
  const fs::path target = fs::is_symlink(file) ? fs::weakly_canonical(file) : file;
  const bool had = fs::exists(target);
  if (had && !fs::is_regular_file(target))
    throw std::runtime_error(fmt::format("{} is not a regular file", target.string()));
  const std::string before = had ? read_file(target) : std::string();
  std::vector<std::string> notes;
  const std::string text = merge_claude_settings(before, settings, notes);
  if (had && text == before) return {fmt::format("{}: already up to date", file.string())};
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      throw std::runtime_error(
          fmt::format("cannot create {}: {}", target.parent_path().string(), ec.message()));
  }
  // The mode the file had (a new one: 0644 less the umask); owner only once it holds a key.
  auto mode = static_cast<::mode_t>(
      had ? static_cast<unsigned>(fs::status(target).permissions()) & 07777 : 0644);
  const bool token = holds_token(settings);
  if (token && (mode & 077)) {
    mode &= ~static_cast<::mode_t>(077);
    if (had) notes.push_back("now readable by its owner only (it holds the token)");
  }
  const fs::path backup = target.string() + ".bak";
  if (had) {
    fs::copy_file(target, backup, fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw std::runtime_error(
          fmt::format("cannot keep a copy of {}: {}", target.string(), ec.message()));
  }
  const fs::path temporary = target.string() + ".llmux-tmp";
  write_synced(temporary, text, mode, had || token);
  fs::rename(temporary, target, ec);
  if (ec) {
    fs::remove(temporary);
    throw std::runtime_error(fmt::format("cannot replace {}: {}", target.string(), ec.message()));
  }
  // Read back what Claude Code will read.
  if (read_file(target) != text) {
    if (had) fs::copy_file(backup, target, fs::copy_options::overwrite_existing, ec);
    throw std::runtime_error(
        fmt::format("{} does not read back as written; {}", target.string(),
                    had ? "the previous file was put back" : "remove it and try again"));
  }
  return {fmt::format("{}: {}{}", file.string(), fmt::join(notes, "; "),
                      had ? fmt::format(" (the previous file is {})", backup.string()) : "")};
}

std::string print_claude_settings(const ClaudeSettings& settings) {
  json::object env;
  for (const auto& [name, text] : settings.env) env[name] = text;
  json::object root;
  root["env"] = std::move(env);
  if (!settings.api_key_helper.empty()) root["apiKeyHelper"] = settings.api_key_helper;
  std::string out =
      "# ===== Claude Code's settings.json ($CLAUDE_CONFIG_DIR/settings.json, default "
      "~/.claude/settings.json): merge these in =====\n";
  out += indented(root);
  out += "# ===== or, for one shell session =====\n";
  for (const auto& [name, text] : settings.env) {
    if (name == kAuthToken && !settings.token_env.empty()) {
      out += fmt::format("export {}=\"${}\"\n", name, settings.token_env);
    } else {
      out += fmt::format("export {}={}\n", name, shell_quoted(text));
    }
  }
  out +=
      "# Or let llmux merge them: llmux client-config claude ... --settings "
      "~/.claude/settings.json\n";
  return out;
}

}  // namespace llmux::config
