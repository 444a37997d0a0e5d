// SPDX-License-Identifier: Apache-2.0
// http::async_wait_readable (http/read_ready.hpp), the wait an SSE stream parks on between events
// (gateway/relay.cpp): on a drained socket it waits for the next epoll event without re-arming the
// socket (Asio's own async_wait(wait_read) calls epoll_ctl every time: a system call per event of
// every stream); while a read may find bytes it completes at once; the peer's close ends it, and
// closing the socket or cancelling the wait aborts it.
//
// This binary is linked with -Wl,--wrap=epoll_ctl: every epoll_ctl made by Asio's reactor comes
// through __wrap_epoll_ctl below, which counts the EPOLL_CTL_MODs on one descriptor.
#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "http/read_ready.hpp"
#include "http/stream.hpp"
#include "socket_pair.hpp"

namespace {
std::atomic<int> g_watched_fd{-1};
std::atomic<int> g_mods{0};
}  // namespace

extern "C" int __real_epoll_ctl(int epfd, int op, int fd, epoll_event* ev);   // NOLINT
extern "C" int __wrap_epoll_ctl(int epfd, int op, int fd, epoll_event* ev) {  // NOLINT
  if (op == EPOLL_CTL_MOD && fd == g_watched_fd.load()) ++g_mods;
  return __real_epoll_ctl(epfd, op, fd, ev);
}

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;
using llmux::http::async_wait_readable;

namespace {

struct Pair : llmux::test::SocketPair {
  Pair() { g_watched_fd = server.socket().native_handle(); }
  ~Pair() { g_watched_fd = -1; }
  /// Reads what is there; a short read marks the socket drained.
  std::string read_now() {
    char buf[256];
    boost::system::error_code ec;
    const std::size_t n = server.read_now(net::buffer(buf), ec);
    EXPECT_FALSE(ec) << ec.message();
    return std::string(buf, n);
  }
  /// Starts a wait; `done` holds its result once it completes.
  void wait(std::optional<boost::system::error_code>& done) {
    done.reset();
    async_wait_readable(server.socket(), [&done](boost::system::error_code ec) { done = ec; });
  }
};

/// Drains the socket: a first short read asks epoll for EPOLLRDHUP and leaves the socket
/// readable; the second finds nothing and marks it drained.
void drain(Pair& p) {
  EXPECT_EQ(p.read_now(), "");
  EXPECT_EQ(p.read_now(), "");
  ASSERT_FALSE(llmux::http::may_be_readable(p.server.socket()));
}

/// A drained socket with a wait on it that nothing has ended yet.
void wait_pending(Pair& p, std::optional<boost::system::error_code>& done) {
  drain(p);
  p.wait(done);
  p.spin(10ms);
  ASSERT_FALSE(done.has_value()) << "completed with nothing to read";
}

}  // namespace

#if LLMUX_READ_READY

TEST(WaitReadable, WaitsOnADrainedSocketForTheNextEventWithoutASystemCall) {
  Pair p;
  drain(p);
  const int mods_before = g_mods.load();
  for (int i = 0; i < 10; ++i) {
    std::optional<boost::system::error_code> done;
    p.wait(done);
    p.spin(20ms);
    ASSERT_FALSE(done.has_value()) << "round " << i << ": completed with nothing to read";
    p.send("event " + std::to_string(i));
    p.spin();
    ASSERT_TRUE(done.has_value()) << "round " << i << ": the bytes did not end the wait";
    EXPECT_FALSE(*done);
    EXPECT_EQ(p.read_now(), "event " + std::to_string(i));
  }
  // Asio's async_wait(wait_read) re-arms the socket with EPOLL_CTL_MOD at every wait: 10 here.
  EXPECT_EQ(g_mods.load() - mods_before, 0);
}

TEST(WaitReadable, CompletesAtOnceWhenBytesCameWhileNothingWaited) {
  Pair p;
  drain(p);
  p.send("early");
  p.spin();  // the reactor sees the event with no operation queued: the socket is readable
  ASSERT_TRUE(llmux::http::may_be_readable(p.server.socket()));
  std::optional<boost::system::error_code> done;
  p.wait(done);
  p.spin(5ms);
  ASSERT_TRUE(done.has_value()) << "the bytes already there did not end the wait";
  EXPECT_FALSE(*done);
  EXPECT_EQ(p.read_now(), "early");
}

TEST(WaitReadable, ThePeersCloseEndsTheWaitAndTheReadFindsTheEnd) {
  Pair p;
  std::optional<boost::system::error_code> done;
  wait_pending(p, done);
  p.client.close();
  p.spin();
  ASSERT_TRUE(done.has_value()) << "the close did not end the wait";
  EXPECT_FALSE(*done);
  char buf[16];
  boost::system::error_code ec;
  EXPECT_EQ(p.server.read_now(net::buffer(buf), ec), 0u);
  EXPECT_EQ(ec, net::error::eof);
}

TEST(WaitReadable, ClosingTheSocketAbortsTheWait) {
  Pair p;
  std::optional<boost::system::error_code> done;
  wait_pending(p, done);
  p.server.socket().close();
  p.spin();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(*done, net::error::operation_aborted);
}

TEST(WaitReadable, ACancelledWaitIsAbortedAndTheNextOneStillGetsTheBytes) {
  Pair p;
  drain(p);
  net::cancellation_signal sig;
  std::optional<boost::system::error_code> done;
  async_wait_readable(p.server.socket(),
                      net::bind_cancellation_slot(
                          sig.slot(), [&done](boost::system::error_code ec) { done = ec; }));
  p.spin(10ms);
  ASSERT_FALSE(done.has_value());
  sig.emit(net::cancellation_type::all);
  p.spin();
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(*done, net::error::operation_aborted);
  p.wait(done);
  p.send("after");
  p.spin();
  ASSERT_TRUE(done.has_value());
  EXPECT_FALSE(*done);
  EXPECT_EQ(p.read_now(), "after");
}

#else
TEST(WaitReadable, NeedsAsiosEpollReactor) {
  GTEST_SKIP() << "async_wait_readable is Asio's async_wait here (http/read_ready.hpp)";
}
#endif
