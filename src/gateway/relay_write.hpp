// SPDX-License-Identifier: Apache-2.0
#pragma once
// The relay's writes to the client: what one write carries (the header, body bytes in their chunk
// framing, the error event that ends a broken stream, the last chunk), written at once as far as
// the socket takes it, and the rest awaited. Plain functions and one small coroutine of their own:
// the pieces and their framing take no room in the relay's frame, which a held-open stream keeps.
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include "gateway/client_connection.hpp"
#include "http/stream.hpp"

namespace llmux::gateway {

/// What one write to the client carries: the header (until it is out), the body bytes a read
/// made ready (in their chunk framing when `chunked`), the error event that ends a broken
/// stream, and the last chunk.
struct ClientWrite {
  std::string_view header;
  bool chunked = false;
  std::string_view body = {};
  std::string_view tail = {};
  bool last = false;
};

/// "<size in hex>\r\n", a chunk's size line, into `out` (room for 18 bytes); its length.
std::size_t chunk_size_line(char* out, std::size_t size);

/// Writes `ready` at once as far as the socket takes it (the usual case); what it did not take (a
/// slow client, and always over TLS) is copied into `rest`, for the relay to await.
void write_at_once(http::Stream& sock, const ClientWrite& ready, std::string& rest,
                   boost::system::error_code& ec);

/// What write_at_once() left in `rest`, awaited within the idle timeout, then freed (a stream holds
/// no copy while it waits). A coroutine of its own: it costs a frame only when a write did not go
/// at once.
net::awaitable<boost::system::error_code> write_remainder(ClientConnection& client,
                                                          std::string& rest,
                                                          std::chrono::milliseconds idle);

}  // namespace llmux::gateway
