// SPDX-License-Identifier: Apache-2.0
#include "support/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace llmux::test {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// Runs the io_context until the pending operation completes (tcp_stream's expiry bounds it).
void run_one(net::io_context& ioc) {
  ioc.restart();
  ioc.run();
}

tcp::endpoint loopback(int port) {
  return tcp::endpoint(net::ip::address_v4::loopback(), static_cast<unsigned short>(port));
}

void connect(net::io_context& ioc, beast::tcp_stream& stream, int port,
             std::chrono::milliseconds timeout) {
  beast::error_code ec;
  stream.expires_after(timeout);
  stream.async_connect(loopback(port), [&](beast::error_code e) { ec = e; });
  run_one(ioc);
  if (ec) throw std::runtime_error("connect to port " + std::to_string(port) + ": " + ec.message());
  stream.socket().set_option(tcp::no_delay(true), ec);
}

http::request<http::string_body> make_request(std::string_view method, std::string_view target,
                                              std::string_view body, const Headers& headers,
                                              int port) {
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  req.set(http::field::user_agent, "llmux-integration-test");
  bool has_ct = false;
  for (const auto& [k, v] : headers) {
    if (iequals(k, "content-type")) has_ct = true;
    req.set(k, v);
  }
  if (!body.empty() && !has_ct) req.set(http::field::content_type, "application/json");
  req.body() = std::string(body);
  if (!body.empty() || method == "POST" || method == "PUT") req.prepare_payload();
  return req;
}

template <typename Fields>
Headers copy_headers(const Fields& f) {
  Headers out;
  for (const auto& h : f) out.emplace_back(std::string(h.name_string()), std::string(h.value()));
  return out;
}

}  // namespace

std::int64_t mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string Response::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

bool Response::has_header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return true;
  return false;
}

const char* to_string(ReadStatus s) {
  switch (s) {
    case ReadStatus::Data:
      return "Data";
    case ReadStatus::End:
      return "End";
    case ReadStatus::Closed:
      return "Closed";
    case ReadStatus::Timeout:
      return "Timeout";
    case ReadStatus::Error:
      return "Error";
  }
  return "?";
}

// ---- HttpClient ----

struct HttpClient::Impl {
  int port;
  std::chrono::milliseconds timeout;
  net::io_context ioc{1};
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buf;
  int opened = 0;

  void ensure_connected() {
    if (stream && stream->socket().is_open()) return;
    stream.emplace(ioc);
    buf.clear();
    connect(ioc, *stream, port, timeout);
    ++opened;
  }
  void drop() {
    if (!stream) return;
    beast::error_code ec;
    stream->socket().shutdown(tcp::socket::shutdown_both, ec);
    stream->socket().close(ec);
    stream.reset();
  }
};

HttpClient::HttpClient(int port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->port = port;
  impl_->timeout = timeout;
}

HttpClient::~HttpClient() {
  impl_->drop();
}

int HttpClient::connections_opened() const {
  return impl_->opened;
}

Response HttpClient::post(std::string_view target, std::string_view body, const Headers& headers) {
  return request("POST", target, body, headers);
}

Response HttpClient::request(std::string_view method, std::string_view target,
                             std::string_view body, const Headers& headers) {
  auto req = make_request(method, target, body, headers, impl_->port);
  // A kept-alive connection may have been closed by the server meanwhile: one retry on a fresh
  // connection when the failure happened before any response byte.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = impl_->stream.has_value() && impl_->stream->socket().is_open();
    impl_->ensure_connected();
    auto& stream = *impl_->stream;
    beast::error_code ec;
    stream.expires_after(impl_->timeout);
    http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
    run_one(impl_->ioc);
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024);
    if (!ec) {
      stream.expires_after(impl_->timeout);
      http::async_read(stream, impl_->buf, parser,
                       [&](beast::error_code e, std::size_t) { ec = e; });
      run_one(impl_->ioc);
    }
    if (ec) {
      impl_->drop();
      const bool retryable = reused && attempt == 0 &&
                             (ec == http::error::end_of_stream || ec == net::error::eof ||
                              ec == net::error::connection_reset || ec == net::error::broken_pipe);
      if (retryable) continue;
      throw std::runtime_error(std::string(method) + " " + std::string(target) + ": " +
                               ec.message());
    }
    auto res = parser.release();
    Response out;
    out.status = static_cast<int>(res.result_int());
    out.headers = copy_headers(res.base());
    out.body = std::move(res.body());
    if (!res.keep_alive()) impl_->drop();
    return out;
  }
  throw std::runtime_error("unreachable");
}

