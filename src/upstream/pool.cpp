// SPDX-License-Identifier: Apache-2.0
#include "upstream/pool.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "http/stream.hpp"

namespace llmux::upstream {

namespace {
/// True when nothing (no byte, no EOF, no error) is waiting on the socket: one look without
/// blocking (MSG_PEEK).
bool nothing_waiting(boost::asio::ip::tcp::socket& sock) {
  char byte;
  const ssize_t received = ::recv(sock.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/// The same, without a system call when the worker's ReadinessSet has seen no event on the
/// socket since a read drained it and is watching for them (http/readiness.hpp): a backend's
/// close is an event. One that came in the worker's current wake-up, before the set took its
/// events, is not seen here: the request sent on that connection then fails unsent, and the
/// attempt goes on with another connection (upstream_attempt.cpp).
bool quiet(http::Stream& sock) {
  if (sock.drained_and_watched()) return true;
  return nothing_waiting(sock.socket());
}
}  // namespace

void Pool::put(std::shared_ptr<BackendConnection> connection,
               std::chrono::milliseconds idle_timeout) {
  boost::system::error_code ignored;
  if (idle_.size() >= max_idle_)  // first forget the ones their idle timeout closed
    std::erase_if(idle_, [](const auto& idle) { return !idle->sock.is_open(); });
  if (idle_.size() >= max_idle_ || !connection->sock.is_open()) {
    connection->sock.close(ignored);
    return;
  }
  connection->pooled = true;
  // Nothing is kept pending on an idle connection (a read there would cost a failed system call
  // and a cancellation per request): its idle timeout closes it, sweep() finds the ones the
  // backend closed, and take() looks once more before handing one out.
  connection->dl.arm(idle_timeout, /*close_on_expiry=*/true);
  idle_.push_back(std::move(connection));
}

void Pool::sweep() {
  boost::system::error_code ignored;
  std::erase_if(idle_, [&](const auto& connection) {
    if (!connection->sock.is_open()) return true;  // its idle timeout closed it
    if (nothing_waiting(connection->sock.socket())) return false;
    connection->dl.disarm();
    connection->sock.close(ignored);  // EOF, reset or stray bytes from the backend
    return true;
  });
}

std::shared_ptr<BackendConnection> Pool::take() {
  while (!idle_.empty()) {
    std::shared_ptr<BackendConnection> connection = std::move(idle_.back());
    idle_.pop_back();
    connection->pooled = false;
    connection->dl.disarm();
    boost::system::error_code ignored;
    if (!connection->sock.is_open() || !quiet(connection->sock)) {
      connection->sock.close(ignored);
      continue;
    }
    connection->reused = true;
    return connection;
  }
  return nullptr;
}

void Pool::close_all() {
  boost::system::error_code ignored;
  for (auto& connection : idle_) connection->sock.close(ignored);
}

}  // namespace llmux::upstream
