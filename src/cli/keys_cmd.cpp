// SPDX-License-Identifier: Apache-2.0
// `llmux keys hash`: the SHA-256 digest of API keys, for `auth.keys[].sha256` (docs/config.md).
// Keys are read from stdin, one a line, so none lands in a shell history or a process list.
#include <fmt/format.h>

#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "config/config.hpp"

namespace llmux::cli {

Runner add_keys(CLI::App& app) {
  auto* sub = app.add_subcommand("keys", "Client API keys (auth.keys in the gateway config)");
  sub->require_subcommand(1);
  sub->add_subcommand("hash",
                      "Print the sha256 of each key read from stdin (one a line), for "
                      "auth.keys[].sha256: printf %s KEY | llmux keys hash");
  return [] {
    std::string line;
    int hashed = 0;
    while (std::getline(std::cin, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      fmt::print("{}\n", config::hash_key(line));
      ++hashed;
    }
    if (hashed == 0) {
      fmt::print(stderr, "llmux keys hash: no key on stdin (printf %s KEY | llmux keys hash)\n");
      return 2;
    }
    return 0;
  };
}

}  // namespace llmux::cli
