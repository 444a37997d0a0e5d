// SPDX-License-Identifier: Apache-2.0
#include "gateway/upstream_attempt.hpp"

#include <array>
#include <memory>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>

#include "core/clock.hpp"
#include "gateway/health_checker.hpp"
#include "gateway/http_rules.hpp"
#include "gateway/migration.hpp"
#include "gateway/priority_field.hpp"
#include "http/read_parsed.hpp"

namespace llmux::gateway {

using upstream::Outcome;
using Kind = upstream::Outcome::Kind;

net::awaitable<std::shared_ptr<upstream::BackendConnection>> connect(
    const Fleet& fleet, Worker& worker, upstream::Backend& backend, bool allow_pooled,
    Outcome& failure, upstream::BackendConnection** watched) {
  if (allow_pooled) {
    if (auto connection = worker.pool_for(backend).take()) {
      if (watched) *watched = connection.get();
      co_return connection;
    }
  }
  auto connection =
      std::make_shared<upstream::BackendConnection>(worker.ioc.get_executor(), worker.deadlines);
  if (watched) *watched = connection.get();
  connection->dl.arm(fleet.cfg.timeouts.connect);
  auto [ec, ep] =
      co_await net::async_connect(connection->sock.socket(), backend.endpoints, use_tuple);
  connection->dl.disarm();
  if (ec) {
    failure = Outcome{};
    failure.kind = Kind::connect_failed;
    failure.refused = ec == net::error::connection_refused;
    failure.message = fmt::format("connect to {} ({}:{}) failed: {}", backend.name, backend.host,
                                  backend.port, connection->dl.fired ? "timed out" : ec.message());
    co_return nullptr;
  }
  boost::system::error_code ignored;
  connection->sock.socket().set_option(tcp::no_delay(true), ignored);
  if (backend.tls) {
    // https://: the handshake (and the certificate's check) within what is left of
    // timeouts.connect. A failure is a failed connect: nothing was sent, another backend may
    // take the request.
    connection->sock.start_client(backend.tls, backend.host, backend.tls_verify);
    connection->dl.arm(fleet.cfg.timeouts.connect);
    const boost::system::error_code hec = co_await connection->sock.handshake();
    connection->dl.disarm();
    if (hec) {
      failure = Outcome{};
      failure.kind = Kind::connect_failed;
      failure.message = fmt::format(
          "TLS handshake with {} ({}:{}) failed: {}", backend.name, backend.host, backend.port,
          connection->dl.fired ? "timed out" : connection->sock.tls_error_message(hec));
      co_return nullptr;
    }
  }
  co_return connection;
}

void release(Worker& worker, upstream::Backend& backend,
             std::shared_ptr<upstream::BackendConnection> connection) {
  if (connection->buf.size() != 0 || backend.retired.load(std::memory_order_relaxed)) {
    boost::system::error_code ignored;
    connection->sock.close(ignored);
    return;
  }
  worker.pool_for(backend).put(std::move(connection), backend.pool_idle_timeout);
}

namespace {

/// No attempt: `outcome` says why.
Attempt failed(Outcome& outcome, Kind kind, std::string message) {
  outcome = Outcome{};
  outcome.kind = kind;
  outcome.message = std::move(message);
  return {};
}

/// The upstream request's head for `backend` (a worker's pooled builder; give it back).
ByteBuilder upstream_head(Worker& worker, const upstream::Backend& backend, const Request& req,
                          std::string_view peer, std::string_view request_id, std::size_t body_size,
                          bool keep_client_authorization, bool https) {
  ByteBuilder head = worker.take_bytes();
  // The backend's base path before the client's target (none: the target as it is).
  std::string prefixed;
  if (!backend.base_path.empty()) prefixed.append(backend.base_path).append(req.target());
  UpstreamRequestParts parts{backend.base_path.empty() ? req.target() : std::string_view(prefixed),
                             backend.host_header,
                             backend.authorization,
                             peer,
                             request_id,
                             body_size};
  parts.keep_client_authorization = keep_client_authorization;
  parts.https = https;
  build_upstream_head(head, req, parts);
  return head;
}

/// Arms the next step of a stepped wait for the response header (cancelling the read, not
/// closing the connection), within the first_byte timeout from `sent_ns`; false when that timeout
/// has passed (the deadline then counts as fired).
bool arm_header_step(upstream::BackendConnection& connection, const Fleet& fleet,
                     std::int64_t sent_ns) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      fleet.cfg.timeouts.first_byte - std::chrono::nanoseconds(mono_ns() - sent_ns));
  if (left.count() <= 0) {
    connection.dl.fired = true;
    return false;
  }
  connection.dl.arm(std::min(left, kDownCheckStep), /*close_on_expiry=*/false);
  return true;
}

