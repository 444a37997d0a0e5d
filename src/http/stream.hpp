// SPDX-License-Identifier: Apache-2.0
#pragma once
// A connection's byte stream: a TCP socket, with TLS on it when the listener or the backend
// asks for it (Asio's ssl::stream over OpenSSL). Plain connections pay one branch per read and
// write: async_read_some/async_write_some hand the caller's handler straight to the socket, so
// net::async_write, Beast's reads and writes and http::read_parsed work on a Stream as on a
// socket, with no frame or allocation of their own. TLS operations go through a type-erased
// handler into stream.cpp (one allocation per operation, TLS only), which keeps OpenSSL's and
// ssl::stream's headers out of the gateway's hot files.
//
// Timeouts, cancellation and closing act on socket() (http::Deadline closes or cancels it: an
// ssl operation in progress then fails); a TLS connection is closed the same way, after
// close_notify when time allows (tls_shutdown()).
//
// Thread safety and ownership: one thread, the socket's. At most one read and one write in
// flight at a time (ssl::stream serialises what they need of the socket). The ssl::context must
// outlive the stream: start_server/start_client take a shared_ptr to it.
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "core/block_cache.hpp"
#include "http/parked_operations.hpp"
#include "http/readiness.hpp"

namespace boost::asio::ssl {
class context;
}

namespace llmux::http {

using TlsContext = boost::asio::ssl::context;
using TlsContextPtr = std::shared_ptr<TlsContext>;

class Stream {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;
  using IoHandler =
      boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;

  explicit Stream(boost::asio::ip::tcp::socket tcp_socket);
  explicit Stream(const executor_type& executor);
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;
  ~Stream();

  executor_type get_executor() { return sock_.get_executor(); }
  boost::asio::ip::tcp::socket& socket() { return sock_; }
  const boost::asio::ip::tcp::socket& socket() const { return sock_; }
  /// TLS is on (start_server/start_client was called).
  bool tls() const { return tls_ != nullptr; }

  bool is_open() const { return sock_.is_open(); }
  /// Cancels the socket's operations, a parked one included (close and cancel the socket through
  /// these, not socket(), while an operation may be parked in the ReadinessSet).
  void cancel(boost::system::error_code& ec) {
    readiness_.abort();
    sock_.cancel(ec);
  }
  void close(boost::system::error_code& ec) {
    readiness_.leave();
    sock_.close(ec);
  }

  /// Puts TLS on the connected socket, as the server; then await handshake().
  void start_server(TlsContextPtr ctx);
  /// Puts TLS on the connected socket, as the client of `host` (SNI when it is a name; the
  /// certificate is checked against it when `ctx` verifies peers); then await handshake().
  void start_client(TlsContextPtr ctx, const std::string& host, bool verify);
  /// The TLS handshake; the error's message names a failed certificate verification
  /// (tls_error_message()). Bound it by a deadline on socket().
  boost::asio::awaitable<boost::system::error_code> handshake();
  /// Sends close_notify (best effort: a deadline on socket() bounds it). Nothing without TLS.
  boost::asio::awaitable<void> tls_shutdown();
  /// What failed in a TLS operation that ended with `ec`: OpenSSL's reason, and the certificate
  /// verification result when that is what failed ("certificate verify failed: self-signed
  /// certificate").
  std::string tls_error_message(const boost::system::error_code& ec) const;
  /// A server handshake that failed because the client spoke plain HTTP.
  static bool is_plain_http(const boost::system::error_code& ec);

  /// Sends what the kernel takes at once, without suspending: one non-blocking send (plain TCP;
  /// nothing over TLS). Most writes of a small exchange complete here, without the allocation,
  /// scheduler round trip and coroutine resumption of an asynchronous operation (a completion
  /// in place is posted, never run inline). `ec` is set on a failure, not when the socket takes
  /// nothing now; the caller awaits async_write for what is left (skip_bytes()).
  template <typename ConstBufferSequence>
  std::size_t write_now(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
    ec = {};
    if (tls_) return 0;
    if (!sock_.non_blocking()) {  // once: a synchronous send then fails instead of waiting
      sock_.non_blocking(true, ec);
      if (ec) return 0;
    }
    const std::size_t written = sock_.write_some(buffers, ec);
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) ec = {};
    return ec ? 0 : written;
  }

