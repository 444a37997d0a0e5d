// SPDX-License-Identifier: Apache-2.0
#pragma once
// A real redis-server (Debian's /usr/bin/redis-server, or $REDIS_SERVER) for the tests of the
// Redis-backed state (issue 15): started on a free loopback port with nothing persisted, stopped
// by its pid, restartable on the same port (Redis down, then back). Every wait is bounded.
//
// Not thread-safe: one test thread owns each object.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "state/redis_client.hpp"
#include "support/test_util.hpp"

namespace llmux::test {

class RedisServer {
 public:
  /// The redis-server binary ("" when not installed).
  static std::string binary();
  /// Why the Redis tests are skipped, or "" when redis-server is there.
  static std::string skip_reason();

  /// Starts redis-server on a free 127.0.0.1 port and waits until it answers PING; throws
  /// std::runtime_error (with its log) when it does not.
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  /// Stops it (SIGTERM, then SIGKILL after 5 s) and reaps it. No-op when not running.
  void stop();
  /// Starts it again on the same port (after stop()).
  void start();
  bool running() const { return pid_ > 0; }
  /// SIGSTOP: the server keeps its connections and its data but answers nothing (a Redis that
  /// is slow, not gone) until resume() (SIGCONT). stop() resumes it first.
  void pause();
  void resume();

  int port() const { return port_; }
  /// redis://127.0.0.1:PORT/db
  std::string url(int db = 0) const;

  /// One command on a fresh blocking connection (SELECT `db` first when not 0); a `failed` reply
  /// when the server does not answer within 2 s.
  state::RedisReply command(const std::vector<std::string>& args, int db = 0) const;

  /// What the server wrote to its log so far.
  std::string log() const;

 private:
  bool launch(std::string& why);

  TempDir dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

}  // namespace llmux::test
