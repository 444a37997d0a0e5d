// SPDX-License-Identifier: Apache-2.0
// Differential fuzzing of llmux::http::Parser (src/http/parser.hpp) against Beast's
// basic_parser: the first 5 bytes choose request or response, eager, skip, header_limit,
// body_limit, how the rest is cut into pieces, partial body takes (need_buffer) and a failing
// callback (parser_diff.hpp); the rest is the message. The same bytes fed the same way to a
// recording subclass of each must give the same log (callbacks and their arguments, bytes
// consumed and the error of every call, the getters after each): else both logs are printed and
// the target aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "parser_diff.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace llmux::parser_diff;
  const Options o = Options::decode(data, size);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Both logs = run_both(o, input);
  if (logs.beast != logs.llmux) {
    std::fprintf(stderr,
                 "parser_fuzz: llmux's parser differs from Beast's\n--- beast\n%s--- llmux\n%s",
                 logs.beast.c_str(), logs.llmux.c_str());
    std::abort();
  }
  return 0;
}
