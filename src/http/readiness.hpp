// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether a read on a socket may find bytes, known without a system call: nginx's "ready" flag,
// kept by an epoll set of our own per worker.
//
// Asio's reactor tries every read at once (a speculative recv) and queues it only when that
// finds nothing; its async_wait re-arms the socket with epoll_ctl on every call. For a proxy most
// reads find nothing at first (the backend's answer, read just after the request was sent; the
// next event of an SSE stream), so each costs a failed recv or an epoll_ctl before the one that
// gets the bytes. nginx keeps a flag per socket instead: a read that came up short drained the
// socket, and the next read waits for epoll's next edge without a system call first.
//
// A ReadinessSet is that, over public interfaces only: an epoll instance of its own (one per
// worker, an io_context service), in which a socket is added once, edge-triggered, the first
// time a read drains it (Readiness::drained). Asio watches the set's descriptor like any other
// (posix::stream_descriptor::async_wait), only while some operation is parked in the set; when
// it fires, the set takes the ready sockets from its epoll (epoll_wait with no timeout) and sets
// their flags, and the operation parked on each (a read, a wait for readability, a peer watch:
// a ReadyWaiter) runs then, in place, as Asio runs a reactor operation. One epoll_ctl and one
// epoll_wait per wake-up of the worker, shared by every socket that had an event in it, replace
// a failed recv or an epoll_ctl per read.
//
// The flag's rules (Readiness):
// - set by every event the set reports for the socket; a socket not in the set counts as
//   readable (every read is tried);
// - cleared by drained(), called right after a non-blocking read that came up short or found
//   nothing, in the same thread: no event of the set can have been taken between that read and
//   the clearing, so bytes that came after it raise an event still to come;
// - not cleared when the last event had EPOLLRDHUP, EPOLLHUP or EPOLLERR: a short read does not
//   say whether the peer's FIN came behind the bytes, and after it no new edge comes. Since epoll
//   reports a socket's whole state, every event after the FIN carries EPOLLRDHUP.
//
// A socket closed with a waiter parked must be closed through Readiness::abort() (http::Stream's
// close() and cancel() do it): its waiter then completes with operation_aborted, posted.
//
// Thread safety: one thread, the only one running the set's io_context (the gateway's workers:
// BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO). A set is used only where it was installed
// (ReadinessSet::install); elsewhere Readiness does nothing and every read goes to Asio.
#include <cstdint>
#include <vector>

#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/system/error_code.hpp>

namespace llmux::http {

class ReadinessSet;

/// An operation parked in a ReadinessSet until its socket may be read.
class ReadyWaiter {
 public:
  /// The socket may be readable (ec clear; called in place from the set's wake-up, with the
  /// socket's flag set), or the wait ended without that (operation_aborted: posted). The waiter
  /// is no longer parked when this runs; it may park again.
  virtual void on_ready(const boost::system::error_code& ec) = 0;
  /// The io_context goes away with the waiter parked: release it without completing it.
  virtual void discard() = 0;

 protected:
  ~ReadyWaiter() = default;
};

/// One socket's place in its worker's ReadinessSet: part of the object that owns the socket
/// (http::Stream). Not in a set until drained() finds one.
class Readiness {
 public:
  Readiness() = default;
  Readiness(const Readiness&) = delete;
  Readiness& operator=(const Readiness&) = delete;
  /// Takes over `other`'s place in the set (the set then finds this object); `other` has none.
  Readiness(Readiness&& other) noexcept;
  Readiness& operator=(Readiness&& other) noexcept;
  ~Readiness() { leave(); }

  /// Whether a read may find bytes, the end or an error (see the rules above).
  bool may_be_readable() const { return set_ == nullptr || readable_; }
  /// In a set: reads may park (park()).
  bool in_set() const { return set_ != nullptr; }
  /// Drained, and the set is watching for events (some waiter is parked) or taking them: the flag
  /// is current up to the worker's last wake-up. (A set that watches nothing leaves events in the
  /// kernel.)
  bool drained_and_watched() const;

  /// After a non-blocking read of socket `fd` (executor `executor`) that came up short or found
  /// nothing: clears the flag (see the rules), first adding the socket to the set of its
  /// io_context when there is one and it is not in it yet.
  void drained(int fd, const boost::asio::any_io_executor& executor);

  /// Parks `waiter` until the socket may be readable (in_set() and !may_be_readable() only; one
  /// waiter at a time).
  void park(ReadyWaiter& waiter);
  /// Takes the parked waiter back without completing it (nothing when none is parked).
  void unpark();
  /// The parked waiter, if any, completes with operation_aborted (posted); for a socket about to
  /// be closed or whose operations are cancelled.
  void abort();
  /// Leaves the set (the socket is closed or handed elsewhere): a parked waiter is aborted.
  void leave();
  /// The parked waiter, null when none.
  ReadyWaiter* waiter() const { return waiter_; }
  /// The executor of the set's io_context (in_set() only): where a parked operation completes.
  boost::asio::io_context::executor_type executor() const;

 private:
  friend class ReadinessSet;
  ReadinessSet* set_ = nullptr;
  ReadyWaiter* waiter_ = nullptr;
  int fd_ = -1;
  bool readable_ = true;
  bool hangup_ = false;  // the last event had EPOLLRDHUP, EPOLLHUP or EPOLLERR
  bool no_set_ = false;  // drained() found no set on the socket's io_context: look no more
};

/// The epoll set of one worker's io_context (see the top of this file).
class ReadinessSet : public boost::asio::execution_context::service {
 public:
  using key_type = ReadinessSet;
  static inline boost::asio::execution_context::id id;

  explicit ReadinessSet(boost::asio::io_context& ioc);
  ~ReadinessSet() override;

  /// Installs the set on `ioc` (once; the same set when it has one).
  static ReadinessSet& install(boost::asio::io_context& ioc);
  boost::asio::io_context::executor_type executor() const { return executor_; }
  /// The set installed on the io_context of `executor`, or null (none installed, or not an
  /// io_context's executor).
  static ReadinessSet* of(const boost::asio::any_io_executor& executor);

  /// Sockets in the set, waiters parked, and wake-ups: the times Asio reported the set's
  /// descriptor readable and the set took its events (for tests).
  std::size_t sockets() const { return sockets_; }
  std::size_t parked() const { return parked_; }
  std::size_t wake_ups() const { return wake_ups_; }

 private:
  friend class Readiness;
  void shutdown() override;
  bool add(Readiness& entry, int fd);
  void forget(Readiness& entry);
  void moved(Readiness& entry);
  void on_park();
  void on_unpark() { --parked_; }
  void watch();
  void take_events();
  Readiness* entry_of(int fd) const;  // null when the fd has none

  boost::asio::io_context::executor_type executor_;
  int epoll_fd_ = -1;
  boost::asio::posix::stream_descriptor descriptor_;  // the epoll fd, watched by Asio
  std::vector<Readiness*> by_fd_;                     // each socket's entry, by its fd
  std::size_t sockets_ = 0;
  std::size_t parked_ = 0;
  std::size_t wake_ups_ = 0;
  bool watching_ = false;  // an async_wait on descriptor_ is pending
  // Inside take_events(), with every event the kernel had when it took them applied to the
  // flags: they are as current as while watching.
  bool taking_events_ = false;
  bool shut_down_ = false;
};

}  // namespace llmux::http
