// SPDX-License-Identifier: Apache-2.0
#pragma once
// One Redis connection, driven asynchronously: hiredis's async API (redisAsyncContext) on an Asio
// io_context of its own, run by one dedicated thread, so that no gateway worker loop ever blocks
// on Redis. Commands from every thread are pipelined on the one connection.
//
// The adapter: the context's fd is wrapped in a posix::stream_descriptor (released, never closed:
// hiredis owns the fd); hiredis's ev.addRead/delRead/addWrite/delWrite/cleanup hooks become
// async_wait(wait_read / wait_write), re-armed while hiredis wants them.
//
// Degrade, never fail: every wait is bounded. While the connection is down (or still connecting)
// a command completes at once with a `failed` reply; a command that Redis does not answer within
// its timeout completes with `failed` (the connection stays: a slow Redis is not a dead one) and
// its late reply is dropped. The connection comes back by itself: reconnects with capped
// exponential backoff (backoff_min, doubling, up to backoff_max), `SELECT db` (and `AUTH` when the
// URL has a password) before it counts as up. One log line per transition (up -> down,
// down -> up), none per command.
//
// Thread safety: every public member may be called from any thread. On the Redis thread itself
// (in an on_up listener or a fire() callback) stop() and the destructor do not wait for it (it
// ends on its own, after the current handler), and remove_on_up() must not be called there.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

namespace llmux::state {

/// A Redis reply, or the reason there is none (`failed`: down, timed out, disconnected).
struct RedisReply {
  enum class Kind { nil, integer, string, status, array, error, failed };
  Kind kind = Kind::failed;
  std::int64_t integer = 0;
  std::string str;  // string and status replies; the error text of `error` and `failed`
  std::vector<RedisReply> elements;

  /// Redis answered, and not with an error.
  bool ok() const { return kind != Kind::error && kind != Kind::failed; }
  bool failed() const { return kind == Kind::failed; }

  static RedisReply failure(std::string why) {
    RedisReply reply;
    reply.str = std::move(why);
    return reply;
  }
};

/// `redis://[[user:]password@]host[:port][/db]`: port 6379 and db 0 when absent; the host may be
/// a name, an IPv4 address or a bracketed IPv6 address.
struct RedisUrl {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  std::string user, password;  // AUTH [user] password after connecting, when password is set

  /// nullopt when `url` is not one; `error` (when given) then says why.
  static std::optional<RedisUrl> parse(std::string_view url, std::string* error = nullptr);
  /// redis://host:port/db, without the password (for logs).
  std::string str() const;
};

struct RedisOptions {
  RedisUrl url;
  /// A connection attempt (TCP connect and the AUTH/SELECT handshake) not done by then is given
  /// up and retried.
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds backoff_min{100};
  std::chrono::milliseconds backoff_max{2000};
  /// Commands sent and not answered yet; beyond it a command fails at once.
  std::size_t max_inflight = 100000;
};

class RedisClient {
 public:
  /// Starts the Redis thread and the first connection attempt; returns at once (the client is
  /// down until the connection is made: see up()).
  explicit RedisClient(RedisOptions opts);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  /// Disconnects (commands still waiting complete as failed) and joins the Redis thread. Later
  /// commands fail at once. Idempotent.
  void stop();

  /// The connection is up and its handshake done.
  bool up() const;
  const RedisUrl& url() const;

  /// Sends `args` (a command and its arguments, binary-safe) and completes with the reply on the
  /// handler's associated executor (a coroutine's own), or with a `failed` reply when Redis is
  /// down, or has not answered within `timeout`.
  template <typename Token>
  auto async_command(std::vector<std::string> args, std::chrono::milliseconds timeout,
                     Token&& token) {
    return boost::asio::async_initiate<Token, void(RedisReply)>(
        [this](auto handler, std::vector<std::string> command_args,
               std::chrono::milliseconds command_timeout) {
          using H = std::decay_t<decltype(handler)>;
          submit(std::move(command_args), command_timeout,
                 std::make_unique<CompletionImpl<H>>(std::move(handler)));
        },
        token, std::move(args), timeout);
  }
  /// async_command for a coroutine.
  boost::asio::awaitable<RedisReply> command(std::vector<std::string> args,
                                             std::chrono::milliseconds timeout);

  /// Sends `args` and does not wait. `on_done`, when given, is called with the reply (or the
  /// failure: down, disconnected before the reply) on the Redis thread: it must be quick and must
  /// not block. After stop() it is called at once, on the caller's thread, with a failure.
  void fire(std::vector<std::string> args, std::function<void(const RedisReply&)> on_done = {});

  /// Calls `listener` on the Redis thread each time the connection comes up (the first time
  /// included), before any command sent after that; returns an id for remove_on_up().
  std::size_t on_up(std::function<void()> listener);
  /// After it returns, the listener is not running and will not be called.
  void remove_on_up(std::size_t id);

  struct Counters {
    std::uint64_t errors = 0;      // error replies, and commands cut off by a disconnect
    std::uint64_t timeouts = 0;    // commands not answered within their timeout
    std::uint64_t refused = 0;     // commands failed at once: down, stopped, too many in flight
    std::uint64_t reconnects = 0;  // connections made after the first one
    std::uint64_t connect_failures = 0;  // attempts that did not reach up
    std::uint64_t inflight = 0;          // now: commands sent and not answered yet
  };
  Counters counters() const;

  /// Holds a handler until the Redis thread completes it (always exactly once).
  struct Completion {
    virtual ~Completion() = default;
    virtual void complete(RedisReply reply) = 0;
  };

 private:
  template <typename Handler>
  struct CompletionImpl final : Completion {
    using Executor = boost::asio::associated_executor_t<Handler>;
    explicit CompletionImpl(Handler&& callback)
        : handler(std::move(callback)), work(boost::asio::get_associated_executor(handler)) {}
    void complete(RedisReply reply) override {
      Executor executor = work.get_executor();
      boost::asio::post(executor, [callback = std::move(handler), reply = std::move(reply),
                                   work_guard = std::move(work)]() mutable {
        std::move(callback)(std::move(reply));
      });
    }
    Handler handler;
    boost::asio::executor_work_guard<Executor> work;
  };

  void submit(std::vector<std::string> args, std::chrono::milliseconds timeout,
              std::unique_ptr<Completion> completion);

  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace llmux::state
