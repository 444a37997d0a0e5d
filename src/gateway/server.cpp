// `llmux gateway`: workers, listeners, client sessions and the proxy.
//
// Threads: N workers, each with its own io_context, its own SO_REUSEPORT acceptor per listener
// and its own keep-alive pool per backend, so a request never leaves the thread that accepted
// it and the hot path takes no lock. Shared state is immutable config plus atomics (in-flight
// counts, round-robin counters, the active-request count used by the drain).
//
// Life of a proxied request (docs/architecture.md has the picture):
//   session reads the request (limits, timeouts, 100-continue) → route by path/method/model →
//   policy picks a backend not yet tried → pooled or fresh upstream connection → request sent
//   (hop-by-hop headers stripped, X-Forwarded-*, X-Request-Id, backend key) → response header
//   (first-byte timeout) → relayed to the client as it arrives: SSE event by event, other
//   bodies read by read → a watcher on the client socket aborts the upstream request the
//   moment the client leaves. A request that could not be sent is retried once on another
//   backend; never after a response byte reached the client.
#include "gateway/gateway.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/clock.hpp"
#include "core/ids.hpp"
#include "core/openai_error.hpp"
#include "gateway/access_log.hpp"
#include "gateway/deadline.hpp"
#include "gateway/http_rules.hpp"
#include "gateway/request_view.hpp"
#include "gateway/taps.hpp"
#include "gateway/upstream_pool.hpp"
#include "http/linger.hpp"
#include "policy/policy.hpp"

namespace llmux::gateway {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = net::ip::tcp;
using net::awaitable;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// ---------------------------------------------------------------------------------------------
// Shared (all threads) runtime state.

struct BackendRt {
  policy::BackendState state;
  const config::Backend* cfg = nullptr;
  std::vector<tcp::endpoint> endpoints;
  std::string host_header;
  std::string authorization;  // "Bearer <key>" or empty
};

struct RouteRt {
  const config::Route* cfg = nullptr;
  std::unique_ptr<policy::Policy> policy;
  std::vector<policy::BackendState*> backends;
};

struct Shared {
  config::GatewayConfig cfg;
  std::vector<std::unique_ptr<BackendRt>> backends;
  std::vector<RouteRt> routes;
  std::atomic<int> active{0};
  std::atomic<bool> draining{false};
  AccessLog log;
};

/// RAII count of requests in progress (the drain waits for it to reach zero).
class ActiveGuard {
 public:
  explicit ActiveGuard(std::atomic<int>& a) : a_(a) { a_.fetch_add(1, std::memory_order_relaxed); }
  ~ActiveGuard() { a_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  std::atomic<int>& a_;
};

// ---------------------------------------------------------------------------------------------
// Per-thread state.

struct Worker {
  // Destroyed in reverse order: the deadline list outlives the io_context (whose destruction
  // destroys the coroutines that own deadlines), and the sockets of the pools and acceptors go
  // before the io_context they belong to.
  DeadlineList deadlines;
  // One thread per io_context: the reactor needs no locking (posts from other threads, as in
  // the drain, still go through the scheduler's lock).
  net::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
  std::vector<std::unique_ptr<UpstreamPool>> pools;  // per backend index
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;

  // Relay buffers, reused: a request takes one for its response body and gives it back.
  // 4 KiB: an SSE event is far smaller, and a held-open stream should cost little memory.
  static constexpr std::size_t kRelayBuf = 4 * 1024;
  std::vector<std::unique_ptr<char[]>> free_bufs;
  std::unique_ptr<char[]> take_buf() {
    if (free_bufs.empty()) return std::unique_ptr<char[]>(new char[kRelayBuf]);
    auto b = std::move(free_bufs.back());
    free_bufs.pop_back();
    return b;
  }
  void give_buf(std::unique_ptr<char[]> b) {
    if (free_bufs.size() < 1024) free_bufs.push_back(std::move(b));
  }
};

// ---------------------------------------------------------------------------------------------
// Helpers.

/// How an attempt failed. Only Connect and Unsent are retried on another backend: in both,
/// provably nothing of the request reached the backend (so a retry cannot duplicate work).
enum class FailKind { None, Connect, Unsent, Timeout, Broken, BadResponse, ClientGone };

/// The watch on the client socket while a request is proxied: if the client goes away, the
/// upstream connection of the current attempt is closed at once (the backend aborts the
/// request), before or after the response header.
struct ClientWatch {
  bool done = false;         // the watcher coroutine has finished
  bool finished = false;     // the proxy no longer needs it
  bool client_gone = false;  // the client closed or reset its connection
  Upstream* up = nullptr;    // the current attempt's connection
  void close_upstream() {
    if (!up) return;
    boost::system::error_code ignored;
    up->sock.cancel(ignored);
    up->sock.close(ignored);
  }
};

struct Failure {
  FailKind kind = FailKind::None;
  std::string message;
  bool retryable() const { return kind == FailKind::Connect || kind == FailKind::Unsent; }
};

/// The event that ends a stream whose backend failed mid-way, in the stream's own dialect: the
/// Responses API's `error` event (numbered after the last event relayed), or the chat and
/// completions error chunk followed by [DONE].
std::string mid_stream_error_tail(bool responses_api, std::int64_t sequence_number,
                                  const std::string& message) {
  if (responses_api) {
    json::object ev;
    ev["type"] = "error";
    ev["code"] = "upstream_error";
    ev["message"] = message;
    ev["param"] = nullptr;
    ev["sequence_number"] = sequence_number;
    return "event: error\ndata: " + json::serialize(ev) + "\n\n";
  }
  return "data: " + openai_error_json(502, message) + "\n\ndata: [DONE]\n\n";
}

/// Fails at once when another process listens on `ep`: SO_REUSEPORT would otherwise let this
/// gateway join that process's port and silently take a share of its connections. The port is
/// shared only among this process's own workers. (Port 0 needs no check: the kernel picks a
/// free port.)
bool port_taken_by_another(const tcp::endpoint& ep, boost::system::error_code& ec) {
  if (ep.port() == 0) return false;
  net::io_context tmp;
  tcp::acceptor probe(tmp);
  probe.open(ep.protocol(), ec);
  if (ec) return false;
  probe.set_option(net::socket_base::reuse_address(true), ec);  // TIME_WAIT is no obstacle
  probe.bind(ep, ec);
  const bool taken = ec == net::error::address_in_use;
  boost::system::error_code ignored;
  probe.close(ignored);
  return taken;
}

// ---------------------------------------------------------------------------------------------

class Gateway {
 public:
  explicit Gateway(config::GatewayConfig cfg) { shared_.cfg = std::move(cfg); }