/// A pooled builder given back to its worker when the scope ends.
struct PooledBytes {
  Worker& worker;
  ByteBuilder bytes;
  ~PooledBytes() { worker.give_bytes(std::move(bytes)); }
};

}  // namespace

net::awaitable<Attempt> send(const Fleet& fleet, Worker& worker, upstream::Backend& backend,
                             const Request& req, const BodyFields& fields, ClientConnection& client,
                             const std::string& request_id, const UsageRequest& usage, bool queued,
                             Outcome& outcome, bool hedge_leg) {
  // A request that may run twice waits for its header in steps and goes elsewhere when its
  // backend is declared down meanwhile; one the backend may store, only when it is down for sure
  // (gateway/migration.hpp).
  const bool stored = may_be_stored(fleet, req.method_string(), req.path(), fields);
  const bool rescue_when_down =
      stored || may_run_twice(fleet, req.method_string(), req.path(), fields);
  const ClientWatch& watch = client.watch;
  upstream::BackendConnection*& watched = hedge_leg ? client.watch.hedge_up : client.watch.up;
  // A backend with send_priority gets the request's class as vLLM's `priority`
  // (gateway/priority_field.hpp); any other the body as the usage request sends it.
  std::unique_ptr<PriorityBody> with_priority;
  if (backend.send_priority.load(std::memory_order_relaxed)) {
    with_priority = std::make_unique<PriorityBody>();
    if (!body_with_priority(req.body(), usage, fields,
                            fleet.cfg.priorities.vllm_priority(client.priority_class),
                            *with_priority))
      with_priority.reset();
  }
  const PooledBytes head{
      worker, upstream_head(worker, backend, req, client.peer, request_id,
                            with_priority ? with_priority->size() : usage.size(req.body()),
                            !fleet.keys.enabled(), client.sock.tls())};
  auto client_gone = [&] { return failed(outcome, Kind::client_left, "the client left"); };
  for (int round = 0; round < 2; ++round) {
    watched = nullptr;
    Attempt attempt;
    // A pooled connection is taken here, without a coroutine frame of connect()'s own.
    if (round == 0) attempt.up = worker.pool_for(backend).take();
    if (attempt.up)
      watched = attempt.up.get();
    else
      attempt.up = co_await connect(fleet, worker, backend, false, outcome, &watched);
    if (watch.client_gone) co_return client_gone();
    if (!attempt.up) co_return Attempt{};  // `outcome` says why
    std::array<net::const_buffer, 4> out{
        net::buffer(head.bytes.view()),
        net::buffer(with_priority ? std::string_view(with_priority->prefix)
                                  : usage.first(req.body())),
        net::buffer(with_priority ? with_priority->first : usage.second(req.body())),
        net::buffer(with_priority ? with_priority->second : std::string_view())};
    const std::size_t total = out[0].size() + out[1].size() + out[2].size() + out[3].size();
    attempt.up->dl.arm(fleet.cfg.timeouts.first_byte);
    // At once when the socket takes it all (the usual case), else the rest awaited.
    boost::system::error_code wec;
    std::size_t written = attempt.up->sock.write_now(out, wec);
    if (!wec && written < total) {
      http::skip_bytes(out, written);
      std::size_t more = 0;
      std::tie(wec, more) = co_await net::async_write(attempt.up->sock, out, use_tuple);
      written += more;
    }
    if (watch.client_gone) co_return client_gone();
    if (wec) {
      attempt.up->dl.disarm();
      const bool unsent = written == 0 && !attempt.up->dl.fired;
      if (unsent && attempt.up->reused && round == 0)
        continue;  // a pooled connection closed under us
      watched = nullptr;
      if (unsent)
        co_return failed(outcome, Kind::reset_before_send,
                         fmt::format("sending to {} failed before a byte was written: {}",
                                     backend.name, wec.message()));
      co_return failed(outcome, attempt.up->dl.fired ? Kind::timeout : Kind::broken,
                       fmt::format("sending to {} failed after {} bytes: {}", backend.name, written,
                                   attempt.up->dl.fired ? "timed out" : wec.message()));
    }
    attempt.sent_ns = mono_ns();
    if (rescue_when_down) arm_header_step(*attempt.up, fleet, attempt.sent_ns);
    boost::system::error_code rec;
    for (int interim = 0;; ++interim) {
      attempt.parser = UpstreamResponse::make(worker.take_bytes());
      attempt.parser->omit_queue_depth(queued);
      if (req.method() == bhttp::verb::head) attempt.parser->expect_no_body();
      // What has arrived is parsed at once; a wait is awaited here (no frame of read_parsed's).
      while (!http::try_read_parsed(attempt.up->sock, attempt.up->buf, *attempt.parser,
                                    http::Until::header, rec)) {
        const auto room = http::read_room(attempt.up->buf, 64 * 1024, false);
        auto [e, n] = co_await attempt.up->sock.async_read_some(room, use_tuple);
        if (rescue_when_down && e == net::error::operation_aborted && attempt.up->dl.fired &&
            !watch.client_gone) {
          // A step of the wait ended: the backend declared down sends the request elsewhere,
          // the first_byte timeout ends it, else it waits on.
          if (stored ? !backend.checks_ok.load(std::memory_order_relaxed)
                     : !backend.usable(mono_ns())) {
            watched = nullptr;
            boost::system::error_code ignored;
            attempt.up->sock.close(ignored);
            Attempt none = failed(outcome, Kind::broken,
                                  fmt::format("{} was declared down while the request waited "
                                              "for its answer",
                                              backend.name));
            outcome.backend_down = true;
            co_return none;
          }
          if (arm_header_step(*attempt.up, fleet, attempt.sent_ns)) continue;
          e = net::error::timed_out;
        }
        rec = http::read_ended(attempt.up->buf, *attempt.parser, n, e);
        if (rec || attempt.parser->is_done()) break;
      }
      if (rec) break;
      const int status = attempt.parser->status();
      if (status >= 200) break;
      // An interim response (100 Continue, 103 Early Hints): the final one follows on this
      // connection. It is not relayed (the client gets the final response only).
      if (status == 101 || interim >= 16) {
        rec = bhttp::error::bad_value;  // an upgrade nobody asked for, or endless 1xx
        break;
      }
    }
    attempt.up->dl.disarm();
    if (watch.client_gone) co_return client_gone();
    if (rec) {
      const bool nothing = rec == bhttp::error::end_of_stream ||
                           rec == net::error::connection_reset || rec == net::error::eof;
      watched = nullptr;
      if (attempt.up->dl.fired)
        co_return failed(outcome, Kind::timeout,
                         fmt::format("{} sent no response within {} ms", backend.name,
                                     fleet.cfg.timeouts.first_byte.count()));
      if (nothing) {
        // (No Attempt kept across the probe: a local would take its room in this frame.)
        failed(outcome, Kind::broken,
               fmt::format("{} closed the connection without a response", backend.name));
        // A request the backend may store goes elsewhere only when it is down for sure.
        if (stored && co_await confirmed_down(fleet, worker, backend)) {
          outcome.backend_down = true;
          outcome.message += " and is down";
        }
        co_return Attempt{};
      }
      co_return failed(outcome, Kind::bad_response,
                       fmt::format("{} sent an invalid response: {}", backend.name, rec.message()));
    }
    co_return attempt;
  }
  co_return failed(outcome, Kind::reset_before_send, "stale connection");
}

/// Tells the backend's health and the route's policy how an attempt ended.
void report_outcome(const Fleet& fleet, upstream::Backend& backend,
                    policy::AttemptObserver* observer, const upstream::Outcome& outcome,
                    std::string_view request_id, std::int64_t now) {
  if (auto event = upstream::record_outcome(backend, outcome, now, fleet.outlier))
    log_health_event(*event, request_id);
  if (observer) observer->on_done(outcome);
}

}  // namespace llmux::gateway
