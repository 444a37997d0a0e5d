// SPDX-License-Identifier: Apache-2.0
// yaml-cpp 0.7's endless-loop guard (detail.hpp).
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <sstream>

#include "config/detail.hpp"

namespace llmux::config::detail {
namespace {

/// Ignores every parse event: only the number of documents matters.
struct NullHandler : YAML::EventHandler {
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

/// True when yaml-cpp 0.7 would loop forever in LoadAll() on `text`, allocating until memory
/// runs out (yaml-cpp#1040, fixed after 0.8.0): on a stray ',' where a node should start, the
/// parser keeps reporting documents without consuming input. A real document takes at least one
/// byte, so more documents than bytes means that loop. Throws YAML::Exception on a syntax error.
bool parser_would_loop(const std::string& text) {
  std::istringstream input(text);
  YAML::Parser parser(input);
  NullHandler handler;
  for (std::size_t docs = 0; parser.HandleNextDocument(handler);)
    if (++docs > text.size() + 1) return true;
  return false;
}

}  // namespace llmux::config::detail