  int run() {
    auto& cfg = shared_.cfg;
    std::string err;
    if (!shared_.log.open(cfg.access_log.target, err)) {
      spdlog::error("{}", err);
      return 2;
    }
    // Backends: resolve once at start.
    net::io_context tmp;
    tcp::resolver resolver(tmp);
    for (std::size_t i = 0; i < cfg.backends.size(); ++i) {
      auto b = std::make_unique<BackendRt>();
      const auto& bc = cfg.backends[i];
      b->cfg = &bc;
      b->state.name = bc.name;
      b->state.index = static_cast<int>(i);
      b->state.weight = bc.weight;
      b->state.max_inflight = bc.max_inflight;
      b->host_header = bc.port == 80 ? bc.host : fmt::format("{}:{}", bc.host, bc.port);
      if (!bc.api_key.empty()) b->authorization = "Bearer " + bc.api_key;
      boost::system::error_code ec;
      auto results = resolver.resolve(bc.host, std::to_string(bc.port), ec);
      if (ec) {
        spdlog::error("backend {}: cannot resolve '{}': {}", bc.name, bc.host, ec.message());
        return 2;
      }
      for (auto& r : results) b->endpoints.push_back(r.endpoint());
      shared_.backends.push_back(std::move(b));
    }
    for (const auto& rc : cfg.routes) {
      RouteRt r;
      r.cfg = &rc;
      r.policy = policy::make_policy(rc.policy);
      if (!r.policy) {
        spdlog::error("route {}: unknown policy '{}'", rc.name, rc.policy);
        return 2;
      }
      for (const auto& name : rc.backends) {
        for (auto& b : shared_.backends) {
          if (b->cfg->name == name) r.backends.push_back(&b->state);
        }
      }
      shared_.routes.push_back(std::move(r));
    }

    const int nthreads =
        cfg.threads > 0 ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
    workers_.reserve(nthreads);
    for (int i = 0; i < nthreads; ++i) {
      auto w = std::make_unique<Worker>();
      for (std::size_t b = 0; b < shared_.backends.size(); ++b)
        w->pools.push_back(std::make_unique<UpstreamPool>());
      workers_.push_back(std::move(w));
    }
    // Listeners: every worker gets an SO_REUSEPORT acceptor on every listener's port; the
    // first binds (port 0 → a free port), the others join it.
    std::vector<std::uint16_t> ports;
    for (const auto& l : cfg.listeners) {
      boost::system::error_code ec;
      auto addr = net::ip::make_address(l.address, ec);
      if (ec) {
        spdlog::error("listen address '{}': {}", l.address, ec.message());
        return 2;
      }
      std::uint16_t port = l.port;
      if (port_taken_by_another(tcp::endpoint(addr, port), ec)) {
        spdlog::error("cannot listen on {}:{}: the address is in use by another process", l.address,
                      port);
        return 1;
      }
      for (auto& w : workers_) {
        auto acc = std::make_unique<tcp::acceptor>(w->ioc);
        tcp::endpoint ep(addr, port);
        acc->open(ep.protocol(), ec);
        if (!ec) acc->set_option(net::socket_base::reuse_address(true), ec);
        if (!ec) {
          int one = 1;
          ::setsockopt(acc->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        }
        if (!ec) acc->bind(ep, ec);
        if (!ec) acc->listen(net::socket_base::max_listen_connections, ec);
        if (ec) {
          spdlog::error("cannot listen on {}:{}: {}", l.address, port, ec.message());
          return 1;
        }
        port = acc->local_endpoint().port();
        w->acceptors.push_back(std::move(acc));
      }
      ports.push_back(port);
    }

    for (auto& w : workers_) {
      for (auto& acc : w->acceptors) net::co_spawn(w->ioc, accept_loop(*w, *acc), net::detached);
      net::co_spawn(w->ioc, deadline_ticker(*w), net::detached);
    }
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < workers_.size(); ++i) {
      threads.emplace_back([w = workers_[i].get()] { w->ioc.run(); });
    }
    // The main thread runs worker 0 and the signal handling.
    net::signal_set signals(workers_[0]->ioc, SIGINT, SIGTERM);
    signals.async_wait([this](auto ec, int sig) {
      if (!ec) begin_drain(sig);
    });
    // SIGHUP would end the process by default; configuration reload does not exist yet.
    net::signal_set hup(workers_[0]->ioc, SIGHUP);
    net::co_spawn(workers_[0]->ioc, ignore_hangups(hup), net::detached);
    spdlog::info("llmux gateway: {} backends, {} routes, {} threads, listening on port(s) {}",
                 shared_.backends.size(), shared_.routes.size(), nthreads, fmt::join(ports, ","));
    std::cout << fmt::format(R"({{"event":"ready","ports":[{}],"port":{},"pid":{}}})",
                             fmt::join(ports, ","), ports.empty() ? 0 : ports[0], ::getpid())
              << std::endl;
    workers_[0]->ioc.run();
    for (auto& t : threads) t.join();
    spdlog::info("llmux gateway: stopped");
    return 0;
  }

