// SPDX-License-Identifier: Apache-2.0
// Stream::read_now, may_read_now and read_done (http/stream.hpp, http/read_ready.hpp), as
// http::read_more, the relay and the upstream pool use them: a read that came up short marks the
// socket drained, so the next read waits for epoll without a system call first — and no byte is
// ever left waiting for an event that will not come: bytes that arrive while no read is pending
// make the socket readable again once the reactor has seen them, and a read queued on a drained
// socket completes when bytes arrive.
#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "../http/socket_pair.hpp"
#include "gateway/request.hpp"
#include "gateway/worker.hpp"
#include "http/read_parsed.hpp"
#include "http/read_ready.hpp"
#include "http/stream.hpp"

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

namespace {

using Pair = llmux::test::SocketPair;

/// A socket's first drained read asks epoll for EPOLLRDHUP and leaves it readable: done here.
void prime(Pair& p) {
  char buf[8];
  boost::system::error_code ec;
  ASSERT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);
  ASSERT_FALSE(ec);
}

TEST(ReadNow, ShortReadMarksTheSocketDrainedAndNothingWaitingReadsNothing) {
  Pair p;
  prime(p);
  p.send("abc");
  std::this_thread::sleep_for(20ms);  // on loopback the bytes are there once send() returned
  char buf[64];
  boost::system::error_code ec;
  p.spin();  // the reactor sees the bytes: the socket is readable
  ASSERT_TRUE(p.server.may_read_now());
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 3u);
  EXPECT_FALSE(ec);
  EXPECT_EQ(std::string(buf, 3), "abc");
#if LLMUX_READ_READY
  EXPECT_FALSE(p.server.may_read_now()) << "a short read left the socket marked readable";
#endif
  // Nothing has arrived since: read_now finds nothing, which is not an error.
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);
  EXPECT_FALSE(ec);
}

TEST(ReadNow, BytesArrivingWhileNoReadIsPendingMakeTheSocketReadableAgain) {
  Pair p;
  prime(p);
  char buf[64];
  boost::system::error_code ec;
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);  // drained: nothing yet
  p.send("late bytes");
  p.spin();  // the reactor sees the event while no read is pending
  ASSERT_TRUE(p.server.may_read_now())
      << "bytes arrived while no read was pending, but the socket is still marked drained: a "
         "read would wait for an event that has already come";
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 10u);
  EXPECT_EQ(std::string(buf, 10), "late bytes");
}

TEST(ReadNow, AFinThatCameWithTheLastBytesIsNotLost) {
  // The bytes and the FIN come together and the reactor sees them before the read: the read
  // that gets the bytes comes up short, yet the socket is not drained.
  Pair p;
  prime(p);
  p.send("abc");
  p.client.shutdown(tcp::socket::shutdown_send);
  p.spin();
  char buf[64];
  boost::system::error_code ec;
  ASSERT_EQ(p.server.read_now(net::buffer(buf), ec), 3u);
  ASSERT_TRUE(p.server.may_read_now())
      << "the FIN behind the last bytes was forgotten: a read would wait for ever";
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);
  EXPECT_EQ(ec, net::error::eof);
}

TEST(ReadNow, AFinThatCameWithTheBytesOfAQueuedReadIsNotLost) {
  Pair p;
  prime(p);
  char buf[64];
  boost::system::error_code ec;
  ASSERT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);  // drained: the next read is queued
  std::vector<std::string> got;
  bool done = false;
  net::co_spawn(
      p.ioc,
      [&]() -> net::awaitable<void> {
        for (;;) {
          std::size_t n = 0;
          boost::system::error_code rec;
          if (p.server.may_read_now()) n = p.server.read_now(net::buffer(buf), rec);
          if (n == 0 && !rec) {
            std::tie(rec, n) = co_await p.server.async_read_some(net::buffer(buf),
                                                                 net::as_tuple(net::use_awaitable));
            if (!rec) p.server.read_done(n, sizeof buf);
          }
          if (rec) {
            got.push_back(rec == net::error::eof ? "<eof>" : rec.message());
            break;
          }
          got.emplace_back(buf, n);
        }
        done = true;
      },
      net::detached);
  p.spin(20ms);
  p.send("last words");
  p.client.shutdown(tcp::socket::shutdown_send);
  for (int i = 0; i < 50 && !done; ++i) p.spin(20ms);
  ASSERT_TRUE(done) << "the end of the stream was never read";
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], "last words");
  EXPECT_EQ(got[1], "<eof>");
}

TEST(ReadNow, EndOfStreamIsAnError) {
  Pair p;
  p.client.shutdown(tcp::socket::shutdown_send);
  p.spin();
  char buf[16];
  boost::system::error_code ec;
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);
  EXPECT_EQ(ec, net::error::eof);
}

