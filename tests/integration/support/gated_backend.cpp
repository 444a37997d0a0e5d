// SPDX-License-Identifier: Apache-2.0
#include "support/gated_backend.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace llmux::test {
namespace {

using Clock = std::chrono::steady_clock;
// The longest any backend connection waits for the test (a release, request bytes): a bound
// against hangs, never a timing threshold.
constexpr auto kMaxWait = std::chrono::seconds(30);

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}

}  // namespace

std::string ReceivedRequest::header(std::string_view name) const {
  const std::string n = lower(name);
  for (const auto& [k, v] : headers)
    if (k == n) return v;
  return {};
}

bool ReceivedRequest::has_header(std::string_view name) const {
  const std::string n = lower(name);
  for (const auto& [k, v] : headers)
    if (k == n) return true;
  return false;
}

GatedBackend::GatedBackend(Options opts) : opts_(opts) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(listen_fd_);
    throw std::runtime_error("gated backend: cannot listen: " + why);
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

GatedBackend::~GatedBackend() {
  stop_ = true;
  cv_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(conn_threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
  ::close(listen_fd_);
}

void GatedBackend::release(int n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ += n;
  }
  cv_.notify_all();
}

int GatedBackend::events_sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_;
}

bool GatedBackend::wait_events_sent(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return sent_ >= n; });
}

int GatedBackend::connections_accepted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepted_;
}

int GatedBackend::connections_closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

std::vector<ReceivedRequest> GatedBackend::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

bool GatedBackend::wait_requests(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

void GatedBackend::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, 20);  // a polling interval, so the destructor is seen
    if (r <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    ++accepted_;
    conn_fds_.push_back(fd);
    conn_threads_.emplace_back([this, fd, n = accepted_] { serve(fd, n); });
  }
}

bool GatedBackend::send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads one request (header, then a Content-Length or chunked body). False when the peer
// closed (or failed) before a whole request, or on stop/timeout.
bool GatedBackend::read_request(int fd, std::string& buf, ReceivedRequest& out) {
  const auto deadline = Clock::now() + kMaxWait;
  const auto idle_close = opts_.close_idle_after.count() > 0 && buf.empty()
                              ? Clock::now() + opts_.close_idle_after
                              : Clock::time_point::max();
  auto fill = [&]() -> bool {
    while (!stop_ && Clock::now() < deadline) {
      if (buf.empty() && Clock::now() >= idle_close) return false;  // idle: close it
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, 20);
      if (r < 0 && errno != EINTR) return false;
      if (r <= 0) continue;
      char tmp[8192];
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf.append(tmp, static_cast<std::size_t>(n));
      return true;
    }
    return false;
  };
  std::size_t hdr_end;
  while ((hdr_end = buf.find("\r\n\r\n")) == std::string::npos)
    if (!fill()) return false;
  std::string_view head(buf.data(), hdr_end);
  const auto first_nl = head.find("\r\n");
  std::string_view line = head.substr(0, first_nl);
  const auto sp1 = line.find(' ');
  const auto sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 <= sp1) return false;
  out.method = std::string(line.substr(0, sp1));
  out.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  std::string_view rest =
      first_nl == std::string_view::npos ? std::string_view() : head.substr(first_nl + 2);
  while (!rest.empty()) {
    const auto nl = rest.find("\r\n");
    std::string_view h = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 2);
    const auto colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    out.headers.emplace_back(lower(h.substr(0, colon)), std::string(trim(h.substr(colon + 1))));
  }
  buf.erase(0, hdr_end + 4);
  if (lower(out.header("transfer-encoding")).find("chunked") != std::string::npos) {
    for (;;) {
      std::size_t nl;
      while ((nl = buf.find("\r\n")) == std::string::npos)
        if (!fill()) return false;
      const std::size_t size = std::strtoul(buf.substr(0, nl).c_str(), nullptr, 16);
      while (buf.size() < nl + 2 + size + 2)
        if (!fill()) return false;
      out.body.append(buf, nl + 2, size);
      buf.erase(0, nl + 2 + size + 2);
      if (size == 0) break;  // (no trailers expected)
    }
  } else if (const std::string cl = out.header("content-length"); !cl.empty()) {
    const std::size_t size = std::stoull(cl);
    while (buf.size() < size)
      if (!fill()) return false;
    out.body = buf.substr(0, size);
    buf.erase(0, size);
  }
  return true;
}

