// SPDX-License-Identifier: Apache-2.0
// Stream::read_now and http::try_read_parsed / try_read_more / read_parsed over it, as the
// gateway's sessions read requests: on an io_context with a ReadinessSet (the workers'), so a
// read that came up short marks the socket drained and the next one parks in the set
// (http/readiness.hpp; its own rules are tested in tests/unit/http/readiness_test.cpp); and the
// worker's read buffers lent between requests.
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
#include "http/readiness.hpp"
#include "http/stream.hpp"

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

namespace {

/// A loopback pair on an io_context with a ReadinessSet, as a worker's.
struct Pair : llmux::test::SocketPair {
  Pair() { llmux::http::ReadinessSet::install(ioc); }
};

TEST(ReadNow, EndOfStreamIsAnError) {
  Pair p;
  p.client.shutdown(tcp::socket::shutdown_send);
  p.spin();
  char buf[16];
  boost::system::error_code ec;
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);
  EXPECT_EQ(ec, net::error::eof);
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
      // The peer's pace: pieces that arrive while the read is parked, and while it is not.
      std::this_thread::sleep_for(i % 2 ? 15ms : 1ms);
    }
  });
  const bool read = p.spin_until([&] { return done; });
  writer.join();
  ASSERT_TRUE(read) << "the message's last pieces were never read";
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
    return llmux::http::try_read_parsed(server, buf, parser, until, ec);
  }
};

TEST(ReadNow, ReadParsedNowParsesAMessageThatHasArrivedWithoutWaiting) {
  Reading r;
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
  ASSERT_TRUE(r.spin_until([&] { return done; })) << "the rest of the message was never read";
  EXPECT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.req["host"], "x");
  EXPECT_EQ(r.req.body(), "abc");
}

TEST(ReadNow, ReadMoreNowGivesTheCloseToTheParserAsReadMoreDoes) {
  {  // closed before a byte: end of stream
    Reading r;
    r.client.shutdown(tcp::socket::shutdown_send);
    r.spin();
    ASSERT_TRUE(llmux::http::try_read_more(r.server, r.buf, r.parser, 2048, true, r.ec));
    EXPECT_EQ(r.ec, boost::beast::http::error::end_of_stream) << r.ec.message();
  }
  {  // closed in the middle of a header: a partial message, not a wait for ever (the short read
     // of the bytes may leave the close to the read after, which then finds it at once)
    Reading r;
    r.send("GET / HTTP/1.1\r\nHo");
    r.client.shutdown(tcp::socket::shutdown_send);
    r.spin();
    bool done = r.now(llmux::http::Until::header);
    if (!done) {
      net::co_spawn(
          r.ioc,
          [&]() -> net::awaitable<void> {
            r.ec = co_await llmux::http::read_parsed(r.server, r.buf, r.parser,
                                                     llmux::http::Until::header);
            done = true;
          },
          net::detached);
      r.spin_until([&] { return done; });
    }
    ASSERT_TRUE(done) << "the close behind a partial header was never read";
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