 private:
  // ---- drain ----
  void begin_drain(int sig) {
    spdlog::info("signal {}: draining (up to {} ms for {} running requests)", sig,
                 shared_.cfg.timeouts.drain.count(), shared_.active.load());
    shared_.draining = true;
    for (auto& w : workers_) {
      net::post(w->ioc, [w = w.get()] {
        for (auto& a : w->acceptors) {
          boost::system::error_code ec;
          a->close(ec);
        }
      });
    }
    const auto deadline = MonoClock::now() + shared_.cfg.timeouts.drain;
    auto timer = std::make_shared<net::steady_timer>(workers_[0]->ioc);
    auto poll = std::make_shared<std::function<void()>>();
    *poll = [this, timer, deadline, poll] {
      if (shared_.active.load() == 0 || MonoClock::now() >= deadline) {
        if (shared_.active.load() > 0)
          spdlog::warn("drain timeout: {} requests cut off", shared_.active.load());
        for (auto& w : workers_) w->ioc.stop();
        *poll = nullptr;  // break the cycle
        return;
      }
      timer->expires_after(std::chrono::milliseconds(20));
      timer->async_wait([poll](auto) {
        if (*poll) (*poll)();
      });
    };
    (*poll)();
  }

  static awaitable<void> ignore_hangups(net::signal_set& hup) {
    for (;;) {
      auto [ec, sig] = co_await hup.async_wait(use_tuple);
      if (ec) co_return;
      spdlog::warn(
          "SIGHUP: configuration reload is not supported yet; ignored (restart the "
          "gateway to apply a new configuration)");
    }
  }

  // ---- timeouts: one ticker per worker fires its expired deadlines ----
  static awaitable<void> deadline_ticker(Worker& w) {
    net::steady_timer t(w.ioc);
    for (;;) {
      t.expires_after(std::chrono::milliseconds(50));
      auto [ec] = co_await t.async_wait(use_tuple);
      if (ec) co_return;
      w.deadlines.fire_expired(mono_ns());
    }
  }

  // ---- accept ----
  awaitable<void> accept_loop(Worker& w, tcp::acceptor& acc) {
    for (;;) {
      auto [ec, sock] = co_await acc.async_accept(use_tuple);
      if (ec) {
        if (ec == net::error::operation_aborted || !acc.is_open()) co_return;
        spdlog::warn("accept: {}", ec.message());
        if (ec == net::error::no_descriptors) {
          net::steady_timer t(w.ioc, std::chrono::milliseconds(50));
          co_await t.async_wait(use_tuple);
        }
        continue;
      }
      sock.set_option(tcp::no_delay(true), ec);
      net::co_spawn(w.ioc, session(w, std::move(sock)), net::detached);
    }
  }

  // ---- client session ----
  using Request = http::request<http::string_body>;

  struct Client {
    Client(tcp::socket s, DeadlineList& list)
        : sock(std::move(s)),
          dl(list, sock),
          wake(sock.get_executor(), net::steady_timer::time_point::max()) {}
    tcp::socket sock;
    beast::flat_buffer buf;
    bool keep_alive = true;
    std::string peer;
    ScopedDeadline dl;
    ClientWatch watch;       // the current request's watch on this socket
    net::steady_timer wake;  // wakes stop_watch() when the watch's read completes
    std::string upstream_target, upstream_head;  // the current attempt's, reused per request
  };

