// SPDX-License-Identifier: Apache-2.0
// Stream::write_now and skip_bytes (http/stream.hpp), as the relay and the upstream request use
// them: what the socket takes at once is sent without an asynchronous operation, the rest by
// async_write after skip_bytes — every byte arrives once, in order, also when the body is many
// times the socket buffers (the peer reads slowly) and the first send takes only part of it.
#include "http/stream.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

TEST(SkipBytes, DropsWholeAndPartialPiecesInOrder) {
  const std::string a = "abc", b = "defgh", c = "ij";
  std::array<net::const_buffer, 4> bufs{net::buffer(a), net::buffer(b), net::const_buffer(),
                                        net::buffer(c)};
  llmux::http::skip_bytes(bufs, 5);
  std::string rest;
  for (const auto& p : bufs) rest.append(static_cast<const char*>(p.data()), p.size());
  EXPECT_EQ(rest, "fghij");
  llmux::http::skip_bytes(bufs, 100);  // more than is left: nothing left
  EXPECT_EQ(net::buffer_size(bufs), 0u);
}

TEST(WriteNow, TakesWhatTheSocketAcceptsAndAsyncWriteSendsTheRestInOrder) {
  net::io_context ioc;
  tcp::acceptor acc(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(ioc);
  client.connect(acc.local_endpoint());
  tcp::socket server = acc.accept();
  // Small kernel buffers: 8 MiB cannot go out at once.
  server.set_option(net::socket_base::send_buffer_size(16 * 1024));
  client.set_option(net::socket_base::receive_buffer_size(16 * 1024));
  llmux::http::Stream s(std::move(server));

  std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 8388608\r\n\r\n";
  std::string body(8 << 20, '\0');
  for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>('a' + i * 7919 % 26);
  const std::string expected = head + body;

  std::size_t first = 0;
  boost::system::error_code write_ec;
  bool wrote = false;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        std::array<net::const_buffer, 3> out{net::buffer(head), net::buffer(body),
                                             net::const_buffer()};
        first = s.write_now(out, write_ec);
        if (!write_ec && first < expected.size()) {
          llmux::http::skip_bytes(out, first);
          auto [ec, n] = co_await net::async_write(s, out, net::as_tuple(net::use_awaitable));
          write_ec = ec;
        }
        wrote = true;
      },
      net::detached);
  std::string got;
  std::thread reader([&] {
    // Slow at first (the writer meets a full socket), then everything.
    // The reader's pace under test: 50 ms of not reading, so the writer meets a full socket.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    got.resize(expected.size());
    boost::system::error_code ec;
    net::read(client, net::buffer(got), ec);
    EXPECT_FALSE(ec) << ec.message();
  });
  ioc.run_for(std::chrono::seconds(30));
  reader.join();
  EXPECT_TRUE(wrote);
  EXPECT_FALSE(write_ec) << write_ec.message();
  EXPECT_GT(first, 0u);
  EXPECT_LT(first, expected.size()) << "the first send should have taken only part of 8 MiB";
  EXPECT_TRUE(got == expected) << "bytes lost, repeated or out of order";
}

TEST(WriteNow, AFailedSocketIsAnErrorNotNothingSent) {
  net::io_context ioc;
  tcp::acceptor acc(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(ioc);
  client.connect(acc.local_endpoint());
  llmux::http::Stream s(acc.accept());
  // The peer resets the connection: a send then fails (EPIPE or ECONNRESET), never "0 taken".
  client.set_option(net::socket_base::linger(true, 0));
  client.close();
  // Until the reset has reached the server's socket (poll reports it readable or failed).
  pollfd reset{s.socket().native_handle(), POLLIN, 0};
  ASSERT_EQ(::poll(&reset, 1, 5000), 1) << "the reset never arrived";
  const std::string data = "GET / HTTP/1.1\r\n\r\n";
  boost::system::error_code ec;
  std::size_t n = 0;
  for (int i = 0; i < 3 && !ec; ++i) n = s.write_now(std::array{net::buffer(data)}, ec);
  EXPECT_TRUE(ec) << "sent " << n;
}

}  // namespace
