// The gateway's relay taps: the SSE event boundary the relay cuts at, and the ResponseTap that
// reads relayed pieces (usage, ids, sequence numbers) with the shared OpenAI readers. Must never
// crash (UBSan: no overflow), and last_event_boundary must return the end of the LAST complete
// event: a position just past a blank line, with no such position after it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gateway/taps.hpp"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
bool ends_event(const char* d, std::size_t i) {  // d[0, i) ends with "\n\n" or "\n\r\n"
  return i >= 2 && d[i - 1] == '\n' &&
         (d[i - 2] == '\n' || (i >= 3 && d[i - 2] == '\r' && d[i - 3] == '\n'));
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const char* d = reinterpret_cast<const char*>(data);
  const std::size_t cut = llmux::gateway::last_event_boundary(d, size);
  check(cut <= size);
  if (cut > 0) check(ends_event(d, cut));
  for (std::size_t i = cut + 1; i <= size; ++i) check(!ends_event(d, i));

  // The taps read pieces as the relay hands them over: whole events, as an event stream of
  // each dialect and as a JSON body.
  static llmux::openai::JsonScratch scratch;
  for (const char* path : {"/v1/responses", "/v1/chat/completions", "/v1/completions"}) {
    for (const char* type : {"text/event-stream", "application/json"}) {
      llmux::gateway::ResponseTap tap(llmux::gateway::dialect_of(path), type, scratch);
      std::string_view rest(d, size);
      for (int guard = 0; guard < 10000 && !rest.empty(); ++guard) {
        std::size_t n = llmux::gateway::last_event_boundary(rest.data(), rest.size());
        if (n == 0) n = rest.size();
        tap.feed(rest.substr(0, n), n == rest.size());
        rest.remove_prefix(n);
      }
      if (auto p = tap.prompt_tokens()) check(*p >= 0);
      if (auto c = tap.completion_tokens()) check(*c >= 0);
      check(tap.next_sequence_number() >= 0);
    }
  }
  return 0;
}
