// SPDX-License-Identifier: Apache-2.0
#include "upstream/outcome.hpp"

#include <fmt/format.h>

namespace llmux::upstream {

std::string_view to_string(Outcome::Kind kind) {
  switch (kind) {
    case Outcome::Kind::ok:
      return "ok";
    case Outcome::Kind::connect_failed:
      return "connect_failed";
    case Outcome::Kind::reset_before_send:
      return "reset_before_send";
    case Outcome::Kind::timeout:
      return "timeout";
    case Outcome::Kind::broken:
      return "broken";
    case Outcome::Kind::bad_response:
      return "bad_response";
    case Outcome::Kind::broken_mid_stream:
      return "broken_mid_stream";
    case Outcome::Kind::client_left:
      return "client_left";
  }
  return "unknown";
}

RetryDecision decide_retry(const Outcome& outcome, int attempts_made, int max_attempts,
                           bool may_run_twice) {
  if (outcome.kind == Outcome::Kind::client_left) return RetryDecision::give_up_silently;
  if (attempts_made >= max_attempts) return RetryDecision::answer_error;
  if (outcome.never_reached_backend()) return RetryDecision::try_another_backend;
  if (may_run_twice &&
      (outcome.kind == Outcome::Kind::broken || outcome.kind == Outcome::Kind::timeout))
    return RetryDecision::try_another_backend;
  return RetryDecision::answer_error;
}

ErrorAnswer error_answer(const Outcome& last) {
  switch (last.kind) {
    case Outcome::Kind::timeout:
      return {504, fmt::format("Upstream timeout: {}.", last.message)};
    case Outcome::Kind::broken:
    case Outcome::Kind::bad_response:
    case Outcome::Kind::broken_mid_stream:
      return {502, fmt::format("Bad gateway: {}.", last.message)};
    case Outcome::Kind::connect_failed:
    case Outcome::Kind::reset_before_send:
      return {503, fmt::format("No backend reachable: {}.", last.message)};
    default:
      return {503, "No backend available for this route."};
  }
}

}  // namespace llmux::upstream
