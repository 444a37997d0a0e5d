#pragma once
// The few JSON fields routing needs, read from a request body without copying or
// re-serialising it (simdjson on-demand; the body must have SIMDJSON_PADDING spare capacity).
#include <cstdint>
#include <string>
#include <string_view>

namespace llmux::gateway {

struct BodyFields {
  std::string model;
  std::string previous_response_id;
  std::string user;
  bool stream = false;
  std::int64_t max_tokens = -1;  // max_tokens, max_completion_tokens or max_output_tokens; -1: none
  bool parsed = false;           // false: not JSON (the backend will say so)
};

/// Reads top-level `model`, `stream`, `previous_response_id`, `user` and the output cap. `body`
/// must stay valid; it is padded in place if its capacity is short (the only copy, and a rare one).
BodyFields read_body_fields(std::string& body);

}  // namespace llmux::gateway
