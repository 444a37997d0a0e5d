// SPDX-License-Identifier: Apache-2.0
#include "gateway/relay_write.hpp"

#include <array>

#include <boost/asio/write.hpp>

#include "core/use_tuple.hpp"

namespace llmux::gateway {

/// "<size in hex>\r\n", a chunk's size line, into `out` (room for 18 bytes); its length. (fmt's
/// format_to_n costs ~450 instructions here, on every event of a relayed stream.)
std::size_t chunk_size_line(char* out, std::size_t size) {
  char digits[16];
  std::size_t digit_count = 0;
  do {
    digits[digit_count++] = "0123456789abcdef"[size & 0xf];
    size >>= 4;
  } while (size > 0);
  for (std::size_t i = 0; i < digit_count; ++i) out[i] = digits[digit_count - 1 - i];
  out[digit_count] = '\r';
  out[digit_count + 1] = '\n';
  return digit_count + 2;
}

/// Writes `ready` at once as far as the socket takes it (the usual case); what it did not take (a
/// slow client, and always over TLS) is copied into `rest`, for the relay to await. A plain
/// function: the pieces and their framing take no room in the relay's frame, which a
/// held-open stream keeps.
void write_at_once(http::Stream& sock, const ClientWrite& ready, std::string& rest,
                   boost::system::error_code& ec) {
  char size_line[32];
  char tail_line[32];
  std::array<net::const_buffer, 7> out{};
  std::size_t pieces = 0;
  if (!ready.header.empty()) out[pieces++] = net::buffer(ready.header);
  if (ready.chunked) {
    if (!ready.body.empty()) {
      out[pieces++] = net::buffer(size_line, chunk_size_line(size_line, ready.body.size()));
      out[pieces++] = net::buffer(ready.body);
      out[pieces++] = net::buffer("\r\n", 2);
    }
    if (!ready.tail.empty()) {
      out[pieces++] = net::buffer(tail_line, chunk_size_line(tail_line, ready.tail.size()));
      out[pieces++] = net::buffer(ready.tail);
      out[pieces++] = net::buffer("\r\n0\r\n\r\n", 7);
    } else if (ready.last) {
      out[pieces++] = net::buffer("0\r\n\r\n", 5);
    }
  } else if (!ready.body.empty()) {
    out[pieces++] = net::buffer(ready.body);
  }
  std::size_t total = 0;
  for (std::size_t i = 0; i < pieces; ++i) total += out[i].size();
  const std::size_t sent = sock.write_now(out, ec);
  if (ec || sent == total) return;
  http::skip_bytes(out, sent);
  rest.reserve(total - sent);
  for (std::size_t i = 0; i < pieces; ++i)
    rest.append(static_cast<const char*>(out[i].data()), out[i].size());
}

/// What write_at_once() left in `rest`, awaited within the idle timeout, then freed (a stream holds
/// no copy while it waits). A coroutine of its own: it costs a frame only when a write did not go
/// at once, and its operation's state takes no room in the relay's frame.
net::awaitable<boost::system::error_code> write_remainder(ClientConnection& client,
                                                          std::string& rest,
                                                          std::chrono::milliseconds idle) {
  client.dl.arm(idle);
  auto [ec, n] = co_await net::async_write(client.sock, net::buffer(rest), use_tuple);
  client.dl.disarm();
  std::string().swap(rest);
  co_return ec;
}

}  // namespace llmux::gateway
