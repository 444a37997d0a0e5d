// SPDX-License-Identifier: Apache-2.0
// RedisClient: hiredis's async context on an io_context of its own (see redis_client.hpp; the
// event adapter and the reply conversion are in hiredis_asio.hpp).
//
// Everything that touches hiredis runs on the Redis thread: the public calls post to it. Each
// command's state (Op) is shared by hiredis's callback (through a heap-held shared_ptr in its
// privdata, freed by that callback, which hiredis calls exactly once: with the reply, or with
// NULL when the context goes) and by its timeout timer; whichever comes first completes it, the
// other finds it done. A reply arriving after the timeout so touches nothing that is gone.
#include "state/redis_client.hpp"

#include "state/hiredis_asio.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>

#include <csignal>
#include <cstdint>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace llmux::state {

namespace net = boost::asio;
using std::chrono::milliseconds;

struct RedisClient::Impl {
  // One command awaiting its reply: the completion and its timeout.
  struct Op {
    Op(net::io_context& io, std::unique_ptr<Completion> awaiting)
        : completion(std::move(awaiting)), timer(io) {}
    std::unique_ptr<Completion> completion;          // null for fire()
    std::function<void(const RedisReply&)> on_done;  // fire()'s
    net::steady_timer timer;
    bool done = false;
  };

  enum class Conn { idle, connecting, handshaking, up };

  explicit Impl(RedisOptions options)
      : opts(std::move(options)),
        work(net::make_work_guard(io)),
        reconnect_timer(io),
        connect_timer(io) {
    backoff = opts.backoff_min;
  }

  RedisOptions opts;
  net::io_context io;
  net::executor_work_guard<net::io_context::executor_type> work;
  std::thread thread;
  std::atomic<bool> stopped{false};  // stop() called: public calls fail at once
  std::atomic<bool> is_up{false};

  // Redis thread only.
  redisAsyncContext* ac = nullptr;
  std::shared_ptr<HiredisWatch> watch;  // the context's event adapter (state/hiredis_asio.hpp)
  Conn conn = Conn::idle;
  bool stopping = false;
  bool ever_up = false;
  enum class Logged { none, up, down } logged = Logged::none;
  milliseconds backoff;
  std::atomic<std::size_t> inflight{0};  // written here only; read by counters()
  std::uint64_t generation = 0;          // connection attempts
  net::steady_timer reconnect_timer, connect_timer;
  std::string last_error;

  std::atomic<std::uint64_t> errors{0}, timeouts{0}, refused{0}, reconnects{0}, connect_failures{0};

  std::mutex listeners_mu;
  std::vector<std::pair<std::size_t, std::function<void()>>> listeners;
  std::size_t next_listener = 1;

  // --- connection life -------------------------------------------------------------------------

  void connect() {
    if (stopping) return;
    conn = Conn::connecting;
    redisAsyncContext* context = redisAsyncConnect(opts.url.host.c_str(), opts.url.port);
    if (context == nullptr) {
      attempt_failed("out of memory");
      return;
    }
    if (context->err) {
      std::string why = context->errstr;
      redisAsyncFree(context);
      attempt_failed(why);
      return;
    }
    // A peer that vanished (no RST: a host gone) is found within seconds, not TCP's minutes:
    // keepalive probes when idle, and unacknowledged writes bounded by TCP_USER_TIMEOUT.
    redisEnableKeepAlive(&context->c);
    const unsigned int user_timeout_ms = 10000;
    ::setsockopt(context->c.fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
                 sizeof user_timeout_ms);
    auto watcher = std::make_shared<HiredisWatch>(
        io, context, [this](redisAsyncContext* freed) { on_freed(freed); });
    if (const boost::system::error_code ec = watcher->attach()) {
      redisAsyncFree(context);  // no hooks yet: nothing calls back
      attempt_failed("cannot watch the socket: " + ec.message());
      return;
    }
    context->data = this;
    ac = context;
    watch = watcher;
    // No disconnect callback: the cleanup hook (on_freed) sees every end of a context, and
    // before hiredis's onDisconnect would.
    redisAsyncSetConnectCallback(context, &Impl::on_connect);  // arms the write wait: connected
                                                               // when writable
    const std::uint64_t gen = ++generation;
    connect_timer.expires_after(opts.connect_timeout);
    connect_timer.async_wait([this, context, gen](const boost::system::error_code& error) {
      if (error || gen != generation || ac != context || conn == Conn::up) return;
      last_error = "connect timed out";
      redisAsyncFree(context);  // -> cleanup -> on_freed
    });
  }

  static void on_connect(const redisAsyncContext* context, int status) {
    auto* self = static_cast<Impl*>(context->data);
    if (status != REDIS_OK) {
      self->last_error = context->errstr ? context->errstr : "connect failed";
      return;  // hiredis frees the context next: cleanup -> on_freed
    }
    self->handshake(const_cast<redisAsyncContext*>(context));
  }

