// SPDX-License-Identifier: Apache-2.0
#pragma once
// How one attempt to serve a request on one backend ended: the feed that health checks,
// ejection, metrics and the policies' observers read (AttemptObserver::on_done), and the input of
// the retry decision.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmux::upstream {

struct Outcome {
  enum class Kind {
    ok,                 // a response was relayed to its end (any status: see `status`)
    connect_failed,     // refused, unreachable or timed out before a connection existed
    reset_before_send,  // the connection failed before a byte of the request was written
    timeout,            // no response header within first_byte (or the write timed out)
    broken,             // closed or failed after the request was (partly) written, no response
    bad_response,       // the response was not valid HTTP
    broken_mid_stream,  // the response began but the backend failed before its end
    client_left,        // the client went away first
  };
  Kind kind = Kind::ok;
  int status = 0;  // the backend's status when a response header arrived; 0 otherwise
  std::chrono::nanoseconds ttfb{-1};  // attempt start → response header; -1: none
  std::chrono::nanoseconds total{0};  // attempt start → end
  std::optional<std::int64_t> prompt_tokens, completion_tokens;
  std::string message;  // what happened, naming the backend (for logs and error answers)
  /// The backend was declared down (ejected, failed checks) while the request waited for its
  /// answer: the request goes to another backend at once, outside the route's retry budget.
  bool backend_down = false;
  /// connect_failed: the backend refused the connection (nothing listens there).
  bool refused = false;

  /// True when no byte of the request can have reached the backend: retrying elsewhere cannot
  /// run it twice.
  bool never_reached_backend() const {
    return kind == Kind::connect_failed || kind == Kind::reset_before_send;
  }
};

std::string_view to_string(Outcome::Kind kind);

/// What the proxy does after a failed attempt (pure: tested without sockets).
enum class RetryDecision {
  try_another_backend,  // the request never reached a backend (or may run twice); attempts remain
  answer_error,         // answer the client with the error this outcome maps to
  give_up_silently,     // the client left: nothing to answer
};

/// Retries only what never reached a backend, at most `max_attempts` attempts in all, and never
/// after the client left. `may_run_twice`: a generation request (chat, completions, a Responses
/// request not stored), which a repeat costs compute, not correctness: one that reached a
/// backend which then closed or timed out before any response is sent again as well.
RetryDecision decide_retry(const Outcome& outcome, int attempts_made, int max_attempts = 2,
                           bool may_run_twice = false);

/// The status and message the gateway answers when no attempt produced a response: 503 when no
/// backend could be reached, 504 on a timeout, 502 for a broken or invalid response.
struct ErrorAnswer {
  int status = 503;
  std::string message;
};
ErrorAnswer error_answer(const Outcome& last);

}  // namespace llmux::upstream
