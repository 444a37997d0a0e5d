// SPDX-License-Identifier: Apache-2.0
#pragma once
// Coarse per-socket deadlines, checked by their worker's ticker every 50 ms. Arming and
// disarming are plain stores, so no timer-queue operation happens per read or write (Beast's
// tcp_stream reschedules a timer on every operation). On expiry the socket is closed (an
// upstream, a pooled connection) or only has its operations cancelled (a client that must still
// get its 408). Times are on the coarse monotonic clock (core/clock.hpp coarse_ns(), a tick
// behind at most): a deadline is armed several times per request, and checked at 50 ms steps.
//
// One worker thread only: a DeadlineList and the deadlines linked into it belong to the thread
// that runs their io_context. The list must outlive every deadline linked into it (declare it
// before the io_context whose coroutines own the deadlines).
#include <chrono>
#include <cstdint>

#include "core/clock.hpp"
#include "http/stream.hpp"

namespace llmux::http {

struct Deadline {
  std::int64_t at = 0;  // coarse_ns() (CLOCK_MONOTONIC_COARSE); 0 = disarmed
  bool fired = false;
  bool close = true;
  Stream* stream = nullptr;  // closed or cancelled through the Stream (a parked read ends too)
  Deadline* prev = nullptr;
  Deadline* next = nullptr;

  void arm(std::chrono::milliseconds timeout, bool close_on_expiry = true) {
    fired = false;
    close = close_on_expiry;
    at = coarse_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  }
  void disarm() { at = 0; }
};

/// The deadlines of one worker (an intrusive list).
class DeadlineList {
 public:
  DeadlineList() { head_.prev = head_.next = &head_; }
  DeadlineList(const DeadlineList&) = delete;
  DeadlineList& operator=(const DeadlineList&) = delete;
  void link(Deadline& deadline) {
    deadline.next = head_.next;
    deadline.prev = &head_;
    head_.next->prev = &deadline;
    head_.next = &deadline;
  }
  static void unlink(Deadline& deadline) {
    if (!deadline.prev) return;
    deadline.prev->next = deadline.next;
    deadline.next->prev = deadline.prev;
    deadline.prev = deadline.next = nullptr;
  }
  void fire_expired(std::int64_t now) {
    for (Deadline* deadline = head_.next; deadline != &head_; deadline = deadline->next) {
      if (deadline->at == 0 || now < deadline->at || !deadline->stream) continue;
      deadline->at = 0;
      deadline->fired = true;
      boost::system::error_code ignored;
      if (deadline->close) {
        deadline->stream->close(ignored);
      } else {
        deadline->stream->cancel(ignored);
      }
    }
  }

 private:
  Deadline head_;
};

/// A deadline registered with its worker for as long as it lives.
class ScopedDeadline : public Deadline {
 public:
  ScopedDeadline(DeadlineList& list, Stream& watched) {
    stream = &watched;
    list.link(*this);
  }
  ScopedDeadline(const ScopedDeadline&) = delete;
  ScopedDeadline& operator=(const ScopedDeadline&) = delete;
  ~ScopedDeadline() { DeadlineList::unlink(*this); }
};

}  // namespace llmux::http