bool GatedBackend::wait_gate() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, kMaxWait, [&] { return stop_ || released_ > sent_; }) || stop_)
    return false;
  ++sent_;  // counted before the write, so a client that has the event sees it counted
  return true;
}

void GatedBackend::set_metrics(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  metrics_ = std::move(text);
}

void GatedBackend::serve(int fd, int connection) {
  std::string buf;
  for (int answered = 0;; ++answered) {
    ReceivedRequest req;
    if (!read_request(fd, buf, req)) break;
    req.connection = connection;
    const bool client_close = lower(req.header("connection")).find("close") != std::string::npos;
    if (req.method == "GET" && req.target == "/metrics") {
      std::string metrics;
      {
        std::lock_guard<std::mutex> lock(mu_);
        metrics = metrics_;
      }
      const bool sent =
          metrics.empty()
              ? send_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
              : send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                                 std::to_string(metrics.size()) + "\r\n\r\n" + metrics);
      if (!sent || client_close) break;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(req);
    }
    cv_.notify_all();
    if (opts_.drop_request_after >= 0 && answered >= opts_.drop_request_after) break;
    bool ok = true;
    if (!opts_.interim.empty()) {
      ok = send_all(fd, opts_.interim);
      std::this_thread::sleep_for(opts_.interim_pause);  // the final response comes later
    }
    switch (opts_.mode) {
      case Mode::GatedSse: {
        ok = send_all(fd,
                      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                      "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (int k = 0; ok && k <= opts_.sse_events; ++k) {
          if (!wait_gate()) {
            ok = false;
            break;
          }
          cv_.notify_all();
          const std::string event = k < opts_.sse_events
                                        ? "data: {\"k\":" + std::to_string(k) + "}\n\n"
                                        : std::string("data: [DONE]\n\n");
          ok = send_all(fd, chunk(event) + (k == opts_.sse_events ? "0\r\n\r\n" : ""));
        }
        break;
      }
      case Mode::Echo: {
        boost::json::object headers;
        for (const auto& [k, v] : req.headers) {
          if (auto* prev = headers.if_contains(k)) {
            *prev = std::string(prev->as_string()) + ", " + v;
          } else {
            headers[k] = v;
          }
        }
        const std::string body = boost::json::serialize(boost::json::object{{"method", req.method},
                                                                            {"target", req.target},
                                                                            {"headers", headers},
                                                                            {"body", req.body}});
        if (opts_.close_delimited) {
          ok = send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body);
          ::shutdown(fd, SHUT_WR);  // the end of the body; go on reading (see Options)
          break;
        }
        ok = send_all(fd,
                      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      "Keep-Alive: timeout=60\r\nConnection: keep-alive, X-Hop-Resp\r\n"
                      "X-Hop-Resp: secret\r\nX-End-To-End: kept\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body);
        break;
      }
      case Mode::Garbage:
        send_all(fd, "THIS IS NOT HTTP AT ALL\r\n\r\n");
        ok = false;
        break;
      case Mode::CloseWithoutResponse:
        ok = false;
        break;
    }
    if (!ok || opts_.close_after_response || client_close) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(conn_fds_, fd);
    ::close(fd);
    ++closed_;
  }
  cv_.notify_all();
}

int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("closed_port: " + why);
  }
  // The socket stays bound (never listening) for the process's life: a connect is refused, and
  // no server another test starts meanwhile can take the port (closing it let a concurrent test
  // bind it, and requests meant for a dead backend reached that test's server).
  return ntohs(addr.sin_port);
}

}  // namespace llmux::test