  awaitable<void> session(Worker& w, tcp::socket sock) {
    Client c(std::move(sock), w.deadlines);
    boost::system::error_code pec;
    auto rep = c.sock.remote_endpoint(pec);
    if (!pec) c.peer = rep.address().to_string();
    const auto& t = shared_.cfg.timeouts;
    // An error answered while the client may still be sending: close by lingering, or the
    // unread bytes make the kernel reset the connection and the client never reads the answer.
    bool linger = false;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(shared_.cfg.limits.max_header_bytes);
      parser.body_limit(shared_.cfg.limits.max_body_bytes);
      // Idle keep-alive connections wait up to client_idle for a first byte; once a request
      // has started, its header must be complete within client_header, and no gap between two
      // reads of its body may exceed client_body. The deadline cancels the read instead of
      // closing the socket, so the client gets its 408.
      if (c.buf.size() == 0) {
        c.dl.arm(t.client_idle, /*close_on_expiry=*/false);
        auto [ec, n] = co_await c.sock.async_read_some(c.buf.prepare(2048), use_tuple);
        c.dl.disarm();
        if (ec) break;  // idle timeout or the client closed: nothing to answer
        c.buf.commit(n);
      }
      c.dl.arm(t.client_header, /*close_on_expiry=*/false);
      auto [ec, n] = co_await http::async_read_header(c.sock, c.buf, parser, use_tuple);
      c.dl.disarm();
      std::size_t header_fields = 0;
      if (!ec) {
        auto& h = parser.get();
        // How the body is delimited is checked here, before a byte of it is read: a request
        // whose length cannot be determined is never passed on, and its body never parsed as
        // the next request.
        if (auto bad = check_request_framing(h, h.version())) {
          co_await write_error(c, bad->status, bad->message, nullptr, false);
          linger = true;
          break;
        }
        header_fields = static_cast<std::size_t>(std::distance(h.begin(), h.end()));
        if (h.version() >= 11 && !parser.is_done() &&
            beast::iequals(h[http::field::expect], "100-continue")) {
          static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
          auto [wec, wn] = co_await net::async_write(c.sock, net::buffer(kContinue), use_tuple);
          if (wec) break;
        }
        while (!ec && !parser.is_done()) {
          c.dl.arm(t.client_body, /*close_on_expiry=*/false);
          std::tie(ec, n) = co_await http::async_read_some(c.sock, c.buf, parser, use_tuple);
          c.dl.disarm();
        }
      }
      if (c.dl.fired && ec) ec = beast::error::timeout;
      if (ec) {
        if (ec == http::error::end_of_stream || ec == net::error::eof ||
            ec == net::error::connection_reset)
          break;
        linger = true;
        if (ec == beast::error::timeout) {
          co_await write_error(c, 408, "Request timeout: the request was not received in time.",
                               nullptr, false);
          break;
        }
        int status = 400;
        std::string msg = fmt::format("Bad request: {}", ec.message());
        if (ec == http::error::body_limit) {
          status = 413;
          msg = fmt::format("Request body too large (limit {} bytes).",
                            shared_.cfg.limits.max_body_bytes);
        } else if (ec == http::error::header_limit) {
          status = 431;
          msg = fmt::format("Request headers too large (limit {} bytes).",
                            shared_.cfg.limits.max_header_bytes);
        }
        co_await write_error(c, status, msg, nullptr, false);
        break;
      }
      Request req = parser.release();
      // Trailer fields of a chunked body were appended to the header: they end here.
      drop_fields_after(req, header_fields);
      c.keep_alive = req.keep_alive() && !shared_.draining.load(std::memory_order_relaxed);
      {
        ActiveGuard active(shared_.active);
        co_await handle(w, c, req);
      }
      if (!c.keep_alive || shared_.draining.load(std::memory_order_relaxed)) break;
      // A large request grew the read buffer; do not keep that memory for an idle connection.
      if (c.buf.size() == 0 && c.buf.capacity() > 16384) c.buf.shrink_to_fit();
    }
    if (linger) {
      co_await llmux::http::lingering_close(c.sock);
    } else {
      boost::system::error_code ignored;
      c.sock.shutdown(tcp::socket::shutdown_send, ignored);
      c.sock.close(ignored);
    }
  }

  template <typename Body>
  void local_headers(http::response<Body>& res, std::string_view request_id) {
    res.set(http::field::server, "llmux");
    if (!request_id.empty()) res.set("x-request-id", request_id);
  }

  awaitable<bool> write_json(Client& c, int status, std::string body, const Request* req,
                             std::string_view request_id = {}) {
    http::response<http::string_body> res{static_cast<http::status>(status),
                                          req ? req->version() : 11};
    local_headers(res, request_id);
    res.set(http::field::content_type, "application/json");
    res.keep_alive(c.keep_alive);
    res.body() = std::move(body);
    res.prepare_payload();
    c.dl.arm(shared_.cfg.timeouts.idle);
    auto [ec, n] = co_await http::async_write(c.sock, res, use_tuple);
    c.dl.disarm();
    if (ec) c.keep_alive = false;
    co_return !ec;
  }

  awaitable<bool> write_error(Client& c, int status, std::string_view message, const Request* req,
                              bool keep = true, std::string_view request_id = {}) {
    if (!keep) c.keep_alive = false;
    co_return co_await write_json(c, status, openai_error_json(status, message), req, request_id);
  }

  // ---- dispatch ----
  const RouteRt* match_route(const Request& req, std::string_view path, const BodyFields& f) const {
    for (const auto& r : shared_.routes) {
      const auto& m = r.cfg->match;
      if (!m.path.empty() && path != m.path) continue;
      if (!m.path_prefix.empty() && !path.starts_with(m.path_prefix)) continue;
      if (!m.methods.empty()) {
        bool ok = false;
        for (const auto& meth : m.methods) ok = ok || meth == req.method_string();
        if (!ok) continue;
      }
      if (!m.models.empty()) {
        bool ok = false;
        for (const auto& model : m.models) ok = ok || model == f.model;
        if (!ok) continue;
      }
      return &r;
    }
    return nullptr;
  }

  awaitable<void> handle(Worker& w, Client& c, Request& req) {
    const std::string_view target = req.target();
    const std::string_view path = target.substr(0, target.find('?'));
    std::string request_id(req["x-request-id"]);
    if (request_id.empty() || request_id.size() > 200) request_id = random_id("", 32);
    if (req.method() == http::verb::get && path == "/health") {
      co_await write_json(
          c, 200, fmt::format(R"({{"status":"ok","backends":{}}})", shared_.backends.size()), &req,
          request_id);
      co_return;
    }
    if (req.method() == http::verb::get && path == "/v1/models") {
      co_await models(w, c, req, request_id);
      co_return;
    }
    BodyFields fields;
    if (!req.body().empty()) fields = read_body_fields(req.body());
    const RouteRt* route = match_route(req, path, fields);
    if (!route) {
      co_await write_error(
          c, 404, fmt::format("No route for {} {}.", std::string_view(req.method_string()), path),
          &req, true, request_id);
      co_return;
    }
    co_await proxy(w, c, req, *route, fields, request_id);
  }