  /// Reads what has arrived, without suspending: one non-blocking recv (plain TCP; nothing over
  /// TLS). 0 with `ec` clear when nothing has; eof at the end. A read that came up short drained
  /// the socket: the next read then waits for an event of the worker's ReadinessSet without a
  /// system call first (http/readiness.hpp). Call it only when may_read_now().
  std::size_t read_now(boost::asio::mutable_buffer buffer, boost::system::error_code& ec) {
    ec = {};
    if (tls_) return 0;
    if (!sock_.non_blocking()) {
      sock_.non_blocking(true, ec);
      if (ec) return 0;
    }
    const std::size_t bytes_read = sock_.read_some(buffer, ec);
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
      ec = {};
      readiness_.drained(sock_.native_handle(), sock_.get_executor());
      return 0;
    }
    if (!ec && bytes_read < buffer.size())
      readiness_.drained(sock_.native_handle(), sock_.get_executor());
    return ec ? 0 : bytes_read;
  }
  /// Whether read_now() may find bytes (false over TLS, and when the socket was drained and no
  /// event came since: then await async_read_some, which waits without a system call first).
  bool may_read_now() const { return !tls_ && readiness_.may_be_readable(); }
  /// No byte, end or error can be waiting unseen: the socket was drained and no event came since,
  /// as the worker's ReadinessSet, watching, knows (Readiness::drained_and_watched).
  bool drained_and_watched() const { return !tls_ && readiness_.drained_and_watched(); }

  /// Parks `waiter` in the worker's ReadinessSet until a read may find bytes (its on_ready() then
  /// reads with read_now()): true when it is parked, false when the socket is in no set or may be
  /// readable now (then read now or through async_read_some). One operation at a time.
  bool park(ReadyWaiter& waiter) {
    if (tls_ || !readiness_.in_set() || readiness_.may_be_readable()) return false;
    readiness_.park(waiter);
    return true;
  }
  /// Takes a parked waiter back, without completing it.
  void unpark() { readiness_.unpark(); }

  /// Completes (error_code) when a read may find bytes or the end: at once (posted) while
  /// may_read_now(), else at the socket's next event in the worker's ReadinessSet, without a
  /// system call to start; then read_now(). Where the socket is in no set (TLS, no set on the
  /// io_context), Asio's async_wait(wait_read). operation_aborted when the socket is closed or
  /// its operations cancelled through this Stream, as Asio's.
  template <typename Token>
  auto async_wait_readable(Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        [this](auto handler) {
          if (tls_ || !readiness_.in_set()) {
            sock_.async_wait(boost::asio::ip::tcp::socket::wait_read, std::move(handler));
          } else if (readiness_.may_be_readable()) {
            boost::asio::post(readiness_.executor(),
                              boost::asio::append(std::move(handler), boost::system::error_code()));
          } else {
            using Handler = decltype(with_allocator(std::move(handler)));
            ParkedWait<Handler>::start(with_allocator(std::move(handler)), readiness_);
          }
        },
        token);
  }

  /// A read, as a socket's. On plain TCP in the worker's ReadinessSet it is a ParkedRead
  /// (http/parked_operations.hpp): tried at once only while may_read_now(), else it waits for the
  /// set's next event; otherwise Asio's (or TLS's) read.
  template <typename MutableBufferSequence, typename Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    if (!tls_ && !readiness_.in_set())
      return sock_.async_read_some(buffers, with_allocator(std::forward<Token>(token)));
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const MutableBufferSequence& sequence) {
          const boost::asio::mutable_buffer first = *boost::asio::buffer_sequence_begin(sequence);
          if (!tls_) {
            using Handler = decltype(with_allocator(std::move(handler)));
            ParkedRead<Handler>::start(with_allocator(std::move(handler)), readiness_, sock_,
                                       first);
            return;
          }
          tls_read(first, IoHandler(std::move(handler)));
        },
        token, buffers);
  }

  template <typename ConstBufferSequence, typename Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    if (!tls_) return sock_.async_write_some(buffers, with_allocator(std::forward<Token>(token)));
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [this](auto handler, const ConstBufferSequence& sequence) {
          // Several small buffers (a chunk's size line, its data, its CRLF) go out as one TLS
          // record: copied into the connection's staging buffer (ssl::stream writes the first
          // buffer only).
          auto it = boost::asio::buffer_sequence_begin(sequence);
          const auto end = boost::asio::buffer_sequence_end(sequence);
          while (it != end && boost::asio::const_buffer(*it).size() == 0) ++it;
          if (it == end) {
            tls_write(boost::asio::const_buffer(), IoHandler(std::move(handler)));
            return;
          }
          const boost::asio::const_buffer first(*it);
          if (std::next(it) == end || first.size() >= kRecord) {
            tls_write(first, IoHandler(std::move(handler)));
            return;
          }
          const boost::asio::mutable_buffer staging = tls_staging();
          const std::size_t copied = boost::asio::buffer_copy(staging, sequence);
          tls_write(boost::asio::buffer(staging.data(), copied), IoHandler(std::move(handler)));
        },
        token, buffers);
  }

 private:
  /// The reactor's operation for a plain read or write is allocated by core::SizedAllocator: from
  /// the thread's BlockCache in the binary (core/block_cache.hpp), not Asio's aligned_alloc.
  template <typename Token>
  static auto with_allocator(Token&& token) {
    return boost::asio::bind_allocator(core::SizedAllocator<void>(), std::forward<Token>(token));
  }

  static constexpr std::size_t kRecord = 16 * 1024;  // a TLS record's most plaintext
  struct Tls;
  void tls_read(boost::asio::mutable_buffer buffer, IoHandler handler);
  void tls_write(boost::asio::const_buffer buffer, IoHandler handler);
  boost::asio::mutable_buffer tls_staging();

  boost::asio::ip::tcp::socket sock_;
  std::unique_ptr<Tls> tls_;
  Readiness readiness_;  // the socket's flag in the worker's ReadinessSet (plain TCP)
};

/// Drops the first `sent` bytes of `buffers` (what write_now() sent): the rest, in place.
template <std::size_t N>
void skip_bytes(std::array<boost::asio::const_buffer, N>& buffers, std::size_t sent) {
  for (auto& piece : buffers) {
    const std::size_t skipped = sent < piece.size() ? sent : piece.size();
    piece += skipped;
    sent -= skipped;
  }
}

/// A server context with `cert_file` (PEM, the chain) and `key_file` (PEM); null with the reason
/// in `error` when either cannot be read or they do not match.
TlsContextPtr make_server_context(const std::string& cert_file, const std::string& key_file,
                                  std::string& error);
/// A client context: peers verified against `ca_file` (PEM) or, when it is empty, the system's
/// default CA store; `verify` false checks nothing. Null with the reason in `error`.
TlsContextPtr make_client_context(const std::string& ca_file, bool verify, std::string& error);

}  // namespace llmux::http
