// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the simulator says when told: `llmux sim --script FILE` (a list of turns, JSON or YAML)
// and `--tool-call-share X` (a share of requests with function tools answered by a call whose
// arguments fit the tool's JSON schema). Pure apart from reading the file.
#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/api.hpp"

namespace llmux::sim {

struct ScriptTurn {
  std::optional<std::string> match;  // substring of the last user message or tool output
  std::string reasoning;
  std::string text;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments (JSON text)
};

struct Script {
  std::vector<ScriptTurn> turns;
};

/// Parses a script: a list of turns (or `{turns: [...]}`), each with optional `match`,
/// `reasoning`, `text` and `tool_calls: [{name, arguments}]` (arguments an object, written as
/// vLLM's parsers write them, or a string kept as is). Throws std::invalid_argument naming the
/// turn and field.
Script parse_script(std::string_view text);
/// Reads and parses a script file (JSON is YAML, so one parser reads both).
Script load_script(const std::string& path);

/// Picks the turn for a request: the first turn whose `match` the last input contains, else the
/// next turn without `match` in file order (after the last, the first again); null when none.
class ScriptPlayer {
 public:
  explicit ScriptPlayer(std::shared_ptr<const Script> script) : script_(std::move(script)) {}
  const ScriptTurn* pick(std::string_view last_input);

 private:
  std::shared_ptr<const Script> script_;
  std::size_t next_ = 0;
};

/// A value valid for a JSON schema: required properties filled with a value of their type
/// (strings "value", numbers the minimum or 1, booleans true, arrays minItems items), `enum`
/// its first value, `const` itself, `anyOf`/`oneOf` the first alternative.
boost::json::value schema_example(const boost::json::value& schema, int depth = 0);

/// The statistical mode: with probability `share` (drawn from `draw`, uniform in [0, 1)), a call
/// to one of the request's function tools (chosen by `pick`) with schema-valid arguments;
/// nothing when the request has no function tool or `tool_choice` is "none".
std::optional<std::pair<std::string, std::string>> statistical_call(const GenRequest& req,
                                                                    double share, double draw,
                                                                    std::uint64_t pick);

}  // namespace llmux::sim
