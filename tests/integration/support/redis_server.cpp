// SPDX-License-Identifier: Apache-2.0
#include "support/redis_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "core/process.hpp"

namespace llmux::test {

namespace {

using namespace std::chrono_literals;

// A port nothing listens on now (bound to 0, read back, closed).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind/getsockname failed");
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

state::RedisReply convert(const redisReply* r) {
  state::RedisReply out;
  using K = state::RedisReply::Kind;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.kind = K::string;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.kind = K::status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.kind = K::error;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = K::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_NIL:
      out.kind = K::nil;
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = K::array;
      for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      out.kind = K::error;
  }
  return out;
}

}  // namespace

std::string RedisServer::binary() {
  if (const char* env = std::getenv("REDIS_SERVER"); env && *env) return env;
  if (::access("/usr/bin/redis-server", X_OK) == 0) return "/usr/bin/redis-server";
  return "";
}

std::string RedisServer::skip_reason() {
  if (!binary().empty()) return "";
  return "redis-server is not installed (scripts/setup installs Debian's redis-server; or set "
         "REDIS_SERVER to one): the Redis state tests are skipped";
}

RedisServer::RedisServer() {
  std::string why;
  // A port found free may be taken before the server binds it: a few tries.
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = free_port();
    if (launch(why)) return;
  }
  throw std::runtime_error("redis-server did not start: " + why);
}

RedisServer::~RedisServer() {
  stop();
}

void RedisServer::start() {
  if (running()) return;
  std::string why;
  // The old server's socket may linger a moment: retry within a bound.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!launch(why)) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("redis-server did not restart on port " + std::to_string(port_) +
                               ": " + why);
    std::this_thread::sleep_for(100ms);  // retry interval, bounded by the deadline
  }
}

bool RedisServer::launch(std::string& why) {
  const std::string bin = binary();
  if (bin.empty()) {
    why = skip_reason();
    return false;
  }
  const std::string log_path = dir_.path() + "/redis.log";
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  std::vector<std::string> argv{bin,
                                "--port",
                                std::to_string(port_),
                                "--bind",
                                "127.0.0.1",
                                "--save",
                                "",
                                "--appendonly",
                                "no",
                                "--daemonize",
                                "no",
                                "--dir",
                                dir_.path()};
  pid_ = proc::spawn(
      argv, {.stdin_fd = -1, .stdout_fd = log_fd, .stderr_fd = log_fd, .death_signal = SIGKILL});
  if (log_fd >= 0) ::close(log_fd);
  // Up when it answers PING.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (proc::wait_for_exit(pid_, 0ms)) {
      pid_ = -1;
      why = "it exited: " + log();
      return false;
    }
    auto r = command({"PING"});
    if (r.kind == state::RedisReply::Kind::status && r.str == "PONG") return true;
    std::this_thread::sleep_for(20ms);  // polling interval
  }
  stop();
  why = "no PONG within 10 s: " + log();
  return false;
}

void RedisServer::pause() {
  if (pid_ <= 0 || paused_) return;
  ::kill(pid_, SIGSTOP);
  paused_ = true;
}

void RedisServer::resume() {
  if (pid_ <= 0 || !paused_) return;
  ::kill(pid_, SIGCONT);
  paused_ = false;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  resume();  // a stopped process would act on SIGTERM only once continued
  proc::stop(pid_, 5s);
  pid_ = -1;
}

std::string RedisServer::url(int db) const {
  return "redis://127.0.0.1:" + std::to_string(port_) + "/" + std::to_string(db);
}

state::RedisReply RedisServer::command(const std::vector<std::string>& args, int db) const {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (c == nullptr || c->err) {
    auto f = state::RedisReply::failure(c ? c->errstr : "no memory");
    if (c) redisFree(c);
    return f;
  }
  redisSetTimeout(c, tv);
  auto run = [&](const std::vector<std::string>& a) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& s : a) {
      argv.push_back(s.data());
      lens.push_back(s.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    if (r == nullptr) return state::RedisReply::failure(c->errstr);
    auto out = convert(r);
    freeReplyObject(r);
    return out;
  };
  state::RedisReply out;
  if (db != 0) out = run({"SELECT", std::to_string(db)});
  if (db == 0 || out.ok()) out = run(args);
  redisFree(c);
  return out;
}

std::string RedisServer::log() const {
  return read_text_file(dir_.path() + "/redis.log");
}

}  // namespace llmux::test