  // ---- upstream connections ----
  struct Connected {
    std::shared_ptr<Upstream> up;
    Failure fail;
  };

  awaitable<Connected> connect(Worker& w, BackendRt& b, bool allow_pooled,
                               ClientWatch* watch = nullptr) {
    if (allow_pooled) {
      if (auto up = w.pools[b.state.index]->take()) {
        if (watch) watch->up = up.get();
        co_return Connected{std::move(up), {}};
      }
    }
    auto up = std::make_shared<Upstream>(w.ioc.get_executor(), w.deadlines);
    if (watch) watch->up = up.get();
    up->dl.arm(shared_.cfg.timeouts.connect);
    auto [ec, ep] = co_await net::async_connect(up->sock, b.endpoints, use_tuple);
    up->dl.disarm();
    if (ec) {
      Failure f{FailKind::Connect,
                fmt::format("connect to {} ({}:{}) failed: {}", b.cfg->name, b.cfg->host,
                            b.cfg->port, up->dl.fired ? "timed out" : ec.message())};
      co_return Connected{nullptr, std::move(f)};
    }
    boost::system::error_code ignored;
    up->sock.set_option(tcp::no_delay(true), ignored);
    co_return Connected{std::move(up), {}};
  }

  /// Back to the pool: only a connection whose last response was complete, did not end by
  /// close, and left nothing unread.
  void release(Worker& w, BackendRt& b, std::shared_ptr<Upstream> up) {
    if (up->buf.size() != 0) {
      boost::system::error_code ignored;
      up->sock.close(ignored);
      return;
    }
    w.pools[b.state.index]->put(std::move(up), b.cfg->pool_idle_timeout);
  }

  // ---- the proxy ----
  struct Attempt {
    std::shared_ptr<Upstream> up;
    std::unique_ptr<http::response_parser<http::buffer_body>> parser;
    Failure fail;
  };

  /// Sends the request (`head`, built for this backend, then the client's body) to `b` and
  /// reads the final response header, skipping interim 1xx responses. A pooled connection that
  /// turns out closed before a byte of the request was written is replaced by a fresh one
  /// (same backend). Once any byte was written, a failure is final for this request: the
  /// backend may have received it, and a retry could run the generation twice.
  awaitable<Attempt> send(Worker& w, BackendRt& b, const Request& req, const std::string& head,
                          ClientWatch& watch) {
    auto client_gone = [&] {
      return Attempt{nullptr, nullptr, {FailKind::ClientGone, "the client left"}};
    };
    for (int round = 0; round < 2; ++round) {
      watch.up = nullptr;
      Attempt a;
      auto conn = co_await connect(w, b, round == 0, &watch);
      if (watch.client_gone) co_return client_gone();
      if (!conn.up) {
        a.fail = std::move(conn.fail);
        co_return a;
      }
      a.up = std::move(conn.up);
      const std::array<net::const_buffer, 2> out{net::buffer(head), net::buffer(req.body())};
      a.up->dl.arm(shared_.cfg.timeouts.first_byte);
      auto [wec, wn] = co_await net::async_write(a.up->sock, out, use_tuple);
      if (watch.client_gone) co_return client_gone();
      if (wec) {
        a.up->dl.disarm();
        const bool unsent = wn == 0 && !a.up->dl.fired;
        if (unsent && a.up->reused && round == 0) continue;  // a pooled connection closed under us
        if (unsent) {
          a.fail = {FailKind::Unsent, fmt::format("sending to {} failed before a byte was "
                                                  "written: {}",
                                                  b.cfg->name, wec.message())};
        } else {
          a.fail = {a.up->dl.fired ? FailKind::Timeout : FailKind::Broken,
                    fmt::format("sending to {} failed after {} bytes: {}", b.cfg->name, wn,
                                a.up->dl.fired ? "timed out" : wec.message())};
        }
        watch.up = nullptr;
        a.up.reset();
        co_return a;
      }
      boost::system::error_code rec;
      for (int interim = 0;; ++interim) {
        a.parser = std::make_unique<http::response_parser<http::buffer_body>>();
        a.parser->body_limit(boost::none);
        a.parser->header_limit(64 * 1024);
        if (req.method() == http::verb::head) a.parser->skip(true);
        std::size_t rn = 0;
        std::tie(rec, rn) =
            co_await http::async_read_header(a.up->sock, a.up->buf, *a.parser, use_tuple);
        if (rec) break;
        const int status = a.parser->get().result_int();
        if (status >= 200) break;
        // An interim response (100 Continue, 103 Early Hints): the final one follows on this
        // connection. It is not relayed (the client gets the final response only).
        if (status == 101 || interim >= 16) {
          rec = http::error::bad_value;  // an upgrade nobody asked for, or endless 1xx
          break;
        }
      }
      a.up->dl.disarm();
      if (watch.client_gone) co_return client_gone();
      if (rec) {
        const bool nothing = rec == http::error::end_of_stream ||
                             rec == net::error::connection_reset || rec == net::error::eof;
        if (a.up->dl.fired) {
          a.fail = {FailKind::Timeout, fmt::format("{} sent no response within {} ms", b.cfg->name,
                                                   shared_.cfg.timeouts.first_byte.count())};
        } else if (nothing) {
          a.fail = {FailKind::Broken,
                    fmt::format("{} closed the connection without a response", b.cfg->name)};
        } else {
          a.fail = {FailKind::BadResponse,
                    fmt::format("{} sent an invalid response: {}", b.cfg->name, rec.message())};
        }
        watch.up = nullptr;
        a.up.reset();
        co_return a;
      }
      co_return a;
    }
    co_return Attempt{nullptr, nullptr, {FailKind::Unsent, "stale connection"}};
  }

