// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether a read on a socket may find bytes: nginx's "ready" flag, on Asio's reactor.
//
// Asio's epoll reactor registers each socket edge-triggered and keeps, per socket, a flag that
// says "an event came since the socket was last found drained" (try_speculative_). While it is
// set, a new read is first tried at once (a speculative recv) and only queued for epoll when
// that finds nothing. Asio clears the flag only at EOF, so every read starts with a recv: one
// that finds nothing costs a system call (EAGAIN) and the queued read a second one when the
// bytes come. For a proxy that is most reads: the backend's answer, read just after the request
// was sent, and the watch on the client while the request is served. nginx does what this file
// enables: a read that returned fewer bytes than asked drained the socket, so the next read
// waits for epoll's next edge without a system call.
//
// mark_drained(s), called after a read that came up short (or found nothing), clears the flag.
// That is correct only when no byte and no close can be waiting unannounced, and two things
// make it so:
// - no epoll event for the socket may have been consumed between that read and the clearing, or
//   its bytes would wait for an edge that never comes: it is called right after a non-blocking
//   read in the same thread (Stream::read_now), or in the completion of a queued read, which the
//   reactor runs at once from the event that performed it (a read is queued, never tried at
//   once, when the flag was clear as it started);
// - a short read does not say whether the peer's FIN came with the bytes: the FIN's event may
//   already be consumed and the next read would wait for ever. So the socket is registered with
//   EPOLLRDHUP as well (once, at its first drained read, which then leaves the flag set), and the
//   flag is not cleared when the last event epoll reported for the socket had EPOLLRDHUP,
//   EPOLLHUP or EPOLLERR: epoll reports a socket's whole state, so any event after the FIN
//   carries EPOLLRDHUP, and a FIN after the last event is an event still to come.
// may_be_readable(s) reads the flag.
//
// The flag says what the reactor has processed, not what epoll has told it: one wake-up fetches
// the events of many sockets and queues each socket's state, and the flag is set only when that
// state's turn comes. A handler run before it (a client's request that came in the same wake-up)
// sees the flag clear although the socket's event is already known. A read loses nothing by it
// (the read it queues is performed at that turn), but a connection pool asking "did the backend
// close this idle connection?" must not be told no then: event_pending(s) says whether the
// socket's state is queued with events not yet processed.
//
// async_wait_readable(s, token) waits until a read may find bytes, like socket::async_wait(
// wait_read), but trusts the flag as a read does: it completes at once (through the queue) while
// the flag is set, and is otherwise queued for the reactor's next event as it stands. Asio's own
// wait is never tried at once (it would always succeed: Asio keeps the flag set), so it re-arms
// the socket with epoll_ctl on every call, a system call per wait: per event of every SSE stream
// the relay parks (gateway/relay.cpp), a third of its system calls.
//
// This reaches into Asio's internals (private members, reached by the rule that access is not
// checked in an explicit instantiation's arguments); where the reactor is not the epoll reactor
// of the Asio checked below, both do nothing and every read is speculative, as in plain Asio:
// only a system call is lost, never a byte.
//
// Thread safety: the socket's thread, which must be the only one running its io_context (the
// gateway's workers: one thread each, BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO).
#include <memory>
#include <type_traits>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

// The members used here, as Boost 1.81 (Debian 12's) has them; checked again for another version.
#if defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && \
    BOOST_VERSION / 100 == 1081
#define LLMUX_READ_READY 1
#include <sys/epoll.h>

#include <cstdint>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/op_queue.hpp>
#include <boost/asio/detail/reactive_socket_service_base.hpp>
#include <boost/asio/detail/reactive_wait_op.hpp>
#include <boost/asio/detail/scheduler_operation.hpp>
#else
#define LLMUX_READ_READY 0
#endif