  // AUTH and SELECT when asked for, then PING: up once PING answers.
  void handshake(redisAsyncContext* context) {
    conn = Conn::handshaking;
    auto send = [&](std::vector<std::string> args, bool last) {
      std::vector<const char*> argv;
      std::vector<std::size_t> lens;
      for (const auto& arg : args) {
        argv.push_back(arg.data());
        lens.push_back(arg.size());
      }
      redisAsyncCommandArgv(context, &Impl::on_handshake, reinterpret_cast<void*>(last ? 1 : 0),
                            static_cast<int>(argv.size()), argv.data(), lens.data());
    };
    if (!opts.url.password.empty()) {
      if (opts.url.user.empty())
        send({"AUTH", opts.url.password}, false);
      else
        send({"AUTH", opts.url.user, opts.url.password}, false);
    }
    if (opts.url.db != 0) send({"SELECT", std::to_string(opts.url.db)}, false);
    send({"PING"}, true);
  }

  static void on_handshake(redisAsyncContext* context, void* raw_reply, void* priv) {
    auto* self = static_cast<Impl*>(context->data);
    auto* reply = static_cast<redisReply*>(raw_reply);
    if (reply == nullptr || (context->c.flags & (REDIS_DISCONNECTING | REDIS_FREEING))) return;
    if (reply->type == REDIS_REPLY_ERROR) {
      self->last_error = std::string("handshake: ") + std::string(reply->str, reply->len);
      redisAsyncFree(context);  // in a callback: hiredis frees it when the callback returns
      return;
    }
    if (priv != nullptr) self->become_up();
  }

  void become_up() {
    conn = Conn::up;
    last_error.clear();
    is_up = true;
    backoff = opts.backoff_min;
    connect_timer.cancel();
    if (logged == Logged::down)
      spdlog::warn("redis {}: up{}", opts.url.str(), ever_up ? " again" : " (was unreachable)");
    else if (logged == Logged::none)
      spdlog::info("redis {}: connected", opts.url.str());
    if (ever_up) ++reconnects;
    ever_up = true;
    logged = Logged::up;
    std::lock_guard lock(listeners_mu);
    for (auto& [id, fn] : listeners) fn();
  }

  // The context is being freed (cleanup hook: it is still readable, not usable).
  void on_freed(redisAsyncContext* context) {
    if (context != ac) return;
    if (context->err && context->errstr && last_error.empty()) last_error = context->errstr;
    ac = nullptr;
    watch.reset();
    connect_timer.cancel();
    inflight = 0;  // hiredis has called every pending callback (with NULL) by now
    const bool was_up = conn == Conn::up;
    conn = Conn::idle;
    is_up = false;
    if (stopping) return;
    if (was_up) {
      backoff = opts.backoff_min;
      note_down();
      schedule_reconnect();
    } else {
      attempt_failed(last_error.empty() ? "connection closed" : last_error);
    }
  }

  void attempt_failed(const std::string& why) {
    conn = Conn::idle;
    ++connect_failures;
    if (last_error.empty()) last_error = why;
    note_down();
    schedule_reconnect();
    backoff = std::min(backoff * 2, opts.backoff_max);
  }

  void note_down() {
    if (logged != Logged::down) {
      spdlog::warn("redis {}: down ({}); reconnecting (backoff {}..{} ms), local state meanwhile",
                   opts.url.str(), last_error.empty() ? "connection closed" : last_error,
                   opts.backoff_min.count(), opts.backoff_max.count());
      logged = Logged::down;
    }
    last_error.clear();
  }

  void schedule_reconnect() {
    if (stopping) return;
    reconnect_timer.expires_after(backoff);
    reconnect_timer.async_wait([this](const boost::system::error_code& ec) {
      if (!ec && !stopping && ac == nullptr) connect();
    });
  }

  // --- commands --------------------------------------------------------------------------------

  static void on_reply(redisAsyncContext* context, void* raw_reply, void* priv) {
    auto* self = static_cast<Impl*>(context->data);
    std::unique_ptr<std::shared_ptr<Op>> holder(static_cast<std::shared_ptr<Op>*>(priv));
    const std::shared_ptr<Op>& op = *holder;
    if (self->inflight > 0) --self->inflight;
    auto* reply = static_cast<redisReply*>(raw_reply);
    RedisReply out = reply ? to_redis_reply(reply) : RedisReply::failure("disconnected");
    if (out.kind == RedisReply::Kind::error || out.kind == RedisReply::Kind::failed) ++self->errors;
    if (op->done) return;  // timed out already: the late reply is dropped
    op->done = true;
    op->timer.cancel();
    if (op->on_done) op->on_done(out);
    if (op->completion) op->completion->complete(std::move(out));
  }