  awaitable<void> proxy(Worker& w, Client& c, const Request& req, const RouteRt& route,
                        const BodyFields& fields, const std::string& request_id) {
    const std::int64_t start = mono_ns();
    const std::string_view client_target = req.target();
    const std::string method(req.method_string());
    const std::string path(client_target.substr(0, client_target.find('?')));
    const std::uint64_t bytes_in = req.body().size();

    policy::RequestView view{req.method_string(), path, fields.model, fields.previous_response_id,
                             fields.stream};
    policy::TriedSet tried;
    Failure last;
    int attempts = 0;
    bool all_full = false;
    AccessRecord rec;
    rec.request_id = request_id;
    rec.client = c.peer;
    rec.method = method;
    rec.path = path;
    rec.route = route.cfg->name;
    rec.model = fields.model;
    rec.stream = fields.stream;
    rec.bytes_in = bytes_in;

    // Watch the client from now on: a client that leaves while its request waits for the first
    // response byte aborts the upstream request as surely as one that leaves mid-stream.
    // One watch per session, reset per request (the previous one has finished: stop_watch).
    c.watch = ClientWatch{};
    ClientWatch* watch = &c.watch;
    net::steady_timer* wake = &c.wake;
    watch_client(c.sock, c.buf, watch, wake);

    for (;;) {
      // The slot is taken atomically with the choice: a backend at max_inflight is skipped.
      policy::Slot slot = policy::pick_and_acquire(*route.policy, view, route.backends, tried);
      if (!slot) {
        all_full = attempts == 0;
        break;
      }
      tried.add(*slot.backend());
      BackendRt& b = *shared_.backends[slot.backend()->index];
      ++attempts;
      // Each attempt's request is built fresh from the client's, which is never modified: a
      // retry carries nothing of the backend tried before (its target, Host or key).
      c.upstream_target.assign(b.cfg->base_path).append(client_target);
      build_upstream_head(c.upstream_head, req,
                          {c.upstream_target, b.host_header, b.authorization, c.peer, request_id,
                           req.body().size()});
      Attempt a = co_await send(w, b, req, c.upstream_head, *watch);
      if (!a.up) {
        watch->up = nullptr;
        last = std::move(a.fail);
        spdlog::debug("request {}: {}", request_id, last.message);
        if (last.kind == FailKind::ClientGone) break;
        if (last.retryable() && attempts < 2) continue;  // never sent: try another backend once
        break;
      }
      rec.backend = b.cfg->name;
      rec.attempts = attempts;
      rec.ttfb_ms = static_cast<double>(mono_ns() - start) / 1e6;
      co_await relay(w, c, req, b, std::move(a), rec, *watch);
      co_await stop_watch(c, *watch, *wake);
      rec.total_ms = static_cast<double>(mono_ns() - start) / 1e6;
      shared_.log.write(rec);
      co_return;
    }
    if (last.kind == FailKind::ClientGone || watch->client_gone) {
      co_await stop_watch(c, *watch, *wake);
      c.keep_alive = false;
      rec.attempts = attempts;
      rec.status = 499;  // nginx's "client closed request"
      rec.error = "client left before the response began";
      rec.total_ms = static_cast<double>(mono_ns() - start) / 1e6;
      shared_.log.write(rec);
      co_return;
    }
    co_await stop_watch(c, *watch, *wake);
    // Nothing was relayed: answer with the error.
    int status = 503;
    std::string message = "No backend available for this route.";
    if (all_full) {
      message = "No backend available for this route: every backend is at its max_inflight.";
    } else if (last.kind == FailKind::Timeout) {
      status = 504;
      message = fmt::format("Upstream timeout: {}.", last.message);
    } else if (last.kind == FailKind::Broken || last.kind == FailKind::BadResponse) {
      status = 502;
      message = fmt::format("Bad gateway: {}.", last.message);
    } else if (last.kind == FailKind::Connect || last.kind == FailKind::Unsent) {
      status = 503;
      message = fmt::format("No backend reachable: {}.", last.message);
    }
    rec.attempts = attempts;
    rec.status = status;
    rec.error = message;
    co_await write_error(c, status, message, &req, true, request_id);
    rec.total_ms = static_cast<double>(mono_ns() - start) / 1e6;
    shared_.log.write(rec);
  }

