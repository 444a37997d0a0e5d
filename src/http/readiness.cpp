// SPDX-License-Identifier: Apache-2.0
#include "http/readiness.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <system_error>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

namespace llmux::http {

namespace net = boost::asio;

namespace {
constexpr std::uint32_t kHangup = EPOLLRDHUP | EPOLLHUP | EPOLLERR;

/// An aborted waiter's completion, posted: released without completing it when the io_context
/// goes away before it runs.
class AbortedWaiter {
 public:
  explicit AbortedWaiter(ReadyWaiter* waiter) : waiter_(waiter) {}
  AbortedWaiter(AbortedWaiter&& other) noexcept : waiter_(std::exchange(other.waiter_, nullptr)) {}
  AbortedWaiter& operator=(AbortedWaiter&&) = delete;
  ~AbortedWaiter() {
    if (waiter_) waiter_->discard();
  }
  void operator()() { std::exchange(waiter_, nullptr)->on_ready(net::error::operation_aborted); }

 private:
  ReadyWaiter* waiter_;
};
}  // namespace

// --- Readiness ---

Readiness::Readiness(Readiness&& other) noexcept
    : set_(std::exchange(other.set_, nullptr)),
      waiter_(std::exchange(other.waiter_, nullptr)),
      fd_(std::exchange(other.fd_, -1)),
      readable_(std::exchange(other.readable_, true)),
      hangup_(std::exchange(other.hangup_, false)),
      no_set_(std::exchange(other.no_set_, false)) {
  if (set_) set_->moved(*this);
}

Readiness& Readiness::operator=(Readiness&& other) noexcept {
  if (this == &other) return *this;
  leave();
  set_ = std::exchange(other.set_, nullptr);
  waiter_ = std::exchange(other.waiter_, nullptr);
  fd_ = std::exchange(other.fd_, -1);
  readable_ = std::exchange(other.readable_, true);
  hangup_ = std::exchange(other.hangup_, false);
  no_set_ = std::exchange(other.no_set_, false);
  if (set_) set_->moved(*this);
  return *this;
}

void Readiness::drained(int fd, const net::any_io_executor& executor) {
  if (!set_) {
    if (no_set_ || fd < 0) return;
    ReadinessSet* set = ReadinessSet::of(executor);
    if (!set || !set->add(*this, fd)) {
      no_set_ = true;  // reads go to Asio, as without a set
      return;
    }
    // Added edge-triggered: what arrived since the read that drained the socket raised an event
    // at the add itself, so the flag may be cleared now.
  }
  if (hangup_) return;  // the next read finds the end or the error
  readable_ = false;
}

bool Readiness::drained_and_watched() const {
  return set_ != nullptr && !readable_ && (set_->watching_ || set_->taking_events_);
}

net::io_context::executor_type Readiness::executor() const {
  return set_->executor();
}

void Readiness::park(ReadyWaiter& waiter) {
  waiter_ = &waiter;
  set_->on_park();
}

void Readiness::unpark() {
  if (!waiter_) return;
  waiter_ = nullptr;
  set_->on_unpark();
}

void Readiness::abort() {
  if (!waiter_) return;
  ReadyWaiter* waiter = waiter_;
  unpark();
  if (set_->shut_down_) {
    waiter->discard();
    return;
  }
  net::post(set_->executor_, AbortedWaiter(waiter));
}

void Readiness::leave() {
  if (!set_) return;
  abort();
  set_->forget(*this);
  set_ = nullptr;
  fd_ = -1;
  readable_ = true;
  hangup_ = false;
}

// --- ReadinessSet ---

ReadinessSet::ReadinessSet(net::io_context& ioc)
    : net::execution_context::service(ioc), executor_(ioc.get_executor()), descriptor_(ioc) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  boost::system::error_code ec;
  descriptor_.assign(epoll_fd_, ec);
  if (ec) {
    ::close(epoll_fd_);
    throw boost::system::system_error(ec, "watching the readiness set");
  }
}

ReadinessSet::~ReadinessSet() {
  boost::system::error_code ignored;
  descriptor_.close(ignored);  // closes epoll_fd_
}

ReadinessSet& ReadinessSet::install(net::io_context& ioc) {
  return net::use_service<ReadinessSet>(ioc);
}