  // Redis thread: sends `args`, or fails `op` at once.
  void send(const std::vector<std::string>& args, const std::shared_ptr<Op>& op,
            milliseconds timeout) {
    const char* why = nullptr;
    if (stopping)
      why = "redis client stopped";
    else if (conn != Conn::up || ac == nullptr)
      why = "redis down";
    else if (inflight >= opts.max_inflight)
      why = "too many redis commands in flight";
    if (why == nullptr) {
      std::vector<const char*> argv;
      std::vector<std::size_t> lens;
      argv.reserve(args.size());
      lens.reserve(args.size());
      for (const auto& arg : args) {
        argv.push_back(arg.data());
        lens.push_back(arg.size());
      }
      auto* holder = new std::shared_ptr<Op>(op);
      if (redisAsyncCommandArgv(ac, &Impl::on_reply, holder, static_cast<int>(argv.size()),
                                argv.data(), lens.data()) == REDIS_OK) {
        ++inflight;
        if (op->completion) {
          op->timer.expires_after(std::max(timeout, milliseconds(1)));
          op->timer.async_wait([this, op](const boost::system::error_code& ec) {
            if (ec || op->done) return;
            op->done = true;
            ++timeouts;
            op->completion->complete(RedisReply::failure("redis timeout"));
          });
        }
        return;
      }
      delete holder;
      why = "redis command not sent";
    }
    ++refused;
    op->done = true;
    RedisReply failure = RedisReply::failure(why);
    if (op->on_done) op->on_done(failure);
    if (op->completion) op->completion->complete(std::move(failure));
  }

  void shutdown() {
    stopping = true;
    reconnect_timer.cancel();
    connect_timer.cancel();
    if (ac != nullptr) redisAsyncFree(ac);  // pending callbacks get NULL; cleanup -> on_freed
    ac = nullptr;
    watch.reset();
    is_up = false;
    work.reset();
  }
};

RedisClient::RedisClient(RedisOptions opts) : impl_(std::make_shared<Impl>(std::move(opts))) {
  Impl* impl = impl_.get();
  // spdlog's registry made here, before the thread that logs: its lazy start in an uninstrumented
  // library would otherwise race (as ThreadSanitizer sees it) with another client's thread.
  (void)spdlog::default_logger_raw();
  // The thread holds the Impl too: should the client's last owner let go of it on the Redis
  // thread itself (in a listener or a fire() callback), stop() detaches and the Impl ends with it.
  impl->thread = std::thread([impl, keep = impl_] {
    // hiredis writes with write(): a peer gone must be EPIPE, not a SIGPIPE for the process.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    net::post(impl->io, [impl] { impl->connect(); });
    impl->io.run();
  });
}

RedisClient::~RedisClient() {
  stop();
}

void RedisClient::stop() {
  Impl* impl = impl_.get();
  if (!impl->stopped.exchange(true)) net::post(impl->io, [impl] { impl->shutdown(); });
  if (!impl->thread.joinable()) return;
  if (impl->thread.get_id() == std::this_thread::get_id())
    impl->thread.detach();  // on the Redis thread: it ends after this handler (see above)
  else
    impl->thread.join();
}

bool RedisClient::up() const {
  return impl_->is_up.load(std::memory_order_relaxed);
}

const RedisUrl& RedisClient::url() const {
  return impl_->opts.url;
}

void RedisClient::submit(std::vector<std::string> args, milliseconds timeout,
                         std::unique_ptr<Completion> completion) {
  Impl* impl = impl_.get();
  if (impl->stopped.load() || !impl->is_up.load(std::memory_order_relaxed)) {
    // Down: fail at once, without a trip through the Redis thread.
    ++impl->refused;
    completion->complete(
        RedisReply::failure(impl->stopped ? "redis client stopped" : "redis down"));
    return;
  }
  net::post(impl->io, [impl, completion = std::move(completion), args = std::move(args),
                       timeout]() mutable {
    impl->send(args, std::make_shared<Impl::Op>(impl->io, std::move(completion)), timeout);
  });
}

net::awaitable<RedisReply> RedisClient::command(std::vector<std::string> args,
                                                milliseconds timeout) {
  co_return co_await async_command(std::move(args), timeout, net::use_awaitable);
}

void RedisClient::fire(std::vector<std::string> args,
                       std::function<void(const RedisReply&)> on_done) {
  Impl* impl = impl_.get();
  if (impl->stopped.load()) {
    ++impl->refused;
    // Not on the Redis thread (it may be gone): the failure is reported here.
    if (on_done) on_done(RedisReply::failure("redis client stopped"));
    return;
  }
  net::post(impl->io, [impl, args = std::move(args), on_done = std::move(on_done)]() mutable {
    auto op = std::make_shared<Impl::Op>(impl->io, nullptr);
    op->on_done = std::move(on_done);
    impl->send(args, op, {});
  });
}

std::size_t RedisClient::on_up(std::function<void()> listener) {
  std::lock_guard lock(impl_->listeners_mu);
  std::size_t id = impl_->next_listener++;
  impl_->listeners.emplace_back(id, std::move(listener));
  return id;
}

void RedisClient::remove_on_up(std::size_t id) {
  std::lock_guard lock(impl_->listeners_mu);
  std::erase_if(impl_->listeners, [id](const auto& listener) { return listener.first == id; });
}

RedisClient::Counters RedisClient::counters() const {
  Counters snapshot;
  snapshot.errors = impl_->errors.load();
  snapshot.timeouts = impl_->timeouts.load();
  snapshot.refused = impl_->refused.load();
  snapshot.reconnects = impl_->reconnects.load();
  snapshot.connect_failures = impl_->connect_failures.load();
  snapshot.inflight = impl_->inflight.load();
  return snapshot;
}

}  // namespace llmux::state
