// SPDX-License-Identifier: Apache-2.0
// The gateway's relay taps: the SSE event boundary the relay cuts at, and the ResponseTap that
// reads relayed pieces (usage, ids, sequence numbers) with the shared OpenAI readers. Must never
// crash (UBSan: no overflow), and last_event_boundary must return the end of the LAST complete
// event: a position just past a blank line, with no such position after it. The plain reader of
// a body's usage object (read_usage_flat) must agree with parse_usage wherever it reads one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <simdjson.h>

#include "gateway/taps.hpp"
#include "openai/json_read.hpp"

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

  // The usage object as the tap finds it in a body: where the plain reader takes it, simdjson
  // must read it as valid JSON and give the same counts.
  namespace jr = llmux::openai::json_read;
  if (const std::string_view obj = jr::last_usage_object(std::string_view(d, size)); !obj.empty()) {
    llmux::openai::StreamUsage fast;
    if (jr::read_usage_flat(obj, fast)) {
      static simdjson::ondemand::parser parser;
      const simdjson::padded_string padded(obj);
      llmux::openai::StreamUsage slow;
      try {
        simdjson::ondemand::document doc = parser.iterate(padded);
        simdjson::ondemand::value v = doc.get_value();
        jr::parse_usage(v, slow);
      } catch (const simdjson::simdjson_error&) {
        check(false);
      }
      check(fast.prompt_tokens == slow.prompt_tokens);
      check(fast.completion_tokens == slow.completion_tokens);
      check(fast.cached_tokens == slow.cached_tokens);
    }
  }

  // The taps read pieces as the relay hands them over: whole events, as an event stream of
  // each dialect and as a JSON body.
  static llmux::openai::JsonScratch scratch;
  for (const char* path :
       {"/v1/responses", "/v1/chat/completions", "/v1/completions", "/v1/messages"}) {
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