TEST(ReadNow, ReadQueuedOnADrainedSocketCompletesWhenBytesCome) {
  Pair p;
  prime(p);
  char buf[64];
  boost::system::error_code ec;
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);
  std::size_t got = 0;
  bool done = false;
  net::co_spawn(
      p.ioc,
      [&]() -> net::awaitable<void> {
        auto [rec, n] =
            co_await p.server.async_read_some(net::buffer(buf), net::as_tuple(net::use_awaitable));
        if (!rec) p.server.read_done(n, sizeof buf);
        got = n;
        done = true;
      },
      net::detached);
  p.spin(20ms);
  EXPECT_FALSE(done);
  std::thread writer([&] {
    std::this_thread::sleep_for(30ms);
    p.send("hello");
  });
  for (int i = 0; i < 100 && !done; ++i) p.spin(20ms);
  writer.join();
  ASSERT_TRUE(done) << "a read queued on a drained socket never completed";
  EXPECT_EQ(std::string(buf, got), "hello");
#if LLMUX_READ_READY
  EXPECT_FALSE(p.server.may_read_now()) << "read_done after a short read left it readable";
#endif
}

TEST(ReadNow, AnEventFetchedWithAnotherIsPendingUntilItsTurn) {
  // What Pool::take() asks of an idle pooled connection (y) while serving a request (x): the
  // reactor fetched y's close in the same wake-up as x's bytes and processes it only after x's.
  // y is not readable yet, but it is not quiet either: its event is pending.
  Pair x;
  tcp::acceptor acc(x.ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket y_peer(x.ioc);
  y_peer.connect(acc.local_endpoint());
  llmux::http::Stream y(acc.accept());
  char ybuf[8];
  boost::system::error_code ec;
  for (int i = 0; i < 2; ++i) {  // the first drained read asks for EPOLLRDHUP, the second drains
    ASSERT_EQ(y.read_now(net::buffer(ybuf), ec), 0u);
    ASSERT_FALSE(ec);
  }
  prime(x);
  char buf[64];
  EXPECT_EQ(x.server.read_now(net::buffer(buf), ec), 0u);
#if LLMUX_READ_READY
  ASSERT_FALSE(llmux::http::may_be_readable(y.socket()));
  ASSERT_FALSE(x.server.may_read_now());
#endif
  bool done = false, y_quiet_then = true, y_pending_then = false;
  x.server.async_read_some(net::buffer(buf), [&](boost::system::error_code, std::size_t) {
    done = true;
    y_pending_then = llmux::http::event_pending(y.socket());
    y_quiet_then = !llmux::http::may_be_readable(y.socket()) && !y_pending_then;
  });
  // Both before the reactor looks: x's bytes first, then y's peer closes.
  x.send("GET / HTTP/1.1\r\n\r\n");
  y_peer.close();
  std::this_thread::sleep_for(20ms);  // on loopback both are there once the calls returned
  for (int i = 0; i < 100 && !done; ++i) x.spin(20ms);
  ASSERT_TRUE(done);
  EXPECT_FALSE(y_quiet_then) << "y's close, fetched with x's bytes, was taken for quiet";
#if LLMUX_READ_READY
  EXPECT_TRUE(y_pending_then) << "fetched first, x's event is processed first";
#endif
  // Once processed, y is readable (the close) and nothing is pending.
  x.spin(20ms);
  EXPECT_TRUE(llmux::http::may_be_readable(y.socket()));
  EXPECT_FALSE(llmux::http::event_pending(y.socket()));
}

TEST(ReadNow, ReadParsedGetsAMessageSentInPiecesWithPausesBetween) {
  // Every path of read_more: bytes at once, none yet (queued), a piece arriving while parsing.
  Pair p;
  const std::string msg =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 26\r\n\r\n"
      "abcdefghijklmnopqrstuvwxyz";
  boost::beast::flat_buffer buf;
  llmux::gateway::Request req;
  llmux::gateway::RequestParser parser(req);
  boost::system::error_code rec;
  bool done = false;
  net::co_spawn(
      p.ioc,
      [&]() -> net::awaitable<void> {
        rec = co_await llmux::http::read_parsed(p.server, buf, parser, llmux::http::Until::message);
        done = true;
      },
      net::detached);
  std::thread writer([&] {
    for (std::size_t i = 0; i < msg.size(); i += 7) {
      p.send(msg.substr(i, 7));
      std::this_thread::sleep_for(i % 2 ? 15ms : 1ms);
    }
  });
  for (int i = 0; i < 200 && !done; ++i) p.spin(20ms);
  writer.join();
  ASSERT_TRUE(done) << "the message's last pieces were never read";
  EXPECT_FALSE(rec) << rec.message();
  EXPECT_TRUE(parser.is_done());
  EXPECT_EQ(req.body(), "abcdefghijklmnopqrstuvwxyz");
}

/// A server connection and what reading a request on it takes.
struct Reading : Pair {
  boost::beast::flat_buffer buf;
  llmux::gateway::Request req;
  llmux::gateway::RequestParser parser{req};
  boost::system::error_code ec;
  bool now(llmux::http::Until until) {
    return llmux::http::read_parsed_now(server, buf, parser, until, ec);
  }
};

TEST(ReadNow, ReadParsedNowParsesAMessageThatHasArrivedWithoutWaiting) {
  Reading r;
  prime(r);
  r.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  r.spin();
  ASSERT_TRUE(r.now(llmux::http::Until::message))
      << "the whole message had arrived, yet it asked to wait";
  EXPECT_FALSE(r.ec) << r.ec.message();
  EXPECT_TRUE(r.parser.is_done());
  EXPECT_EQ(r.req.target(), "/v1/completions");
  EXPECT_EQ(r.req.body(), "hello");
}

TEST(ReadNow, AHeaderFollowedByPartOfItsBodyIsAHeader) {
  // The reader parses past the header into the body it has (Expect: 100-continue, and the body's
  // own idle timeout, need the header to count as read while the body is still coming).
  Reading r;
  prime(r);
  r.send(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
      "Content-Length: 10\r\n\r\nhel");
  r.spin();
  ASSERT_TRUE(r.now(llmux::http::Until::header)) << "the header had arrived, yet it asked to wait";
  EXPECT_FALSE(r.ec) << r.ec.message();
  EXPECT_TRUE(r.parser.is_header_done());
  EXPECT_FALSE(r.parser.is_done());
  EXPECT_EQ(r.req.body(), "hel");
  EXPECT_FALSE(r.now(llmux::http::Until::message)) << "the rest of the body has not come";
}

TEST(ReadNow, ReadParsedNowStopsAtAPartialHeaderAndReadParsedGoesOnFromThere) {
  Reading r;
  prime(r);
  r.send("POST /v1/completions HTTP/1.1\r\nHo");
  r.spin();
  EXPECT_FALSE(r.now(llmux::http::Until::header)) << "half a header is not a header";
  EXPECT_FALSE(r.ec) << r.ec.message();
  EXPECT_FALSE(r.parser.is_header_done());
  // Nothing more has come: a second try asks to wait too (no error, nothing lost).
  EXPECT_FALSE(r.now(llmux::http::Until::header));
  bool done = false;
  net::co_spawn(
      r.ioc,
      [&]() -> net::awaitable<void> {
        r.ec = co_await llmux::http::read_parsed(r.server, r.buf, r.parser,
                                                 llmux::http::Until::message);
        done = true;
      },
      net::detached);
  r.spin(20ms);
  r.send("st: x\r\nContent-Length: 3\r\n\r\nabc");
  for (int i = 0; i < 100 && !done; ++i) r.spin(20ms);
  ASSERT_TRUE(done) << "the rest of the message was never read";
  EXPECT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.req["host"], "x");
  EXPECT_EQ(r.req.body(), "abc");
}

