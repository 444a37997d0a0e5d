// SPDX-License-Identifier: Apache-2.0
#pragma once
// `llmux demo`'s report: what a run of the demo (cli/demo_cmd.cpp) measured, set beside the
// seed's published figures.
#include <filesystem>
#include <ostream>
#include <string>

namespace llmux::cli {

/// What one run of the demo left for its report.
struct DemoRun {
  std::filesystem::path dir;  // the benchmarks' results: throughput/ and compare/
  bool kept = false;          // `dir` stays after the demo (--out): the HTML report goes there
  double time_scale = 1.0;    // the simulators' clock speed-up (figures are divided by it)
  std::string preset;         // the simulators' preset (its reference figures)
  int server1_port = 0;
  int server2_port = 0;
  int gateway_port = 0;
  std::string throughput_markdown;   // benchmark 1's own report
  std::string compare_markdown;      // benchmark 2's own report
  std::string agent_markdown;        // the agent turn through the gateway
  std::string claude_code_markdown;  // the same turn as Claude Code takes it
};

/// Writes the report as Markdown to `out`, and as index.html into `run.dir` when it is kept.
/// False when the benchmarks' results cannot be read (the error is logged).
bool write_demo_report(const DemoRun& run, std::ostream& out);

}  // namespace llmux::cli