// ---- StreamingResponse ----

struct StreamingResponse::Impl {
  net::io_context ioc{1};
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buf;
  http::response_parser<http::buffer_body> parser;
  bool closed = false;
  std::optional<ReadStatus> pending;  // how the stream ended, after bytes that came with it
};

StreamingResponse::StreamingResponse() : impl_(std::make_unique<Impl>()) {}
StreamingResponse::~StreamingResponse() {
  close();
}

std::unique_ptr<StreamingResponse> StreamingResponse::open(int port, std::string_view method,
                                                           std::string_view target,
                                                           std::string_view body,
                                                           const Headers& headers,
                                                           std::chrono::milliseconds timeout) {
  std::unique_ptr<StreamingResponse> s(new StreamingResponse());
  auto& im = *s->impl_;
  im.stream.emplace(im.ioc);
  connect(im.ioc, *im.stream, port, timeout);
  auto req = make_request(method, target, body, headers, port);
  beast::error_code ec;
  im.stream->expires_after(timeout);
  http::async_write(*im.stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
  run_one(im.ioc);
  if (!ec) {
    im.parser.body_limit(boost::none);
    im.stream->expires_after(timeout);
    http::async_read_header(*im.stream, im.buf, im.parser,
                            [&](beast::error_code e, std::size_t) { ec = e; });
    run_one(im.ioc);
  }
  if (ec) throw std::runtime_error("streaming " + std::string(target) + ": " + ec.message());
  return s;
}

int StreamingResponse::status() const {
  return static_cast<int>(impl_->parser.get().result_int());
}

std::string StreamingResponse::header(std::string_view name) const {
  for (const auto& h : impl_->parser.get().base())
    if (iequals(h.name_string(), name)) return std::string(h.value());
  return {};
}

bool StreamingResponse::chunked() const {
  return impl_->parser.chunked();
}

ReadStatus StreamingResponse::read(Chunk& out, std::chrono::milliseconds timeout) {
  auto& im = *impl_;
  out.bytes.clear();
  if (im.pending) {
    const ReadStatus st = *im.pending;
    im.pending.reset();
    im.closed = true;
    return st;
  }
  if (im.closed) return ReadStatus::Closed;
  const auto deadline = Clock::now() + timeout;
  char buf[16384];
  // A read may parse only framing (a chunk header): keep going until body bytes or the end.
  for (int guard = 0; guard < 10000; ++guard) {
    if (im.parser.is_done()) return ReadStatus::End;
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return ReadStatus::Timeout;
    im.parser.get().body().data = buf;
    im.parser.get().body().size = sizeof buf;
    beast::error_code ec;
    im.stream->expires_after(left);
    http::async_read_some(*im.stream, im.buf, im.parser,
                          [&](beast::error_code e, std::size_t) { ec = e; });
    run_one(im.ioc);
    if (ec == http::error::need_buffer) ec = {};
    const std::size_t n = sizeof buf - im.parser.get().body().size;
    if (n > 0) {
      out.bytes.assign(buf, n);
      out.t_ns = mono_ns();
      // An error after some bytes is reported by the next call.
      if (ec) im.pending = ec == beast::error::timeout ? ReadStatus::Timeout : ReadStatus::Closed;
      return ReadStatus::Data;
    }
    if (!ec) continue;
    if (ec == beast::error::timeout) {
      im.closed = true;
      return ReadStatus::Timeout;
    }
    im.closed = true;
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec == net::error::eof || ec == net::error::connection_reset)
      return ReadStatus::Closed;
    return ReadStatus::Error;
  }
  return ReadStatus::Error;
}

void StreamingResponse::close() {
  auto& im = *impl_;
  if (!im.stream) return;
  beast::error_code ec;
  im.stream->socket().close(ec);
  im.stream.reset();
  im.closed = true;
}

// ---- SSE ----

std::vector<SseEvent> SseParser::feed(std::string_view bytes, std::int64_t t_ns) {
  std::vector<SseEvent> out;
  parser_.feed(bytes, [&](const openai::SseEvent& e) {
    out.push_back(SseEvent{std::string(e.event), std::string(e.data), t_ns});
  });
  // Stricter than a browser: what llmux and its simulator send ends every line in LF.
  if (parser_.cr_line_ends() > 0)
    throw std::runtime_error("SSE line ended in CR or CRLF: the stream is not what llmux sends");
  if (parser_.failed()) throw std::runtime_error("SSE line or event over the reader's limits");
  return out;
}