TEST(ReadNow, ReadMoreNowGivesTheCloseToTheParserAsReadMoreDoes) {
  {  // closed before a byte: end of stream
    Reading r;
    r.client.shutdown(tcp::socket::shutdown_send);
    r.spin();
    ASSERT_TRUE(llmux::http::read_more_now(r.server, r.buf, r.parser, 2048, true, r.ec));
    EXPECT_EQ(r.ec, boost::beast::http::error::end_of_stream) << r.ec.message();
  }
  {  // closed in the middle of a header: a partial message, not a wait for ever
    Reading r;
    r.send("GET / HTTP/1.1\r\nHo");
    r.client.shutdown(tcp::socket::shutdown_send);
    r.spin();
    ASSERT_TRUE(r.now(llmux::http::Until::header));
    EXPECT_EQ(r.ec, boost::beast::http::error::partial_message) << r.ec.message();
  }
}

TEST(ReadBuffers, AnEmptyBufferGoesBackToTheWorkerAndTheNextRequestReadsIntoItsMemory) {
  llmux::gateway::Worker w;
  boost::beast::flat_buffer held;
  held.commit(net::buffer_copy(held.prepare(2048), net::buffer(std::string(100, 'x'))));
  held.consume(held.size());
  const void* memory = held.data().data();
  w.take_back_read_buf(held);
  EXPECT_EQ(held.capacity(), 0u) << "a connection between requests still holds its buffer";
  boost::beast::flat_buffer next;
  w.lend_read_buf(next);
  EXPECT_GE(next.capacity(), 2048u);
  EXPECT_EQ(next.prepare(1).data(), memory) << "the next read allocated instead of reusing";
  EXPECT_EQ(next.size(), 0u);
}

TEST(ReadBuffers, PipelinedBytesStayAndALargeBufferIsFreedNotKept) {
  llmux::gateway::Worker w;
  boost::beast::flat_buffer pipelined;
  pipelined.commit(net::buffer_copy(pipelined.prepare(64), net::buffer("GET / HTTP/1.1\r\n", 16)));
  w.take_back_read_buf(pipelined);
  ASSERT_EQ(pipelined.size(), 16u) << "the next request's bytes were lost";
  EXPECT_EQ(std::string(static_cast<const char*>(pipelined.data().data()), 16),
            "GET / HTTP/1.1\r\n");
  boost::beast::flat_buffer large;
  large.prepare(llmux::gateway::Worker::kKeptReadBuf * 4);
  w.take_back_read_buf(large);
  EXPECT_EQ(large.capacity(), 0u);
  boost::beast::flat_buffer next;
  w.lend_read_buf(next);
  EXPECT_EQ(next.capacity(), 0u) << "a large body's buffer was kept for later requests";
}

}  // namespace
