// SPDX-License-Identifier: Apache-2.0
#include "upstream/pool.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "http/read_ready.hpp"

namespace llmux::upstream {

namespace {
/// True when nothing (no byte, no EOF, no error) is waiting on the socket. Without a system call
/// when the socket was drained and no event came since (http/read_ready.hpp): a backend's close
/// is an event, which the reactor either processed (the flag is set) or fetched with the
/// request being served and has not processed yet (event_pending). A close that reached the
/// socket after the reactor's last look is not seen here (only a system call per reuse would).
bool quiet(boost::asio::ip::tcp::socket& sock) {
  if (!http::may_be_readable(sock) && !http::event_pending(sock)) return true;
  char c;
  const ssize_t r = ::recv(sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
}  // namespace

void Pool::put(std::shared_ptr<Upstream> up, std::chrono::milliseconds idle_timeout) {
  boost::system::error_code ignored;
  if (idle_.size() >= max_idle_)  // first forget the ones their idle timeout closed
    std::erase_if(idle_, [](const auto& p) { return !p->sock.is_open(); });
  if (idle_.size() >= max_idle_ || !up->sock.is_open()) {
    up->sock.close(ignored);
    return;
  }
  up->pooled = true;
  // Nothing is kept pending on an idle connection (a read there would cost a failed system call
  // and a cancellation per request): its idle timeout closes it, sweep() finds the ones the
  // backend closed, and take() looks once more before handing one out.
  up->dl.arm(idle_timeout, /*close_on_expiry=*/true);
  idle_.push_back(std::move(up));
}

void Pool::sweep() {
  boost::system::error_code ignored;
  std::erase_if(idle_, [&](const auto& up) {
    if (!up->sock.is_open()) return true;  // its idle timeout closed it
    if (quiet(up->sock.socket())) return false;
    up->dl.disarm();
    up->sock.close(ignored);  // EOF, reset or stray bytes from the backend
    return true;
  });
}

std::shared_ptr<Upstream> Pool::take() {
  while (!idle_.empty()) {
    std::shared_ptr<Upstream> up = std::move(idle_.back());
    idle_.pop_back();
    up->pooled = false;
    up->dl.disarm();
    boost::system::error_code ignored;
    if (!up->sock.is_open() || !quiet(up->sock.socket())) {
      up->sock.close(ignored);
      continue;
    }
    up->reused = true;
    return up;
  }
  return nullptr;
}

void Pool::close_all() {
  boost::system::error_code ignored;
  for (auto& up : idle_) up->sock.close(ignored);
}

}  // namespace llmux::upstream
