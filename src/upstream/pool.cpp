#include "upstream/pool.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include <boost/asio/buffer.hpp>

namespace llmux::upstream {

namespace {
/// True when nothing (no byte, no EOF, no error) is waiting on the socket.
bool quiet(boost::asio::ip::tcp::socket& sock) {
  char c;
  const ssize_t r = ::recv(sock.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
}  // namespace

void Pool::put(std::shared_ptr<Upstream> up, std::chrono::milliseconds idle_timeout) {
  boost::system::error_code ignored;
  if (idle_.size() >= max_idle_ || !up->sock.is_open()) {
    up->sock.close(ignored);
    return;
  }
  up->pooled = true;
  const std::uint32_t generation = ++up->pool_generation;
  up->dl.arm(idle_timeout, /*close_on_expiry=*/true);
  Upstream* raw = up.get();
  // Anything that completes this read while the connection is idle ends it: EOF or a reset
  // from the backend, bytes nobody asked for, or the expiry closing the socket.
  raw->sock.async_read_some(boost::asio::buffer(&raw->probe, 1),
                            [this, up, generation](boost::system::error_code, std::size_t) {
                              if (!up->pooled || up->pool_generation != generation)
                                return;  // taken meanwhile
                              drop(up.get());
                            });
  idle_.push_back(std::move(up));
}

std::shared_ptr<Upstream> Pool::take() {
  while (!idle_.empty()) {
    std::shared_ptr<Upstream> up = std::move(idle_.back());
    idle_.pop_back();
    up->pooled = false;
    ++up->pool_generation;
    up->dl.disarm();
    boost::system::error_code ignored;
    up->sock.cancel(ignored);  // the watch's read; its handler sees the new generation
    if (!up->sock.is_open() || !quiet(up->sock)) {
      up->sock.close(ignored);
      continue;
    }
    up->reused = true;
    return up;
  }
  return nullptr;
}

void Pool::drop(Upstream* up) {
  up->pooled = false;
  up->dl.disarm();
  boost::system::error_code ignored;
  up->sock.close(ignored);
  auto it = std::find_if(idle_.begin(), idle_.end(), [up](const auto& p) { return p.get() == up; });
  if (it != idle_.end()) idle_.erase(it);
}

void Pool::close_all() {
  boost::system::error_code ignored;
  for (auto& up : idle_) up->sock.close(ignored);
}

}  // namespace llmux::upstream
