// SPDX-License-Identifier: Apache-2.0
#pragma once
// The asynchronous operations an http::Stream parks in its worker's ReadinessSet
// (http/readiness.hpp): a read, and a wait until a read may find bytes. Each is what an Asio
// reactor operation is, over public interfaces: the completion handler, in memory from the
// handler's associated allocator (Asio's recycling allocator by default), its cancellation slot
// honoured, completed through its associated executor (by default the executor of the set's
// io_context, where the socket's I/O runs, as an Asio socket's operation would).
//
// - ParkedRead reads when the socket may be readable (at once when it may be now, then the
//   completion is posted, as Asio posts a completion found at once; else when the set reports an
//   event, and completes there). A read that comes up short or finds nothing marks the socket
//   drained in the same breath (Readiness::drained), so no event can slip between the two.
// - ParkedWait completes when the socket may be readable: posted at once when it may be now,
//   else from the set's event.
// Both complete with operation_aborted when the socket's operations are cancelled or it is
// closed through its Stream, or when their cancellation slot is emitted.
#include <cstddef>
#include <memory>
#include <utility>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/recycling_allocator.hpp>

#include "http/readiness.hpp"

namespace llmux::http {

/// What ParkedRead and ParkedWait share: their memory, their cancellation and their completion.
/// `Derived` supplies `perform()` (true when it completed) and `Signature`'s arguments.
template <typename Derived, typename Handler>
class ParkedOperation : public ReadyWaiter {
 public:
  using Allocator =
      boost::asio::associated_allocator_t<Handler, boost::asio::recycling_allocator<void>>;
  using OwnAllocator = typename std::allocator_traits<Allocator>::template rebind_alloc<Derived>;

  template <typename... Args>
  static Derived* make(Handler&& handler, Args&&... args) {
    OwnAllocator allocator(
        boost::asio::get_associated_allocator(handler, boost::asio::recycling_allocator<void>()));
    Derived* op = std::allocator_traits<OwnAllocator>::allocate(allocator, 1);
    try {
      std::allocator_traits<OwnAllocator>::construct(allocator, op, std::move(handler),
                                                     std::forward<Args>(args)...);
    } catch (...) {
      std::allocator_traits<OwnAllocator>::deallocate(allocator, op, 1);
      throw;
    }
    return op;
  }

  void discard() override { release(); }

 protected:
  ParkedOperation(Handler&& handler, Readiness& readiness)
      : handler_(std::move(handler)), readiness_(&readiness), executor_(readiness.executor()) {}

  /// Parks in the set, the first time cancellable through the handler's slot from now on.
  void park() {
    if (!cancellable_) {
      cancellable_ = true;
      auto slot = boost::asio::get_associated_cancellation_slot(handler_);
      if (slot.is_connected()) slot.template emplace<Cancel>(Cancel{static_cast<Derived*>(this)});
    }
    readiness_->park(*this);
  }

  /// Releases this operation's memory, then completes its handler with `args` through the
  /// handler's executor: in place when that runs in this thread (from the set's wake-up), else
  /// posted (`post_it`: a completion found at the start, which must not run inside it).
  template <typename... Args>
  void complete(bool post_it, Args... args) {
    if (cancellable_) {
      auto slot = boost::asio::get_associated_cancellation_slot(handler_);
      if (slot.is_connected()) slot.clear();
    }
    Handler handler = std::move(handler_);
    const boost::asio::io_context::executor_type executor = executor_;
    release();
    if (post_it)
      boost::asio::post(executor, boost::asio::append(std::move(handler), args...));
    else
      boost::asio::dispatch(executor, boost::asio::append(std::move(handler), args...));
  }

  Handler handler_;
  Readiness* readiness_;
  boost::asio::io_context::executor_type executor_;  // the set's io_context's
  bool cancellable_ = false;                         // its Cancel is in the handler's slot

 private:
  struct Cancel {
    Derived* op;
    void operator()(boost::asio::cancellation_type) const {
      if (op->readiness_->waiter() == op) op->readiness_->abort();
    }
  };

  void release() {
    OwnAllocator allocator(
        boost::asio::get_associated_allocator(handler_, boost::asio::recycling_allocator<void>()));
    Derived* self = static_cast<Derived*>(this);
    std::allocator_traits<OwnAllocator>::destroy(allocator, self);
    std::allocator_traits<OwnAllocator>::deallocate(allocator, self, 1);
  }
};

/// A read of `buffer` from a socket in a ReadinessSet; completes (error_code, bytes).
template <typename Handler>
class ParkedRead final : public ParkedOperation<ParkedRead<Handler>, Handler> {
  using Base = ParkedOperation<ParkedRead<Handler>, Handler>;

 public:
  ParkedRead(Handler&& handler, Readiness& readiness, boost::asio::ip::tcp::socket& socket,
             boost::asio::mutable_buffer buffer)
      : Base(std::move(handler), readiness), socket_(&socket), buffer_(buffer) {}

  /// Reads at once when the socket may be readable, else parks.
  static void start(Handler&& handler, Readiness& readiness, boost::asio::ip::tcp::socket& socket,
                    boost::asio::mutable_buffer buffer) {
    ParkedRead* op = Base::make(std::move(handler), readiness, socket, buffer);
    if (readiness.may_be_readable() && op->perform(/*post_it=*/true)) return;
    op->park();
  }

  void on_ready(const boost::system::error_code& ec) override {
    if (ec) return this->complete(false, ec, std::size_t{0});
    if (!perform(/*post_it=*/false)) this->park();
  }

 private:
  /// One non-blocking read; false when it found nothing (the socket is then marked drained).
  bool perform(bool post_it) {
    boost::system::error_code ec;
    if (buffer_.size() == 0) {
      this->complete(post_it, ec, std::size_t{0});
      return true;
    }
    if (!socket_->non_blocking()) socket_->non_blocking(true, ec);
    std::size_t bytes_read = 0;
    if (!ec) bytes_read = socket_->read_some(buffer_, ec);
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
      this->readiness_->drained(socket_->native_handle(), socket_->get_executor());
      return false;
    }
    if (!ec && bytes_read < buffer_.size())
      this->readiness_->drained(socket_->native_handle(), socket_->get_executor());
    this->complete(post_it, ec, bytes_read);
    return true;
  }

  boost::asio::ip::tcp::socket* socket_;
  boost::asio::mutable_buffer buffer_;
};

/// A wait until a socket in a ReadinessSet may be readable; completes (error_code).
template <typename Handler>
class ParkedWait final : public ParkedOperation<ParkedWait<Handler>, Handler> {
  using Base = ParkedOperation<ParkedWait<Handler>, Handler>;

 public:
  ParkedWait(Handler&& handler, Readiness& readiness) : Base(std::move(handler), readiness) {}

  static void start(Handler&& handler, Readiness& readiness) {
    ParkedWait* op = Base::make(std::move(handler), readiness);
    if (readiness.may_be_readable()) return op->complete(true, boost::system::error_code());
    op->park();
  }

  void on_ready(const boost::system::error_code& ec) override { this->complete(false, ec); }
};

}  // namespace llmux::http
