// SPDX-License-Identifier: Apache-2.0
// `llmux sim`'s server: the wiring. One thread runs everything: the acceptor, every connection's
// coroutine, the engine driver and the runtime fault state, so nothing here takes a lock.
//
// Life of a generation request:
//   session() reads the request → Dispatcher::dispatch() routes it and handle_generate()
//   validates it (sim/api) → a Job is created and its sequence submitted to the EngineDriver →
//   the step timer fires at each step's absolute deadline → the driver completes the step and
//   hands every token to its Job, which formats the SSE frame (sim/frames) and wakes the Job's
//   writer → the writer (sim/stream) sends it, one frame per token, while a watcher notices a
//   client that leaves (then the sequence is aborted at once).
//
// The files: server.cpp (wiring, sessions), listener (accept, refusing new connections),
// http_io (connection, answers), dispatch (endpoint handlers), admin (/admin/faults and the
// runtime fault state: hang, crash, not ready), driver (engine on absolute deadlines), frames
// (SSE bytes), stream (writers and disconnect watcher), faults (flags and X-Llmux-Fault),
// runtime_faults (the /admin/faults body), store (Responses API store), timings
// (/debug/requests ground truth).
#include "sim/server.hpp"
#include "core/use_tuple.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <csignal>
#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "http/linger.hpp"
#include "sim/admin.hpp"
#include "sim/dispatch.hpp"
#include "sim/driver.hpp"
#include "sim/http_io.hpp"
#include "sim/kv_producer.hpp"
#include "sim/listener.hpp"
#include "sim/metrics.hpp"
#include "sim/store.hpp"
#include "sim/timings.hpp"

namespace llmux::sim {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using core::use_tuple;
using net::awaitable;

class Server {
 public:
  explicit Server(SimConfig cfg)
      : cfg_(std::move(cfg)),
        listener_(ioc_,
                  [this](tcp::socket socket) {
                    net::co_spawn(ioc_, session(std::move(socket)), net::detached);
                  }),
        control_(cfg_, ioc_, listener_),
        metrics_(cfg_.served_model_name, cfg_.max_model_len),
        store_(cfg_.response_store_max),
        timings_(cfg_.debug_timings_max),
        driver_(cfg_, ioc_, metrics_, store_),
        kv_producer_(cfg_, ioc_, driver_, metrics_),
        dispatcher_(cfg_, ioc_, driver_, metrics_, store_, timings_, control_, kv_producer_) {
    control_.on_freeze([this](bool frozen) { driver_.freeze(frozen); });
    control_.on_slow([this](double factor) { driver_.slow_down(factor); });
  }

  int run() {
    boost::system::error_code ec;
    auto addr = net::ip::make_address(cfg_.host, ec);
    if (ec) {
      spdlog::error("invalid --host '{}': {}", cfg_.host, ec.message());
      return 2;
    }
    ec = listener_.listen(tcp::endpoint(addr, static_cast<unsigned short>(cfg_.port)));
    if (ec) {
      spdlog::error("cannot listen on {}:{}: {}", cfg_.host, cfg_.port, ec.message());
      return 1;
    }
    const auto port = listener_.port();
    kv_producer_.set_address(cfg_.kv.host.empty() ? cfg_.host : cfg_.kv.host, port);
    net::signal_set signals(ioc_, SIGINT, SIGTERM);
    signals.async_wait([this](auto, int sig) {
      spdlog::info("signal {}: stopping", sig);
      ioc_.stop();
    });
    spdlog::info(
        "llmux sim: serving {} on http://{}:{} (KV cache {} blocks = {} tokens, max_num_seqs {}, "
        "time scale {})",
        cfg_.served_model_name, cfg_.host, port, cfg_.engine.num_kv_blocks,
        cfg_.engine.num_kv_blocks * cfg_.engine.block_size, cfg_.engine.max_num_seqs,
        cfg_.time_scale);
    if (cfg_.kv.role != KvRole::none)
      spdlog::info("KV transfer: role {}, engine id {}, link {} Gb/s x {}, load failures: {}",
                   to_string(cfg_.kv.role), cfg_.kv.engine_id, cfg_.kv.link.gbps,
                   cfg_.kv.link.efficiency, to_string(cfg_.kv.load_failure_policy));
    std::cout << fmt::format(R"({{"event":"ready","host":"{}","port":{},"pid":{}}})", cfg_.host,
                             port, ::getpid())
              << std::endl;
    ioc_.run();
    return 0;
  }

