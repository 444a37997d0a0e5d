// SPDX-License-Identifier: Apache-2.0
// What the gateway reads from a request body and from a backend's metrics: the routing fields
// (read_body_fields), the prompt text prefix_aware hashes (read_prompt_text, then its block
// hashes), and a Prometheus text load report. Must never crash; the prompt text is made of the
// body's own strings and a few separators, so it stays within a bound of the body's size; block
// hashes are one per full block. The body the gateway sends when it asks a stream for usage
// (stream_usage.hpp) is a JSON object with stream_options.include_usage true whenever it asks;
// the usage-only event it removes from a relayed piece is a whole event inside the piece.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "gateway/request_view.hpp"
#include "gateway/stream_usage.hpp"
#include "policy/prefix_table.hpp"
#include "upstream/load_report.hpp"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::string body = input;
  const auto fields = llmux::gateway::read_body_fields(body);
  check(body == input);  // padded in place, never changed
  check(fields.model.size() <= size && fields.previous_response_id.size() <= size);
  std::string text;
  llmux::gateway::read_prompt_text(body, text);
  // Each part is a string of the body (unescaping only shortens) plus at most "role: " style
  // separators of the body's own keys and a newline; "instructions: " is the one label added.
  check(text.size() <= 3 * size + 16);
  std::string unpadded;
  llmux::gateway::read_prompt_text(std::string(input), unpadded);
  check(unpadded == text);
  // The Messages API's order (its system messages first) reads the same parts, reordered.
  std::string reordered;
  llmux::gateway::read_prompt_text(body, reordered, llmux::gateway::PromptOrder::messages_api);
  check(reordered.size() == text.size());
  std::vector<std::uint64_t> hashes;
  llmux::policy::prefix_hashes(text, 64, 1 << 20, hashes);
  check(hashes.size() == text.size() / 64);
  const auto usage = llmux::gateway::ask_for_usage("POST", "/v1/chat/completions", input, fields);
  if (usage.asked) {
    const std::string sent = std::string(usage.first(input)) + std::string(usage.second(input));
    boost::system::error_code ec;
    const auto v = boost::json::parse(sent, ec);
    // The body was JSON to simdjson; Boost.JSON must read what the gateway sends (a body it
    // cannot read the gateway does not rewrite, so only the prefix form can get here unread).
    if (!ec) {
      check(v.is_object());
      const auto* so = v.as_object().if_contains("stream_options");
      check(so && so->is_object() && so->as_object().contains("include_usage"));
    }
  }
  const auto r = llmux::gateway::find_usage_only_event(input.data(), input.size());
  check(r.begin <= r.end && r.end <= input.size());
  if (!r.empty()) check(r.end - r.begin >= 2 && input[r.end - 1] == '\n');
  if (auto r = llmux::upstream::parse_load_report(input)) {
    check(r->running == r->running && r->waiting == r->waiting && r->kv_usage == r->kv_usage);
  }
  return 0;
}
