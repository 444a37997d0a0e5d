// SPDX-License-Identifier: Apache-2.0
// Differential fuzzing of llmux::http::MessageParser (src/http/message_parser.hpp) against
// Beast's basic_parser (tests/fuzz/message_parser_diff.hpp). The first 4 bytes choose request or
// response, a response to HEAD, the header and body limits, and where llmux's parser gets the
// input cut into pieces; the rest is the message. Beast's verdict on the whole input and llmux's
// must agree (deliberate differences aside), and llmux's must not change with the cuts: else both
// outcomes are printed and the target aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "message_parser_diff.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace llmux::message_parser_diff;
  std::uint8_t option[4] = {};
  for (int i = 0; i < 4 && size > 0; ++i, ++data, --size) option[i] = *data;
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  ParseSetup setup;
  setup.kind = option[0] & 1 ? MessageKind::response : MessageKind::request;
  setup.no_body = setup.kind == MessageKind::response && (option[0] & 2);
  static constexpr std::uint32_t header_limits[] = {8192, 0, 1, 16, 24, 32, 64, 200};
  setup.limits.header_bytes = header_limits[(option[0] >> 2) & 7];
  if (option[1] != 0) setup.limits.body_bytes = option[1] == 255 ? 1u << 20 : option[1] - 1u;

  // Pieces of 1 to option[2] bytes (0: the whole input), placed by a generator seeded by option[3].
  Cuts cuts;
  if (option[2] != 0) {
    std::uint32_t state = 0x9e3779b9u ^ (option[3] * 2654435761u);
    for (std::size_t at = 0; at < input.size();) {
      state ^= state << 13;
      state ^= state >> 17;
      state ^= state << 5;
      const std::size_t n = 1 + state % option[2];
      cuts.push_back(n);
      at += n;
    }
  }

  const Outcome beast = run_beast(setup, input);
  const Outcome whole = run_llmux(setup, input, {});
  std::string problem = compare(setup, input, beast, whole);
  if (problem.empty()) problem = compare_cuts(whole, run_llmux(setup, input, cuts));
  if (!problem.empty()) {
    std::fprintf(stderr, "message_parser_fuzz: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
