// SPDX-License-Identifier: Apache-2.0
#pragma once
// Lingering close (nginx's `lingering_close`): after answering a client whose request was not
// read to its end (413, 400, 408, 431, 501), closing at once with unread bytes in the socket makes
// the kernel send a reset, and the client then sees "connection reset" instead of the answer.
// So: shut down sending (the answer is already written), read and discard what the client still
// sends until it closes, nothing arrives for `gap`, `total` passes or `max_bytes` were discarded;
// then close.
//
// Used by the gateway's and the simulator's sessions. One coroutine per socket; the socket must
// have no other operation outstanding.
#include <chrono>
#include <cstdint>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace llmux::http {

struct LingerLimits {
  std::chrono::milliseconds total{10000};  // the whole lingering, at most
  std::chrono::milliseconds gap{2000};     // the longest wait for the client's next bytes
  std::uint64_t max_bytes = 256ull << 20;  // discarded at most; past it the socket is closed
};

/// What lingering_close() saw, for tests and logs.
struct LingerResult {
  std::uint64_t discarded = 0;  // bytes read and dropped
  bool client_closed = false;   // ended by the client's EOF (or reset), not by a limit
};

/// Shuts down sending, discards the client's remaining bytes within `limits`, then closes.
boost::asio::awaitable<LingerResult> lingering_close(boost::asio::ip::tcp::socket& sock,
                                                     LingerLimits limits = {});

}  // namespace llmux::http