 private:
  awaitable<void> session(tcp::socket sock) {
    Conn connection(std::move(sock));
    const auto tracked = listener_.track(connection);
    for (bool answered = false;; answered = true) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(64 * 1024);
      if (cfg_.max_body_bytes > 0) {
        parser.body_limit(static_cast<std::uint64_t>(cfg_.max_body_bytes));
      } else {
        parser.body_limit(boost::none);  // vLLM's server has no limit
      }
      connection.idle = true;  // refusing new connections closes it now (unless an admin one)
      if (answered && connection.buf.size() == 0 && cfg_.keep_alive_timeout_s > 0) {
        // uvicorn's keep-alive timeout: after a response, the next request's first bytes must
        // come within it, or the connection is closed (silently, as uvicorn does).
        connection.stream.expires_after(
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                std::chrono::duration<double>(cfg_.keep_alive_timeout_s)));
        auto [ec, n] =
            co_await connection.stream.async_read_some(connection.buf.prepare(4096), use_tuple);
        if (ec) break;
        connection.buf.commit(n);
      }
      connection.stream.expires_after(std::chrono::seconds(600));
      auto [ec, n] =
          co_await http::async_read_header(connection.stream, connection.buf, parser, use_tuple);
      connection.idle = false;
      // Only an HTTP/1.1 client waits for `100 Continue` (RFC 9110 §10.1.1), and only while the
      // body is still to come.
      if (!ec && parser.get().version() >= 11 && !parser.is_done() &&
          beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        co_await net::async_write(connection.sock(),
                                  net::buffer(std::string_view("HTTP/1.1 100 Continue\r\n\r\n")),
                                  use_tuple);
      }
      if (!ec && !parser.is_done()) {
        std::tie(ec, n) =
            co_await http::async_read(connection.stream, connection.buf, parser, use_tuple);
      }
      if (ec) {
        if (ec == http::error::end_of_stream || ec == net::error::eof ||
            ec == beast::error::timeout || ec == net::error::connection_reset ||
            ec == net::error::operation_aborted)
          break;
        int status = 400;
        if (ec == http::error::body_limit) status = 413;
        if (ec == http::error::header_limit) status = 431;
        connection.stream.expires_after(std::chrono::seconds(5));
        co_await write_error(connection, status,
                             fmt::format("malformed HTTP request: {}", ec.message()), false);
        // The request was not read to its end: closing now, with the client's bytes unread,
        // would reset the connection and the client would never read this answer.
        connection.stream.expires_never();
        co_await ::llmux::http::lingering_close(connection.sock());
        co_return;
      }
      connection.stream.expires_never();
      Request req = parser.release();
      connection.keep_alive = req.keep_alive();
      const std::string_view target = req.target();
      if (target.substr(0, target.find('?')) != kAdminFaultsPath) {
        // A hung simulator reads requests but answers none (but /admin/faults, to undo it).
        if (control_.hung() && !co_await control_.hold_while_hung(connection)) break;
        if (listener_.refusing() && !connection.admin) connection.keep_alive = false;
      }
      co_await dispatcher_.dispatch(connection, req);
      if (!connection.keep_alive || (listener_.refusing() && !connection.admin)) break;
    }
    boost::system::error_code ignored;
    connection.sock().shutdown(tcp::socket::shutdown_send, ignored);
    connection.sock().close(ignored);
  }

  SimConfig cfg_;
  net::io_context ioc_{1};
  Listener listener_;
  FaultControl control_;
  SimMetrics metrics_;
  ResponseStore store_;
  TimingLog timings_;
  EngineDriver driver_;
  KvProducer kv_producer_;
  Dispatcher dispatcher_;
};

}  // namespace

int run_server(SimConfig cfg) {
  Server server(std::move(cfg));
  return server.run();
}

}  // namespace llmux::sim
