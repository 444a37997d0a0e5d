// SPDX-License-Identifier: Apache-2.0
#include "gateway/session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "core/ascii.hpp"
#include "core/clock.hpp"
#include "core/ids.hpp"
#include "gateway/admin.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/dashboard_assets.hpp"
#include "gateway/health_checker.hpp"
#include "gateway/http_rules.hpp"
#include "gateway/metrics_render.hpp"
#include "gateway/models.hpp"
#include "gateway/proxy.hpp"
#include "gateway/request_view.hpp"
#include "gateway/router.hpp"
#include "http/linger.hpp"
#include "http/read_parsed.hpp"

namespace llmux::gateway {

namespace {

/// GET /metrics and the dashboard: true when `path` was one of theirs (answered).
net::awaitable<bool> serve_metrics_and_dashboard(GatewayState& state, const Fleet& fleet,
                                                 ClientConnection& client, const Request& req,
                                                 std::string_view path,
                                                 const std::string& request_id) {
  const bool get = req.method() == bhttp::verb::get || req.method() == bhttp::verb::head;
  if (path == "/metrics") {
    if (!get) {
      co_await write_error(client, 405, "Use GET for /metrics.", &req, true, request_id);
    } else {
      co_await write_content(client, 200, "text/plain; version=0.0.4; charset=utf-8",
                             prometheus_text(state, fleet), &req, request_id);
    }
    co_return true;
  }
  if (path != "/dashboard" && !path.starts_with("/dashboard/")) co_return false;
  if (!get) {
    co_await write_error(client, 405, "Use GET for the dashboard.", &req, true, request_id);
    co_return true;
  }
  if (path == "/dashboard") {  // its files are named relative to /dashboard/
    co_await write_content(client, 301, "text/plain", "", &req, request_id,
                           {"location", "dashboard/"});
    co_return true;
  }
  const std::string_view file = path.substr(std::string_view("/dashboard/").size());
  if (file == "data") {
    co_await write_content(client, 200, "application/json", dashboard_json(state, fleet), &req,
                           request_id, {"cache-control", "no-store"});
    co_return true;
  }
  if (const DashboardAsset* asset = find_dashboard_asset(file)) {
    co_await write_content(client, 200, asset->content_type, std::string(asset->body), &req,
                           request_id, {"cache-control", "no-cache"});
    co_return true;
  }
  co_await write_error(client, 404, fmt::format("No dashboard file '{}'.", file), &req, true,
                       request_id);
  co_return true;
}

/// The first read of a request on an idle connection: a small request's header and body.
constexpr std::size_t kFirstRead = 2048;
/// The most one later read of a request takes.
constexpr std::size_t kMaxClientRead = 64 * 1024;

std::string_view path_of(const Request& req) {
  const std::string_view target = req.target();
  return target.substr(0, target.find('?'));
}

std::string peer_address(const tcp::socket& sock) {
  boost::system::error_code ec;
  auto endpoint = sock.remote_endpoint(ec);
  return ec ? std::string() : endpoint.address().to_string();
}

/// The 429 of a connection over limits.connection_rate; false when the write failed.
net::awaitable<bool> over_rate(ClientConnection& client, const Request& req, double rate) {
  co_return co_await write_error(
      client, 429, fmt::format("Too many requests on this connection (limit {} per second).", rate),
      &req, client.keep_alive);
}

/// Where a request is answered: by the gateway itself (health, its metrics and dashboard, the
/// admin API, the model list, a 404) or by a route's proxy.
enum class LocalAnswer {
  none,
  health,
  live,
  metrics_and_dashboard,
  metrics_elsewhere,
  metrics_only,
  admin,
  models
};

/// Decided without suspending: a coroutine keeps every local of its body in its frame, and the
/// session's frame lives as long as a held-open stream.
LocalAnswer local_answer_for(const Fleet& fleet, const Request& req, std::string_view path,
                             bool metrics_only) {
  const bool get = req.method() == bhttp::verb::get;
  if (get && path == "/health") return LocalAnswer::health;     // readiness
  if (get && path == "/health/live") return LocalAnswer::live;  // liveness: the process runs
  // The gateway's own metrics and dashboard: on the main listeners unless metrics.listen
  // gives them an address of their own (which then answers nothing else).
  const bool observed =
      path == "/metrics" || path == "/dashboard" || path.starts_with("/dashboard/");
  if (fleet.cfg.metrics.enabled && observed)
    return metrics_only || fleet.cfg.metrics.listen.empty() ? LocalAnswer::metrics_and_dashboard
                                                            : LocalAnswer::metrics_elsewhere;
  if (metrics_only) return LocalAnswer::metrics_only;
  if (is_admin_path(path)) return LocalAnswer::admin;
  if (get && path == "/v1/models") return LocalAnswer::models;
  return LocalAnswer::none;
}

/// Answers a request the gateway serves itself (`local_answer` is not none).
net::awaitable<void> answer_locally(GatewayState& state, const Fleet& fleet, Worker& worker,
                                    ClientConnection& client, const Request& req,
                                    LocalAnswer local_answer, std::string_view path,
                                    const std::string& request_id) {
  switch (local_answer) {
    case LocalAnswer::health: {
      Readiness report = readiness(fleet, state.generation.load(std::memory_order_acquire));
      co_await write_json(client, report.status, std::move(report.body), &req, request_id);
      break;
    }
    case LocalAnswer::live:
      co_await write_json(client, 200, R"({"status":"alive"})", &req, request_id);
      break;
    case LocalAnswer::metrics_and_dashboard:
      co_await serve_metrics_and_dashboard(state, fleet, client, req, path, request_id);
      break;
    case LocalAnswer::metrics_elsewhere:
      co_await write_error(
          client, 404,
          fmt::format("{} is served on metrics.listen ({}:{}), not here.", path,
                      fleet.cfg.metrics.listen[0].address, fleet.cfg.metrics.listen[0].port),
          &req, true, request_id);
      break;
    case LocalAnswer::metrics_only:
      co_await write_error(
          client, 404,
          fmt::format("No {} here: this address (metrics.listen) serves /metrics and /dashboard.",
                      path),
          &req, true, request_id);
      break;
    case LocalAnswer::admin:
      co_await admin(state, fleet, client, req, path, request_id);
      break;
    case LocalAnswer::models:
      co_await models(fleet, worker, client, req, request_id);
      break;
    case LocalAnswer::none:
      co_await write_error(
          client, 404,
          fmt::format("No route for {} {}.", std::string_view(req.method_string()), path), &req,
          true, request_id);
      break;
  }
}

/// The request's id (the client's X-Request-Id when it sent a usable one) and, for a request a
/// route may take, its body fields and the route (null: answered here, `local_answer` says how).
const RouteRuntime* route_request(const Fleet& fleet, Request& req, bool metrics_only,
                                  std::string& request_id, BodyFields& fields,
                                  LocalAnswer& local_answer) {
  const std::string_view path = path_of(req);
  const std::string_view client_id = req["x-request-id"];
  if (client_id.empty() || client_id.size() > 200)
    random_id_into(request_id, "", 32);
  else
    request_id.assign(client_id);
  local_answer = local_answer_for(fleet, req, path, metrics_only);
  if (local_answer != LocalAnswer::none) return nullptr;
  fields = req.body().empty() ? BodyFields{} : read_body_fields(req.body());
  const auto route_index = match_route(fleet.cfg.routes, req.method_string(), path, fields.model);
  return route_index ? &fleet.routes[*route_index] : nullptr;
}

/// How reading a request ended.
enum class Read { ok, closed, answered_linger };

/// Reads the connection's next request into `req` (limits and timeouts of the configuration in
/// use now), answering what cannot be read (400, 408, 413, 431) itself. A coroutine of its own:
/// the parser and the error answers exist while a request is read, not in the frame that a
/// held-open stream keeps.
net::awaitable<Read> read_request(Worker& worker, ClientConnection& client, Request& req) {
  const config::Timeouts timeouts = worker.fleet().cfg.timeouts;
  const config::Limits limits = worker.fleet().cfg.limits;
  client.write_timeout = timeouts.idle;
  RequestParser parser(req);
  parser.header_limit(limits.max_header_bytes);
  parser.body_limit(limits.max_body_bytes);
  // Idle keep-alive connections wait up to client_idle for a first byte; once a request
  // has started, its header must be complete within client_header, and no gap between two
  // reads of its body may exceed client_body. The deadline cancels the read instead of
  // closing the socket, so the client gets its 408.
  // What has arrived already is read and parsed at once, and a wait is awaited here: no
  // coroutine frame of read_more's or read_parsed's per request (read_parsed.hpp).
  boost::system::error_code ec;
  client.error_dialect = ErrorDialect::openai;  // until this request's target is known
  worker.lend_read_buf(client.buf);
  if (client.buf.size() == 0) {
    client.dl.arm(timeouts.client_idle, /*close_on_expiry=*/false);
    if (!http::try_read_more(client.sock, client.buf, parser, kFirstRead, true, ec)) {
      const auto room = http::read_room(client.buf, kFirstRead, true);
      auto [e, n] = co_await client.sock.async_read_some(room, use_tuple);
      ec = http::read_ended(client.buf, parser, n, e);
    }
    client.dl.disarm();
    if (ec) co_return Read::closed;  // idle timeout or the client closed: nothing to answer
  }
  client.dl.arm(timeouts.client_header, /*close_on_expiry=*/false);
  while (!http::try_read_parsed(client.sock, client.buf, parser, http::Until::header, ec)) {
    const auto room = http::read_room(client.buf, kMaxClientRead, false);
    auto [e, n] = co_await client.sock.async_read_some(room, use_tuple);
    ec = http::read_ended(client.buf, parser, n, e);
    if (ec || parser.is_done()) break;
  }
  client.dl.disarm();
  // Errors from here on speak the dialect of the API the request is for, once its header section
  // is whole (also when the parser then refuses its framing or the body's declared length).
  const std::string_view target = parser.scanned_target();
  client.error_dialect = error_dialect_for(target.substr(0, target.find('?')));
  if (!ec) {
    // How the body is delimited is checked here, before a byte of it is read: a request
    // whose length cannot be determined is never passed on, and its body never parsed as
    // the next request.
    if (auto bad = check_request_framing(req.fields(), req.version())) {
      co_await write_error(client, bad->status, bad->message, nullptr, false);
      co_return Read::answered_linger;
    }
    if (req.version() >= 11 && !parser.is_done() &&
        llmux::iequals(req[bhttp::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      auto [wec, wn] = co_await net::async_write(client.sock, net::buffer(kContinue), use_tuple);
      if (wec) co_return Read::closed;
    }
    while (!http::parse_buffered(parser, client.buf, http::Until::message, ec)) {
      client.dl.arm(timeouts.client_body, /*close_on_expiry=*/false);
      ec = co_await http::read_more(client.sock, client.buf, parser);
      client.dl.disarm();
      if (ec) break;
    }
  }
  if (client.dl.fired && ec) ec = beast::error::timeout;
  if (ec) {
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset)
      co_return Read::closed;
    if (ec == beast::error::timeout) {
      co_await write_error(client, 408, "Request timeout: the request was not received in time.",
                           nullptr, false);
      co_return Read::answered_linger;
    }
    int status = 400;
    std::string msg = fmt::format("Bad request: {}", ec.message());
    if (ec == bhttp::error::body_limit) {
      status = 413;
      msg = fmt::format("Request body too large (limit {} bytes).", limits.max_body_bytes);
    } else if (ec == bhttp::error::header_limit) {
      status = 431;
      msg = fmt::format("Request headers too large (limit {} bytes).", limits.max_header_bytes);
    }
    co_await write_error(client, status, msg, nullptr, false);
    co_return Read::answered_linger;
  }
  // (Trailer fields of a chunked body were dropped as they were parsed: gateway/request.hpp.)
  // The bytes of the request are parsed: an empty read buffer is given back rather than kept
  // through the response (the watch reads into a few bytes of its own; a pipelined request
  // lands here again).
  worker.take_back_read_buf(client.buf);
  co_return Read::ok;
}

/// Closes the connection: by lingering after an error answered while the client may still be
/// sending (or the unread bytes make the kernel reset the connection and the client never reads
/// the answer), else at once. A coroutine of its own: the lingering's state takes no room in the
/// session's frame.
net::awaitable<void> close_connection(ClientConnection& client, bool linger) {
  if (client.sock.tls()) {
    // close_notify first, best effort: a client that does not read gets a second at most.
    client.dl.arm(std::chrono::seconds(1), /*close_on_expiry=*/false);
    co_await client.sock.tls_shutdown();
    client.dl.disarm();
  }
  if (linger) {
    co_await http::lingering_close(client.sock.socket());
  } else {
    boost::system::error_code ignored;
    client.sock.socket().shutdown(tcp::socket::shutdown_send, ignored);
    client.sock.close(ignored);
  }
}

/// The TLS handshake of a connection to a TLS listener, within timeouts.client_header: false
/// when it failed (then the connection is closed here). A client that spoke plain HTTP gets a
/// plain-HTTP 400 saying so before the close.
net::awaitable<bool> tls_handshake(Worker& worker, ClientConnection& client,
                                   http::TlsContextPtr tls) {
  client.sock.start_server(std::move(tls));
  client.dl.arm(worker.fleet().cfg.timeouts.client_header);
  const boost::system::error_code ec = co_await client.sock.handshake();
  client.dl.disarm();
  if (!ec) co_return true;
  spdlog::debug("TLS handshake with {} failed: {}", client.peer,
                client.dl.fired ? std::string("timed out") : client.sock.tls_error_message(ec));
  if (!client.dl.fired && http::Stream::is_plain_http(ec)) {
    static constexpr std::string_view kPlain =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 49\r\n"
        "Connection: close\r\n\r\nThis port speaks HTTPS: use https:// to reach it\n";
    client.dl.arm(std::chrono::seconds(1));
    co_await net::async_write(client.sock.socket(), net::buffer(kPlain), use_tuple);
    client.dl.disarm();
    co_await http::lingering_close(client.sock.socket(), {std::chrono::seconds(2)});
  } else {
    boost::system::error_code ignored;
    client.sock.close(ignored);
  }
  co_return false;
}

/// limits.connection_rate: false when the request is over it (`tokens`: a bucket of one
/// second's requests, refilled at `refilled_ns`).
bool within_rate(double rate, double& tokens, std::int64_t& refilled_ns) {
  const std::int64_t now = mono_ns();
  tokens = std::min(rate, tokens + rate * static_cast<double>(now - refilled_ns) / 1e9);
  refilled_ns = now;
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

}  // namespace

net::awaitable<void> session(GatewayState& state, Worker& worker, tcp::socket sock,
                             bool metrics_only, http::TlsContextPtr tls) {
  // The accept loop counted this connection (limits.max_connections); it ends here.
  struct Counted {
    std::atomic<int>& connections;
    ~Counted() { connections.fetch_sub(1, std::memory_order_relaxed); }
  } counted{state.connections};
  // Nothing escapes (co_spawn's `detached` would drop it unseen): what would is logged, and the
  // connection closes as the frame ends.
  try {
    // limits.connection_rate: a token bucket of one second's requests.
    double tokens = worker.fleet().cfg.limits.connection_rate;
    std::int64_t refilled_ns = mono_ns();
    ClientConnection client(std::move(sock), worker.deadlines);
    client.peer = peer_address(client.sock.socket());
    if (tls && !co_await tls_handshake(worker, client, std::move(tls))) co_return;
    // An error answered while the client may still be sending: close by lingering, or the
    // unread bytes make the kernel reset the connection and the client never reads the answer.
    bool linger = false;
    // This frame lives as long as the connection (a held-open stream's too): what a request needs
    // only while it is read or answered here lives in the frames of the coroutines below.
    Request req;
    std::string request_id;
    BodyFields fields;
    LocalAnswer local_answer = LocalAnswer::none;
    for (;;) {
      const Read read = co_await read_request(worker, client, req);
      if (read != Read::ok) {
        linger = read == Read::answered_linger;
        break;
      }
      client.keep_alive = req.keep_alive() && !state.draining.load(std::memory_order_relaxed);
      if (const double rate = worker.fleet().cfg.limits.connection_rate;
          rate > 0 && !within_rate(rate, tokens, refilled_ns)) {
        if (!co_await over_rate(client, req, rate) || !client.keep_alive) break;
        continue;
      }
      {
        ActiveGuard active(state.active);
        const FleetHandlePtr fleet_handle =
            worker.fleet_handle;  // the request finishes on the configuration it began on
        const Fleet& fleet = *fleet_handle->fleet;
        if (const RouteRuntime* route =
                route_request(fleet, req, metrics_only, request_id, fields, local_answer))
          co_await proxy(state, fleet, worker, client, req, *route, fields, request_id);
        else
          co_await answer_locally(state, fleet, worker, client, req, local_answer, path_of(req),
                                  request_id);
      }
      if (!client.keep_alive || state.draining.load(std::memory_order_relaxed)) break;
    }
    co_await close_connection(client, linger);
  } catch (const std::exception& e) {
    spdlog::error("a client session ended on an exception: {}", e.what());
  } catch (...) {
    spdlog::error("a client session ended on an exception");
  }
}

}  // namespace llmux::gateway