namespace llmux::http {

#if LLMUX_READ_READY
namespace read_ready_detail {

using Reactor = boost::asio::detail::epoll_reactor;
using State = Reactor::descriptor_state;
using Op = boost::asio::detail::scheduler_operation;
using Socket = boost::asio::ip::tcp::socket;

template <typename Tag, typename Tag::type M>
struct Rob {
  friend typename Tag::type get(Tag) { return M; }
};
#define LLMUX_ROB(Tag, Type, member) \
  struct Tag {                       \
    using type = Type;               \
    friend type get(Tag);            \
  };                                 \
  template struct Rob<Tag, member>

LLMUX_ROB(Speculative, bool (State::*)[Reactor::max_ops], &State::try_speculative_);
LLMUX_ROB(Registered, std::uint32_t State::*, &State::registered_events_);
LLMUX_ROB(Descriptor, int State::*, &State::descriptor_);
LLMUX_ROB(Owner, Reactor* State::*, &State::reactor_);
LLMUX_ROB(EpollFd, int Reactor::*, &Reactor::epoll_fd_);
LLMUX_ROB(LastEvents, unsigned int Op::*, &Op::task_result_);  // the events of the last wake-up
#undef LLMUX_ROB

/// The socket's implementation (basic_socket::impl_ is protected).
struct SocketAccess : Socket {
  static auto& impl(Socket& s) { return (s.*(&SocketAccess::impl_)).get_implementation(); }
};

inline State* state(Socket& s) {
  return SocketAccess::impl(s).reactor_data_;
}

/// Asio's per-operation cancellation for reactor operations (a protected member type).
struct ServiceAccess : boost::asio::detail::reactive_socket_service_base {
  using reactive_socket_service_base::reactor_op_cancellation;
};

/// async_wait_readable's initiation: Asio's async_wait(wait_read)
/// (reactive_socket_service_base::async_wait), started with speculation allowed.
struct InitiateWaitReadable {
  template <typename Handler>
  void operator()(Handler&& handler, Socket* s) const {
    using H = std::decay_t<Handler>;
    auto& impl = SocketAccess::impl(*s);
    State* st = impl.reactor_data_;
    if (!st || st->*get(Registered{}) == 0) {  // closed, or not in epoll: as Asio does it
      s->async_wait(Socket::wait_read, std::forward<Handler>(handler));
      return;
    }
    Reactor& reactor = *(st->*get(Owner{}));
    const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    using WaitOp = boost::asio::detail::reactive_wait_op<H, Socket::executor_type>;
    typename WaitOp::ptr p = {std::addressof(handler), WaitOp::ptr::allocate(handler), nullptr};
    p.p = new (p.v) WaitOp(boost::system::error_code(), handler, s->get_executor());
    if (slot.is_connected())
      p.p->cancellation_key_ = &slot.template emplace<ServiceAccess::reactor_op_cancellation>(
          &reactor, &impl.reactor_data_, impl.socket_, Reactor::read_op);
    reactor.start_op(Reactor::read_op, impl.socket_, impl.reactor_data_, p.p, is_continuation,
                     /*allow_speculative=*/true);
    p.v = p.p = nullptr;
  }
};

}  // namespace read_ready_detail

inline bool may_be_readable(boost::asio::ip::tcp::socket& s) {
  using namespace read_ready_detail;
  State* st = state(s);
  return !st || (st->*get(Speculative{}))[Reactor::read_op];
}

inline bool event_pending(boost::asio::ip::tcp::socket& s) {
  using namespace read_ready_detail;
  State* st = state(s);
  // Queued states are linked through their operation's next pointer, and a queued state is never
  // the last one: the reactor's events are queued with the reactor's own task after them
  // (scheduler::task_cleanup), which runs only after them. A state that is not queued has none.
  // A C-style cast: the scheduler operation is a private base of the descriptor's state.
  return st && boost::asio::detail::op_queue_access::next((Op*)st) != nullptr;  // NOLINT
}

/// Completes (error_code) when a read on `s` may find bytes or the end: at once while
/// may_be_readable(s), else at the socket's next epoll event, without a system call to start.
/// The caller reads then, and a read that comes up short marks the socket drained (else the next
/// wait completes at once again). operation_aborted when the socket is closed or the wait
/// cancelled, as Asio's.
template <typename Token>
auto async_wait_readable(boost::asio::ip::tcp::socket& s, Token&& token) {
  return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
      read_ready_detail::InitiateWaitReadable{}, token, &s);
}

inline void mark_drained(boost::asio::ip::tcp::socket& s) {
  using namespace read_ready_detail;
  State* st = state(s);
  if (!st) return;
  std::uint32_t& registered = st->*get(Registered{});
  if (registered == 0) return;  // not registered with epoll: reads are tried at once
  if ((registered & EPOLLRDHUP) == 0) {
    // Once per socket: epoll reports the peer's FIN apart from bytes from now on. Until an
    // event has come with that, a FIN may be hiding behind the bytes just read: the flag stays.
    epoll_event ev{};
    ev.events = registered | EPOLLRDHUP;
    ev.data.ptr = st;
    if (::epoll_ctl((st->*get(Owner{}))->*get(EpollFd{}), EPOLL_CTL_MOD, st->*get(Descriptor{}),
                    &ev) == 0)
      registered = ev.events;
    return;
  }
  // A C-style cast: the scheduler operation is a private base of the descriptor's state.
  const unsigned int last = ((Op*)st)->*get(LastEvents{});  // NOLINT
  if (last & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) return;    // the next read finds the end
  (st->*get(Speculative{}))[Reactor::read_op] = false;
}
#else
inline bool may_be_readable(boost::asio::ip::tcp::socket&) {
  return true;
}
inline bool event_pending(boost::asio::ip::tcp::socket&) {
  return false;
}
inline void mark_drained(boost::asio::ip::tcp::socket&) {}
/// Here Asio's own wait: the flag is never cleared without the reactor reached above.
template <typename Token>
auto async_wait_readable(boost::asio::ip::tcp::socket& s, Token&& token) {
  return s.async_wait(boost::asio::ip::tcp::socket::wait_read, std::forward<Token>(token));
}
#endif

}  // namespace llmux::http
