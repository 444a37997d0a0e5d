// SPDX-License-Identifier: Apache-2.0
#include "http/linger.hpp"

#include <array>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "core/use_tuple.hpp"

namespace llmux::http {

namespace net = boost::asio;
using namespace net::experimental::awaitable_operators;

net::awaitable<LingerResult> lingering_close(net::ip::tcp::socket& sock, LingerLimits limits) {
  using core::use_tuple;
  LingerResult result;
  boost::system::error_code ec;
  sock.shutdown(net::ip::tcp::socket::shutdown_send, ec);
  if (!ec) {
    net::steady_timer timer(co_await net::this_coro::executor);
    std::array<char, 8192> scratch;
    const auto end = std::chrono::steady_clock::now() + limits.total;
    while (result.discarded < limits.max_bytes) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= end) break;
      timer.expires_at(std::min(end, now + limits.gap));
      auto outcome = co_await (sock.async_read_some(net::buffer(scratch), use_tuple) ||
                               timer.async_wait(use_tuple));
      if (outcome.index() == 1) break;  // the gap or the total ran out
      auto [rec, n] = std::get<0>(outcome);
      result.discarded += n;
      if (rec) {
        result.client_closed = rec == net::error::eof || rec == net::error::connection_reset;
        break;
      }
    }
  }
  sock.close(ec);
  co_return result;
}

}  // namespace llmux::http