std::string SseResult::raw() const {
  std::string s;
  for (const auto& c : chunks) s += c.bytes;
  return s;
}

SseResult read_sse(StreamingResponse& s, std::size_t max_events,
                   std::chrono::milliseconds idle_timeout,
                   std::chrono::milliseconds total_timeout) {
  SseResult r;
  SseParser p;
  const auto deadline = Clock::now() + total_timeout;
  for (;;) {
    if (r.events.size() >= max_events) {
      r.end = ReadStatus::Data;
      return r;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      r.end = ReadStatus::Timeout;
      return r;
    }
    Chunk c;
    const ReadStatus st = s.read(c, std::min(idle_timeout, left));
    if (st != ReadStatus::Data) {
      r.end = st;
      return r;
    }
    for (auto& ev : p.feed(c.bytes, c.t_ns)) r.events.push_back(std::move(ev));
    r.chunks.push_back(std::move(c));
  }
}

// ---- RawConnection ----

RawConnection::RawConnection(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("connect to port " + std::to_string(port) + ": " + why);
  }
  // A send that cannot make progress fails after this long instead of hanging the test.
  timeval tv{30, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawConnection::~RawConnection() {
  close();
}

bool RawConnection::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

namespace {
// Reads what is available within `deadline`; returns false once the peer closed or failed.
bool read_some(int fd, std::string& out, Clock::time_point deadline, bool& timed_out) {
  timed_out = false;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) {
    timed_out = true;
    return true;
  }
  pollfd p{fd, POLLIN, 0};
  const int r = ::poll(&p, 1, static_cast<int>(left));
  if (r < 0 && errno == EINTR) return true;
  if (r == 0) {
    timed_out = true;
    return true;
  }
  char buf[8192];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  if (n > 0) {
    out.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  if (n < 0 && errno == EINTR) return true;
  return false;
}

// True when `bytes` holds a complete response (header, and Content-Length body if any).
bool complete_response(std::string_view bytes) {
  const auto hdr_end = bytes.find("\r\n\r\n");
  if (hdr_end == std::string_view::npos) return false;
  Response r = parse_raw_response(bytes);
  if ((r.status >= 100 && r.status < 200) || r.status == 204 || r.status == 304) return true;
  const std::string cl = r.header("content-length");
  if (cl.empty()) return false;  // read to close
  return bytes.size() - (hdr_end + 4) >= std::stoull(cl);
}
}  // namespace

std::string RawConnection::read_until_close(std::chrono::milliseconds timeout, bool* closed) {
  std::string out;
  const auto deadline = Clock::now() + timeout;
  if (closed) *closed = false;
  for (int guard = 0; guard < 100000; ++guard) {
    bool timed_out = false;
    if (!read_some(fd_, out, deadline, timed_out)) {
      if (closed) *closed = true;
      return out;
    }
    if (timed_out) return out;
  }
  return out;
}

std::string RawConnection::read_response(std::chrono::milliseconds timeout) {
  std::string out;
  const auto deadline = Clock::now() + timeout;
  for (int guard = 0; guard < 100000; ++guard) {
    if (complete_response(out)) return out;
    bool timed_out = false;
    if (!read_some(fd_, out, deadline, timed_out) || timed_out) return out;
  }
  return out;
}

void RawConnection::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void RawConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Response parse_raw_response(std::string_view bytes) {
  Response r;
  const auto hdr_end = bytes.find("\r\n\r\n");
  std::string_view head = bytes.substr(0, hdr_end);
  const auto first_nl = head.find("\r\n");
  std::string_view status_line = head.substr(0, first_nl);
  if (status_line.starts_with("HTTP/1.") && status_line.size() >= 12)
    r.status = std::atoi(std::string(status_line.substr(9, 3)).c_str());
  std::string_view rest =
      first_nl == std::string_view::npos ? std::string_view() : head.substr(first_nl + 2);
  while (!rest.empty()) {
    const auto nl = rest.find("\r\n");
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    r.headers.emplace_back(std::string(line.substr(0, colon)), std::string(v));
  }
  if (hdr_end == std::string_view::npos) return r;
  std::string_view body = bytes.substr(hdr_end + 4);
  const std::string cl = r.header("content-length");
  if (!cl.empty()) body = body.substr(0, std::stoull(cl));
  r.body = std::string(body);
  return r;
}

}  // namespace llmux::test
