// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux demo`'s agent turn: what the Codex CLI does, played by the demo itself through the
// gateway — a Responses request offering a tool, the simulator's scripted function_call, the
// tool run by the demo (it lists the demo's directory: nothing is executed), and the whole
// history sent back with the call and its output (`store: false`, as Codex sends it), answered
// by the script's final text; and the same turn as Claude Code takes it (Anthropic's Messages
// API).
#include <filesystem>
#include <string>

namespace llmux::cli {

/// The script the demo's simulators play (`llmux sim --script`): only the agent turn's own
/// requests match it; every benchmark request gets generated text as without a script.
std::string demo_agent_script();

/// Runs the agent turn against the gateway on 127.0.0.1:`gateway_port`, listing `dir` as the
/// tool's result. Returns the turn as Markdown; throws std::runtime_error naming the step that
/// failed.
std::string demo_agent_turn(int gateway_port, const std::filesystem::path& dir);

/// The same turn as Claude Code takes it, on Anthropic's Messages API (docs/claude-code.md):
/// `tool_use` in the answer, the history sent back with a `tool_result` block.
std::string demo_claude_code_turn(int gateway_port, const std::filesystem::path& dir);

}  // namespace llmux::cli
