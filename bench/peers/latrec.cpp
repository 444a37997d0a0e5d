// SPDX-License-Identifier: Apache-2.0
// latrec: the load of benchmark (b) (closed loop, keep-alive, one POST in flight per connection,
// as `wrk -t1 -cN`), recording every request: when it was sent, how long its answer took and on
// which connection. bench/gateway_vs_peers.sh section (e) builds and runs it; gvp.py tail reads
// the records. wrk gives percentiles only; where a tail comes from (all connections delayed at
// once, or single requests now and then, or something periodic) needs every request in time order.
//
//   latrec PORT CONNECTIONS SECONDS WARMUP_S OUT BODY [PATH]
//
// OUT: records of 24 bytes, little-endian: u64 sent (ns after the warm-up), u64 latency (ns, send
// to last byte of the answer), u32 connection, u32 status. Requests sent during the warm-up are
// not recorded. A summary JSON line goes to stdout. Loopback only (127.0.0.1). Ends after
// WARMUP_S + SECONDS, or with status 1 when nothing is answered for 10 s or an answer cannot be
// read (no Content-Length, larger than the buffer).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(t.tv_nsec);
}

struct Record {
  std::uint64_t sent, latency;
  std::uint32_t conn, status;
};
static_assert(sizeof(Record) == 24);

struct Conn {
  int fd = -1;
  std::uint64_t sent = 0;
  std::size_t have = 0;
  std::vector<char> buf = std::vector<char>(16384);
};

// `sys`: a system call failed, errno says why.
[[noreturn]] void die(const char* what, bool sys = true) {
  std::fprintf(stderr, "latrec: %s%s%s\n", what, sys ? ": " : "", sys ? std::strerror(errno) : "");
  std::exit(1);
}

int dial(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("connect");
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// The length of a whole answer at the start of `s` (0: not all here yet), its status in `status`.
std::size_t answer_length(std::string_view s, std::uint32_t& status) {
  const std::size_t end = s.find("\r\n\r\n");
  if (end == std::string_view::npos) return 0;
  if (s.size() < 12 || s.substr(0, 5) != "HTTP/") die("not an HTTP answer", false);
  status = static_cast<std::uint32_t>(std::atoi(std::string(s.substr(9, 3)).c_str()));
  std::size_t pos = s.find("\r\n") + 2;
  while (pos < end) {
    const std::size_t eol = s.find("\r\n", pos);
    std::string_view line = s.substr(pos, eol - pos);
    if (line.size() > 15 && strncasecmp(line.data(), "content-length:", 15) == 0)
      return end + 4 + std::strtoull(std::string(line.substr(15)).c_str(), nullptr, 10);
    pos = eol + 2;
  }
  die("an answer without Content-Length", false);
}

void send_request(Conn& c, const std::string& req) {
  c.sent = now_ns();
  const ssize_t n = ::send(c.fd, req.data(), req.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(req.size()))
    die("send (the request must fit the socket buffer)", false);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: latrec PORT CONNECTIONS SECONDS WARMUP_S OUT BODY [PATH]\n");
    return 2;
  }
  const int port = std::atoi(argv[1]), nconn = std::atoi(argv[2]);
  const double secs = std::atof(argv[3]), warm = std::atof(argv[4]);
  const std::string body = argv[6], path = argc > 7 ? argv[7] : "/v1/completions";
  if (port <= 0 || nconn <= 0 || secs <= 0 || warm < 0) {
    std::fprintf(stderr, "latrec: bad arguments\n");
    return 2;
  }
  const std::string req =
      "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<Conn> conns(static_cast<std::size_t>(nconn));
  std::vector<Record> recs;
  recs.reserve(static_cast<std::size_t>(secs * 200'000) + 1024);
  const std::uint64_t t0 = now_ns(), measure = t0 + static_cast<std::uint64_t>(warm * 1e9),
                      end = measure + static_cast<std::uint64_t>(secs * 1e9);
  auto open = [&](std::uint32_t i) {
    Conn& c = conns[i];
    c.fd = dial(port);
    c.have = 0;
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u32 = i;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &e) != 0) die("epoll_ctl");
    send_request(c, req);
  };
  for (std::uint32_t i = 0; i < conns.size(); ++i) open(i);
  std::uint64_t answered = 0, reconnects = 0, not_2xx = 0, last_answer = t0;
  std::vector<epoll_event> evs(256);
  for (;;) {
    const std::uint64_t t = now_ns();
    if (t >= end) break;
    if (t - last_answer > 10'000'000'000u) die("no answer for 10 s", false);
    const int k = ::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 100);
    if (k < 0 && errno != EINTR) die("epoll_wait");
    for (int j = 0; j < k; ++j) {
      const std::uint32_t i = evs[static_cast<std::size_t>(j)].data.u32;
      Conn& c = conns[i];
      const ssize_t n = ::recv(c.fd, c.buf.data() + c.have, c.buf.size() - c.have, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {  // the proxy closed the connection: the request in flight is lost; reconnect
        ::close(c.fd);
        ++reconnects;
        open(i);
        continue;
      }
      c.have += static_cast<std::size_t>(n);
      for (;;) {
        std::uint32_t status = 0;
        const std::size_t len = answer_length({c.buf.data(), c.have}, status);
        if (len == 0) {
          if (c.have == c.buf.size()) die("an answer larger than the buffer", false);
          break;
        }
        if (len > c.have) {
          if (len > c.buf.size()) die("an answer larger than the buffer", false);
          break;
        }
        const std::uint64_t done = now_ns();
        last_answer = done;
        ++answered;
        if (c.sent >= measure) {
          recs.push_back({c.sent - measure, done - c.sent, i, status});
          if (status < 200 || status > 299) ++not_2xx;
        }
        std::memmove(c.buf.data(), c.buf.data() + len, c.have - len);
        c.have -= len;
        send_request(c, req);
      }
    }
  }
  std::FILE* f = std::fopen(argv[5], "wb");
  if (!f || std::fwrite(recs.data(), sizeof(Record), recs.size(), f) != recs.size() ||
      std::fclose(f) != 0)
    die("writing the records");
  std::printf(
      "{\"requests\":%zu,\"not_2xx\":%llu,\"reconnects\":%llu,\"seconds\":%.3f,\"connections\":%d}"
      "\n",
      recs.size(), static_cast<unsigned long long>(not_2xx),
      static_cast<unsigned long long>(reconnects), secs, nconn);
  return 0;
}
