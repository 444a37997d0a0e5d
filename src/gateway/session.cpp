#include "gateway/session.hpp"

#include <fmt/format.h>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "core/clock.hpp"
#include "core/ids.hpp"
#include "gateway/admin.hpp"
#include "gateway/client.hpp"
#include "gateway/dashboard_assets.hpp"
#include "gateway/health.hpp"
#include "gateway/http_rules.hpp"
#include "gateway/metrics_render.hpp"
#include "gateway/models.hpp"
#include "gateway/proxy.hpp"
#include "gateway/request_view.hpp"
#include "gateway/router.hpp"
#include "http/linger.hpp"

namespace llmux::gateway {

namespace {

/// GET /metrics and the dashboard: true when `path` was one of theirs (answered).
net::awaitable<bool> observe(Shared& s, const Fleet& f, Client& c, const Request& req,
                             std::string_view path, const std::string& request_id) {
  const bool get = req.method() == bhttp::verb::get || req.method() == bhttp::verb::head;
  if (path == "/metrics") {
    if (!get) {
      co_await write_error(c, 405, "Use GET for /metrics.", &req, true, request_id);
    } else {
      co_await write_content(c, 200, "text/plain; version=0.0.4; charset=utf-8",
                             prometheus_text(s, f), &req, request_id);
    }
    co_return true;
  }
  if (path != "/dashboard" && !path.starts_with("/dashboard/")) co_return false;
  if (!get) {
    co_await write_error(c, 405, "Use GET for the dashboard.", &req, true, request_id);
    co_return true;
  }
  if (path == "/dashboard") {  // its files are named relative to /dashboard/
    co_await write_content(c, 301, "text/plain", "", &req, request_id, {"location", "dashboard/"});
    co_return true;
  }
  const std::string_view file = path.substr(std::string_view("/dashboard/").size());
  if (file == "data") {
    co_await write_content(c, 200, "application/json", dashboard_json(s, f), &req, request_id,
                           {"cache-control", "no-store"});
    co_return true;
  }
  if (const DashboardAsset* a = find_dashboard_asset(file)) {
    co_await write_content(c, 200, a->content_type, std::string(a->body), &req, request_id,
                           {"cache-control", "no-cache"});
    co_return true;
  }
  co_await write_error(c, 404, fmt::format("No dashboard file '{}'.", file), &req, true,
                       request_id);
  co_return true;
}

net::awaitable<void> handle(Shared& s, const Fleet& f, Worker& w, Client& c, Request& req,
                            bool metrics_only) {
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  std::string request_id(req["x-request-id"]);
  if (request_id.empty() || request_id.size() > 200) request_id = random_id("", 32);
  if (req.method() == bhttp::verb::get && path == "/health") {  // readiness
    Readiness r = readiness(f);
    co_await write_json(c, r.status, std::move(r.body), &req, request_id);
    co_return;
  }
  if (req.method() == bhttp::verb::get && path == "/health/live") {  // liveness: the process runs
    co_await write_json(c, 200, R"({"status":"alive"})", &req, request_id);
    co_return;
  }
  // The gateway's own metrics and dashboard: on the main listeners unless metrics.listen
  // gives them an address of their own (which then answers nothing else).
  if (f.cfg.metrics.enabled && (metrics_only || f.cfg.metrics.listen.empty()) &&
      co_await observe(s, f, c, req, path, request_id))
    co_return;
  if (f.cfg.metrics.enabled && !metrics_only && !f.cfg.metrics.listen.empty() &&
      (path == "/metrics" || path == "/dashboard" || path.starts_with("/dashboard/"))) {
    co_await write_error(c, 404,
                         fmt::format("{} is served on metrics.listen ({}:{}), not here.", path,
                                     f.cfg.metrics.listen[0].address, f.cfg.metrics.listen[0].port),
                         &req, true, request_id);
    co_return;
  }
  if (metrics_only) {
    co_await write_error(
        c, 404,
        fmt::format("No {} here: this address (metrics.listen) serves /metrics and /dashboard.",
                    path),
        &req, true, request_id);
    co_return;
  }
  if (is_admin_path(path)) {
    co_await admin(s, f, c, req, path, request_id);
    co_return;
  }
  if (req.method() == bhttp::verb::get && path == "/v1/models") {
    co_await models(f, w, c, req, request_id);
    co_return;
  }
  BodyFields fields;
  if (!req.body().empty()) fields = read_body_fields(req.body());
  const auto route_index = match_route(f.cfg.routes, req.method_string(), path, fields.model);
  if (!route_index) {
    co_await write_error(
        c, 404, fmt::format("No route for {} {}.", std::string_view(req.method_string()), path),
        &req, true, request_id);
    co_return;
  }
  co_await proxy(s, f, w, c, req, f.routes[*route_index], fields, request_id);
}

}  // namespace

net::awaitable<void> session(Shared& s, Worker& w, tcp::socket sock, bool metrics_only) {
  // The accept loop counted this connection (limits.max_connections); it ends here.
  struct Counted {
    std::atomic<int>& n;
    ~Counted() { n.fetch_sub(1, std::memory_order_relaxed); }
  } counted{s.connections};
  // limits.connection_rate: a token bucket of one second's requests.
  double tokens = w.fleet().cfg.limits.connection_rate;
  std::int64_t refilled_ns = mono_ns();
  Client c(std::move(sock), w.deadlines);
  boost::system::error_code pec;
  auto rep = c.sock.remote_endpoint(pec);
  if (!pec) c.peer = rep.address().to_string();
  // An error answered while the client may still be sending: close by lingering, or the
  // unread bytes make the kernel reset the connection and the client never reads the answer.
  bool linger = false;
  for (;;) {
    // This request's settings: the configuration in use now (a reload changes the next ones).
    const config::Timeouts t = w.fleet().cfg.timeouts;
    const config::Limits limits = w.fleet().cfg.limits;
    const double rate = limits.connection_rate;
    c.write_timeout = t.idle;
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(limits.max_header_bytes);
    parser.body_limit(limits.max_body_bytes);
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
    auto [ec, n] = co_await bhttp::async_read_header(c.sock, c.buf, parser, use_tuple);
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
          beast::iequals(h[bhttp::field::expect], "100-continue")) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [wec, wn] = co_await net::async_write(c.sock, net::buffer(kContinue), use_tuple);
        if (wec) break;
      }
      while (!ec && !parser.is_done()) {
        c.dl.arm(t.client_body, /*close_on_expiry=*/false);
        std::tie(ec, n) = co_await bhttp::async_read_some(c.sock, c.buf, parser, use_tuple);
        c.dl.disarm();
      }
    }
    if (c.dl.fired && ec) ec = beast::error::timeout;
    if (ec) {
      if (ec == bhttp::error::end_of_stream || ec == net::error::eof ||
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
      if (ec == bhttp::error::body_limit) {
        status = 413;
        msg = fmt::format("Request body too large (limit {} bytes).", limits.max_body_bytes);
      } else if (ec == bhttp::error::header_limit) {
        status = 431;
        msg = fmt::format("Request headers too large (limit {} bytes).", limits.max_header_bytes);
      }
      co_await write_error(c, status, msg, nullptr, false);
      break;
    }
    Request req = parser.release();
    // Trailer fields of a chunked body were appended to the header: they end here.
    drop_fields_after(req, header_fields);
    c.keep_alive = req.keep_alive() && !s.draining.load(std::memory_order_relaxed);
    if (rate > 0) {
      const std::int64_t now = mono_ns();
      tokens = std::min(rate, tokens + rate * static_cast<double>(now - refilled_ns) / 1e9);
      refilled_ns = now;
      if (tokens < 1) {
        if (!co_await write_error(
                c, 429,
                fmt::format("Too many requests on this connection (limit {} per second).", rate),
                &req, c.keep_alive))
          break;
        if (!c.keep_alive) break;
        continue;
      }
      tokens -= 1;
    }
    {
      ActiveGuard active(s.active);
      const LeasePtr lease = w.lease;  // the request finishes on the configuration it began on
      co_await handle(s, *lease->fleet, w, c, req, metrics_only);
    }
    if (!c.keep_alive || s.draining.load(std::memory_order_relaxed)) break;
    // A large request grew the read buffer; do not keep that memory for an idle connection.
    if (c.buf.size() == 0 && c.buf.capacity() > 16384) c.buf.shrink_to_fit();
  }
  if (linger) {
    co_await http::lingering_close(c.sock);
  } else {
    boost::system::error_code ignored;
    c.sock.shutdown(tcp::socket::shutdown_send, ignored);
    c.sock.close(ignored);
  }
}

}  // namespace llmux::gateway
