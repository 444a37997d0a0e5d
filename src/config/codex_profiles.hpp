// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux client-config codex`: the Codex CLI configuration for the seed's two profiles, `dgx`
// (through the gateway) and `dgx-direct` (straight to one vLLM server), in the layout current
// Codex reads (tried with 0.171): the `[model_providers.*]` tables in $CODEX_HOME/config.toml,
// and one `$CODEX_HOME/NAME.config.toml` per profile (`codex --profile NAME` layers that file on
// the user's config.toml; since Codex 0.134 a `[profiles.NAME]` table in config.toml is an
// error). Model metadata that Codex ignores in profile files (the context window) goes into
// config.toml's top level, only when asked for (it applies to every model there).
//
// Merging keeps the user's files as they are, byte for byte, except for what is ours: a table
// of ours that exists is replaced where it stands, a missing one is appended; a top-level key
// of ours replaces its line or goes before the first table; the `[profiles.NAME]` tables that
// earlier llmux versions printed are removed (Codex refuses them). The result is parsed again
// (toml++) and must hold exactly our values, or nothing is written.
//
// Pure functions (no I/O) except write_codex_home(). Thread safety: none needed.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmux::config {

struct CodexOptions {
  std::string gateway;  // base URL of the gateway (http(s)://host:port[/v1])
  std::string direct;   // base URL of one vLLM server
  std::string model = "Qwen3.6-35B-A3B";
  std::string name = "dgx";  // profiles NAME and NAME-direct, providers of the same names
  std::string env_key;       // environment variable with the provider's API key (optional)
  std::vector<std::pair<std::string, std::string>> headers;  // extra HTTP headers
  std::optional<long long> context_window;                   // model_context_window
};

/// The provider's base URL: `url` checked (an http or https scheme and a host are required) and
/// ending in /v1. Throws std::invalid_argument naming what is wrong.
std::string codex_base_url(const std::string& url);

/// What goes into config.toml: the two provider tables (and the top-level keys, first).
struct CodexFiles {
  std::vector<std::pair<std::string, std::string>> top_keys;  // key, TOML value
  std::vector<std::pair<std::string, std::string>> tables;    // header ("model_providers.x"), body
  std::vector<std::pair<std::string, std::string>> profiles;  // file name, its whole text
  std::vector<std::string> profile_names;
};
/// Builds every file's content from `options` (URLs checked: throws std::invalid_argument).
CodexFiles codex_files(const CodexOptions& options);

/// `existing` (a config.toml's text, empty when there is none) with `files`'s tables and top-level
/// keys merged in and old `[profiles.NAME]` tables of `files`'s profile names removed. Throws
/// std::runtime_error when `existing` is not valid TOML or the merge does not parse back to
/// exactly `files`'s values. `notes` gets one line per change made.
std::string merge_codex_config(const std::string& existing, const CodexFiles& files,
                               std::vector<std::string>& notes);
/// A profile file's text merged into `existing` (its top-level keys of ours replaced, the
/// user's other keys kept).
std::string merge_codex_profile(const std::string& existing, const std::string& ours);

/// Writes config.toml (merged; the previous one kept as config.toml.bak) and the profile files
/// into `home` (created if missing). Returns one line per file written. Throws on any error
/// before anything is replaced.
std::vector<std::string> write_codex_home(const std::filesystem::path& home,
                                          const CodexFiles& files);

/// Everything as text for a terminal: each file with a header naming where it goes.
std::string print_codex_files(const CodexFiles& files);

}  // namespace llmux::config