  /// Relays the response whose header `a.parser` holds. Watches the client meanwhile: if it
  /// leaves, the upstream connection is closed at once (the backend aborts the request).
  awaitable<void> relay(Worker& w, Client& c, const Request& req, BackendRt& b, Attempt a,
                        AccessRecord& rec, ClientWatch& watch) {
    auto& p = *a.parser;
    auto& res = p.get();
    const bool sse = res[http::field::content_type].starts_with("text/event-stream");
    const bool responses_api = rec.path.starts_with("/v1/responses");
    rec.status = res.result_int();
    // Client-facing header.
    strip_hop_by_hop(res);
    res.set("x-llmux-backend", b.cfg->name);
    res.set("x-request-id", rec.request_id);
    const bool head = req.method() == http::verb::head;
    const bool has_length = res.has_content_length();
    if (!has_length && !head && !p.is_done() && res.result_int() >= 200 &&
        res.result_int() != 204 && res.result_int() != 304) {
      if (req.version() >= 11) {
        res.chunked(true);
      } else {
        c.keep_alive = false;
      }
    }
    res.keep_alive(c.keep_alive);

    Upstream* up = a.up.get();
    watch.up = up;
    UsageTap usage;
    SequenceTap sequence;
    bool upstream_failed = false;
    std::string upstream_error;
    bool client_failed = false;
    std::uint64_t bytes_out = 0;
    const auto idle = shared_.cfg.timeouts.idle;

    // The header is serialised by Beast into `header_bytes` and goes out with the first piece of
    // the body in one gathered write; the body is framed here (chunk size, data, CRLF), which costs
    // far less than a serializer pass per piece.
    std::string header_bytes;
    {
      http::response_serializer<http::buffer_body> sr{res};
      sr.split(true);
      boost::system::error_code sec;
      while (!sr.is_header_done() && !sec) {
        sr.next(sec, [&](boost::system::error_code&, auto const& buffers) {
          for (auto b : beast::buffers_range_ref(buffers))
            header_bytes.append(static_cast<const char*>(b.data()), b.size());
          sr.consume(beast::buffer_bytes(buffers));
        });
      }
    }
    const bool chunked = res.chunked();
    if (sse && !header_bytes.empty()) {
      // A stream's header goes out at once: the client sees the response begin (TTFB) even
      // while the first event is still being computed (a long prefill).
      c.dl.arm(idle);
      auto [hec, hn] = co_await net::async_write(c.sock, net::buffer(header_bytes), use_tuple);
      c.dl.disarm();
      if (hec) client_failed = true;
      header_bytes.clear();
    }

    static constexpr std::size_t kBuf = Worker::kRelayBuf;
    std::unique_ptr<char[]> buf = w.take_buf();
    std::size_t have = 0;
    std::string tail;  // the error event appended when the upstream dies mid-stream
    while (!client_failed && !head) {
      bool done = p.is_done();
      if (!done) {
        res.body().data = buf.get() + have;
        res.body().size = kBuf - have;
        up->dl.arm(idle);
        auto [ec, n] = co_await http::async_read_some(up->sock, up->buf, p, use_tuple);
        up->dl.disarm();
        if (ec == http::error::need_buffer) ec = {};
        have += (kBuf - have) - res.body().size;
        if (ec) {
          upstream_failed = true;
          upstream_error =
              watch.client_gone ? std::string("client left")
              : up->dl.fired ? fmt::format("{} sent nothing for {} ms", b.cfg->name, idle.count())
                             : fmt::format("{} failed mid-response: {}", b.cfg->name, ec.message());
        }
        done = p.is_done();
      }
      if (watch.client_gone) break;
      // SSE goes out event by event: everything up to the last complete event now, the rest
      // when it is complete.
      std::size_t cut = have;
      if (sse && !done) {
        cut = last_event_boundary(buf.get(), have);
        if (cut == 0 && have == kBuf && !upstream_failed) cut = have;  // a giant event
      }
      const bool can_end_cleanly = upstream_failed && sse && chunked;
      const std::string_view piece(buf.get(), cut);
      usage.feed(piece);
      if (responses_api && sse) sequence.feed(piece);
      if (can_end_cleanly) {
        tail = mid_stream_error_tail(
            responses_api, sequence.next(),
            fmt::format("The upstream server failed mid-stream: {}.", upstream_error));
      }
      const bool last = done || can_end_cleanly;
      if (cut == 0 && tail.empty() && !last && !upstream_failed) continue;

      char size_line[32];
      char tail_line[32];
      std::array<net::const_buffer, 7> out{};
      std::size_t k = 0;
      if (!header_bytes.empty()) out[k++] = net::buffer(header_bytes);
      if (chunked) {
        if (cut > 0) {
          auto r = fmt::format_to_n(size_line, sizeof size_line, "{:x}\r\n", cut);
          out[k++] = net::buffer(size_line, r.size);
          out[k++] = net::buffer(buf.get(), cut);
          out[k++] = net::buffer("\r\n", 2);
        }
        if (!tail.empty()) {
          auto r = fmt::format_to_n(tail_line, sizeof tail_line, "{:x}\r\n", tail.size());
          out[k++] = net::buffer(tail_line, r.size);
          out[k++] = net::buffer(tail.data(), tail.size());
          out[k++] = net::buffer("\r\n0\r\n\r\n", 7);
        } else if (last) {
          out[k++] = net::buffer("0\r\n\r\n", 5);
        }
      } else if (cut > 0) {
        out[k++] = net::buffer(buf.get(), cut);
      }
      if (k > 0) {
        c.dl.arm(idle);
        auto [ec, n] = co_await net::async_write(c.sock, out, use_tuple);
        c.dl.disarm();
        if (ec) {
          client_failed = true;
          break;
        }
        bytes_out += cut + tail.size();
        header_bytes.clear();
      }
      if (upstream_failed && !can_end_cleanly) {
        // A fixed-length or non-SSE body cannot be ended cleanly: close, so the client sees
        // the truncation.
        c.keep_alive = false;
        break;
      }
      if (last) break;
      if (cut < have) std::memmove(buf.get(), buf.get() + cut, have - cut);
      have -= cut;
    }
    if (!header_bytes.empty() && !client_failed && !watch.client_gone) {
      // Nothing of the body was written (HEAD, or an empty body): send the header alone.
      c.dl.arm(idle);
      auto [ec, n] = co_await net::async_write(c.sock, net::buffer(header_bytes), use_tuple);
      c.dl.disarm();
      if (ec) client_failed = true;
    }
    res.body().data = nullptr;
    w.give_buf(std::move(buf));
    watch.up = nullptr;  // from here on the connection may go back to the pool
    rec.bytes_out = bytes_out;
    rec.prompt_tokens = usage.prompt;
    rec.completion_tokens = usage.completion;
    if (watch.client_gone || client_failed) {
      rec.error = "client left before the response ended";
      c.keep_alive = false;
    } else if (upstream_failed) {
      rec.error = upstream_error;
    }
    // Back to the pool only when the exchange ended cleanly on both sides and the response
    // neither ended by close nor asked for it (the parser's keep_alive() says both).
    if (p.is_done() && !upstream_failed && !watch.client_gone && p.keep_alive()) {
      release(w, b, std::move(a.up));
    } else {
      boost::system::error_code ignored;
      a.up->sock.close(ignored);
    }
  }