ReadinessSet* ReadinessSet::of(const net::any_io_executor& executor) {
  const auto* io_executor = executor.target<net::io_context::executor_type>();
  if (!io_executor) return nullptr;
  net::io_context& ioc = io_executor->context();
  if (!net::has_service<ReadinessSet>(ioc)) return nullptr;
  return &net::use_service<ReadinessSet>(ioc);
}

void ReadinessSet::shutdown() {
  shut_down_ = true;
  // Releasing a waiter destroys what it belongs to (a coroutine and the sockets in its frame),
  // which may leave the set: the table is looked at afresh each time.
  for (std::size_t fd = 0; fd < by_fd_.size(); ++fd) {
    Readiness* entry = by_fd_[fd];
    if (!entry || !entry->waiter_) continue;
    ReadyWaiter* waiter = entry->waiter_;
    entry->unpark();
    waiter->discard();
  }
  boost::system::error_code ignored;
  descriptor_.cancel(ignored);
}

bool ReadinessSet::add(Readiness& entry, int fd) {
  if (shut_down_) return false;
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
  event.data.fd = fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) return false;
  if (static_cast<std::size_t>(fd) >= by_fd_.size()) by_fd_.resize(fd + 1024, nullptr);
  by_fd_[fd] = &entry;
  entry.set_ = this;
  entry.fd_ = fd;
  ++sockets_;
  return true;
}

void ReadinessSet::forget(Readiness& entry) {
  // The socket leaves the epoll set by itself when it is closed (the kernel removes a closed
  // file); until then an event for it finds no entry and is dropped. A new socket with the same
  // number replaces the entry (its own add succeeded: the old file is gone).
  if (entry.fd_ >= 0 && static_cast<std::size_t>(entry.fd_) < by_fd_.size() &&
      by_fd_[entry.fd_] == &entry) {
    by_fd_[entry.fd_] = nullptr;
    --sockets_;
  }
}

void ReadinessSet::moved(Readiness& entry) {
  by_fd_[entry.fd_] = &entry;
}

void ReadinessSet::on_park() {
  ++parked_;
  if (!watching_) watch();
}

void ReadinessSet::watch() {
  if (shut_down_) return;
  watching_ = true;
  descriptor_.async_wait(net::posix::stream_descriptor::wait_read,
                         [this](const boost::system::error_code& ec) {
                           watching_ = false;
                           if (ec) return;  // cancelled: the io_context goes away
                           ++wake_ups_;
                           take_events();
                           // A waiter that parked again while the events were taken has
                           // started the next watch already: a second one would stay queued
                           // on the descriptor, and every event would then run both.
                           if (parked_ > 0 && !watching_) watch();
                         });
}

void ReadinessSet::take_events() {
  std::array<epoll_event, 128> events;
  for (;;) {
    const int ready = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 0);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return;
    // Every flag first, then the waiters: a waiter's handler that asks about another socket
    // (the pool: did the backend close this idle connection?) sees that socket's event of this
    // same batch, not a flag one wake-up old (Readiness::drained_and_watched).
    const bool whole_batch = static_cast<std::size_t>(ready) < events.size();
    for (int i = 0; i < ready; ++i) {
      Readiness* entry = entry_of(events[i].data.fd);
      if (!entry) continue;
      entry->readable_ = true;
      entry->hangup_ = (events[i].events & kHangup) != 0;
    }
    taking_events_ = whole_batch;
    for (int i = 0; i < ready; ++i) {
      // A waiter run before this one may have closed this socket, and another one taken its
      // number (its flag is then its own: set only when its own read found bytes, or a later
      // event), or drained it again after the event (its next bytes raise an event still to
      // come): a waiter runs only on a socket still flagged readable.
      Readiness* entry = entry_of(events[i].data.fd);
      if (!entry || !entry->readable_) continue;
      if (ReadyWaiter* waiter = entry->waiter_) {
        entry->unpark();
        waiter->on_ready({});
      }
    }
    taking_events_ = false;
    if (whole_batch) return;
  }
}

Readiness* ReadinessSet::entry_of(int fd) const {
  if (fd < 0 || static_cast<std::size_t>(fd) >= by_fd_.size()) return nullptr;
  return by_fd_[fd];
}

}  // namespace llmux::http
