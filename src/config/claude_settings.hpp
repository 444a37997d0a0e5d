// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux client-config claude`: what points Claude Code (tried with 2.1.332) at the gateway, as
// entries of settings.json's `env` object, which Claude Code applies to its own environment at
// start (ahead of the shell's): ANTHROPIC_BASE_URL (no /v1: Claude Code appends /v1/messages),
// the credential, every model variable set to the served model, and the switches that keep it
// from sending anything anywhere else (telemetry, error reports, update checks, feedback).
//
// The credential: `--token KEY` is written as ANTHROPIC_AUTH_TOKEN (sent as `Authorization:
// Bearer KEY`); `--token-env VAR` writes none but the top-level `apiKeyHelper: "printenv VAR"`,
// whose output Claude Code sends as both `Authorization: Bearer` and `x-api-key`; with neither,
// a placeholder token for a gateway without keys (Claude Code refuses to start without a
// credential, and an explicit token keeps it from sending a claude.ai login to the gateway).
// ANTHROPIC_API_KEY is always written empty, so an Anthropic key in the user's shell is never
// sent to the gateway as x-api-key.
//
// Merging keeps the user's settings.json as it is except for what is ours: the user's other keys
// and env entries stay, in their order (Boost.JSON keeps insertion order); an entry of ours that
// exists is replaced where it stands, a missing one is appended. The file is written whole,
// indented as Claude Code writes it, after a parse back that must hold exactly the merged object.
//
// Pure functions (no I/O) except write_claude_settings(). Thread safety: none needed.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmux::config {

struct ClaudeOptions {
  std::string gateway;  // the gateway's base URL (http(s)://host:port[/prefix]; a /v1 is dropped)
  std::string model = "Qwen3.6-35B-A3B";
  std::string token;                        // --token: written as ANTHROPIC_AUTH_TOKEN
  std::string token_env;                    // --token-env: the variable apiKeyHelper prints
  std::optional<long long> context_window;  // CLAUDE_CODE_MAX_CONTEXT_TOKENS
};

/// The token written when neither --token nor --token-env is given: any value passes a gateway
/// without keys, and one with keys answers 401 naming the missing key.
inline constexpr const char* kPlaceholderToken = "llmux-no-key";

/// What goes into settings.json.
struct ClaudeSettings {
  std::vector<std::pair<std::string, std::string>> env;  // name, value; in this order
  std::string api_key_helper;  // top-level apiKeyHelper; empty: none of ours
  std::string token_env;       // the variable api_key_helper prints (for the shell form)
};

/// ANTHROPIC_BASE_URL for `url`: checked as codex_base_url() checks it (an http or https scheme,
/// a host, no query), trailing slashes and one trailing /v1 removed. Throws
/// std::invalid_argument naming what is wrong.
std::string claude_base_url(const std::string& url);

/// Everything settings.json gets for `options` (checked: throws std::invalid_argument).
ClaudeSettings claude_settings(const ClaudeOptions& options);

/// `existing` (a settings.json's text; empty or blank: none) with `settings` merged in, as the
/// text to write. Throws std::runtime_error when `existing` is not a JSON object, its `env` is
/// not an object, or the result does not parse back to exactly the merged object. `notes` gets
/// one line per change made.
std::string merge_claude_settings(const std::string& existing, const ClaudeSettings& settings,
                                  std::vector<std::string>& notes);

/// Merges `settings` into `file` (created with its folder if missing; a symbolic link is
/// followed): the previous file kept as FILE.bak, the new one written beside it and renamed over
/// it, then read back and checked. A file holding a token is made readable by its owner only.
/// Returns one line per change. Throws before anything is replaced when the merge fails.
std::vector<std::string> write_claude_settings(const std::filesystem::path& file,
                                               const ClaudeSettings& settings);

/// For a terminal: the JSON to merge into settings.json, then the same as shell exports.
std::string print_claude_settings(const ClaudeSettings& settings);

}  // namespace llmux::config