  // ---- the client watch ----
  /// Completes when the client closes or resets its connection (then closes the current
  /// upstream connection, so the backend aborts), when it pipelines its next request (those
  /// bytes stay in the client's buffer), or when stop_watch() cancels it.
  /// `watch` and `wake` belong to the session, which waits (stop_watch) for this handler before
  /// it reads again or ends, so the raw pointers stay valid.
  static void watch_client(tcp::socket& sock, beast::flat_buffer& buf, ClientWatch* watch,
                           net::steady_timer* wake) {
    // A plain completion handler, not a coroutine: one per request, so it should be cheap.
    sock.async_read_some(buf.prepare(512),
                         [&buf, watch, wake](boost::system::error_code ec, std::size_t n) {
                           if (!ec) {
                             buf.commit(n);
                           } else if (!watch->finished && ec != net::error::operation_aborted) {
                             watch->client_gone = true;
                             watch->close_upstream();
                           }
                           watch->done = true;
                           wake->cancel();
                         });
  }

  /// Ends the watch and waits until its read is gone, so the session may read the socket again.
  awaitable<void> stop_watch(Client& c, ClientWatch& watch, net::steady_timer& wake) {
    watch.finished = true;
    watch.up = nullptr;
    if (!watch.done) {
      boost::system::error_code ignored;
      c.sock.cancel(ignored);
      while (!watch.done) co_await wake.async_wait(use_tuple);
    }
  }

  // ---- /v1/models: the union of the backends' models ----
  awaitable<void> models(Worker& w, Client& c, Request& req, const std::string& request_id) {
    json::array data;
    std::vector<std::string> seen;
    std::vector<std::string> errors;
    for (auto& bp : shared_.backends) {
      BackendRt& b = *bp;
      http::request<http::string_body> mreq{http::verb::get, b.cfg->base_path + "/v1/models", 11};
      mreq.set(http::field::host, b.host_header);
      if (!b.authorization.empty()) mreq.set(http::field::authorization, b.authorization);
      mreq.keep_alive(true);
      bool ok = false;
      for (int round = 0; round < 2 && !ok; ++round) {
        auto conn = co_await connect(w, b, round == 0);
        if (!conn.up) {
          errors.push_back(conn.fail.message);
          break;
        }
        conn.up->dl.arm(std::chrono::seconds(10));
        auto [wec, wn] = co_await http::async_write(conn.up->sock, mreq, use_tuple);
        if (wec) continue;
        http::response_parser<http::string_body> rp;
        rp.body_limit(8 << 20);
        auto [rec, rn] = co_await http::async_read(conn.up->sock, conn.up->buf, rp, use_tuple);
        conn.up->dl.disarm();
        if (rec) {
          if (!conn.up->reused) errors.push_back(fmt::format("{}: {}", b.cfg->name, rec.message()));
          continue;
        }
        ok = true;
        const bool reusable = rp.keep_alive();  // complete, and not ended by close
        auto res = rp.release();
        boost::system::error_code jec;
        auto v = json::parse(res.body(), jec);
        if (!jec && v.is_object() && v.as_object().contains("data") && v.at("data").is_array()) {
          for (auto& m : v.at("data").as_array()) {
            if (!m.is_object() || !m.as_object().contains("id") || !m.at("id").is_string())
              continue;
            std::string id(m.at("id").as_string());
            if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
            seen.push_back(id);
            data.push_back(m);
          }
        } else {
          errors.push_back(fmt::format("{}: invalid /v1/models body", b.cfg->name));
        }
        if (reusable) release(w, b, std::move(conn.up));
      }
    }
    if (seen.empty() && !errors.empty()) {
      co_await write_error(
          c, 503, fmt::format("No backend answered /v1/models: {}", fmt::join(errors, "; ")), &req,
          true, request_id);
      co_return;
    }
    json::object body;
    body["object"] = "list";
    body["data"] = std::move(data);
    std::string text = json::serialize(body);
    co_await write_json(c, 200, std::move(text), &req, request_id);
  }

  Shared shared_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace

int run_gateway(config::GatewayConfig cfg) {
  Gateway g(std::move(cfg));
  return g.run();
}

}  // namespace llmux::gateway
