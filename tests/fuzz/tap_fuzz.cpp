// The gateway's relay taps: the SSE event boundary the relay cuts at, and the usage and
// sequence-number taps that read relayed pieces. Must never crash (UBSan: no overflow), and
// last_event_boundary must return the end of the LAST complete event: a position just past a
// blank line, with no such position after it.
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

  // The taps read pieces as the relay hands them over: whole events.
  llmux::gateway::UsageTap usage;
  llmux::gateway::SequenceTap seq;
  std::string_view rest(d, size);
  for (int guard = 0; guard < 10000 && !rest.empty(); ++guard) {
    std::size_t n = llmux::gateway::last_event_boundary(rest.data(), rest.size());
    if (n == 0) n = rest.size();
    usage.feed(rest.substr(0, n));
    seq.feed(rest.substr(0, n));
    rest.remove_prefix(n);
  }
  if (usage.prompt) check(*usage.prompt >= 0);
  if (usage.completion) check(*usage.completion >= 0);
  if (seq.last) check(*seq.last >= 0 && seq.next() == *seq.last + 1);
  return 0;
}
