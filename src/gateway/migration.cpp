// SPDX-License-Identifier: Apache-2.0
#include "gateway/migration.hpp"

#include <fmt/format.h>
#include <boost/asio/write.hpp>

#include "core/use_tuple.hpp"
#include "gateway/relay.hpp"
#include "gateway/stream_usage.hpp"
#include "gateway/upstream_attempt.hpp"

namespace llmux::gateway {

using upstream::Outcome;
using Kind = upstream::Outcome::Kind;

std::unique_ptr<StreamContinuation> continuation_for(const Fleet& fleet, const Request& req,
                                                     const RouteRuntime& route,
                                                     const BodyFields& fields) {
  if (!fleet.cfg.migration.enabled || !fields.stream || !fields.parsed ||
      route.backends.size() < 2 || req.method() != bhttp::verb::post)
    return nullptr;
  const std::string_view path = req.path();
  openai::Dialect dialect;
  if (path == "/v1/chat/completions" && !fields.not_continuable)
    dialect = openai::Dialect::chat;
  else if (path == "/v1/completions" && !fields.not_continuable)
    dialect = openai::Dialect::completions;
  else if (path == "/v1/responses" && fields.store_false && fields.previous_response_id.empty())
    // Rescued before its output only (a replay, so whatever its fields): stored nowhere, and
    // naming no response that only one backend holds.
    dialect = openai::Dialect::responses;
  else
    return nullptr;
  // The client's own opt-out.
  const std::string_view opt = req["x-llmux-migrate"];
  if (opt == "off" || opt == "false" || opt == "0") return nullptr;
  return std::make_unique<StreamContinuation>(dialect, fleet.cfg.migration.max_kept_bytes);
}

bool may_run_twice(const Fleet& fleet, std::string_view method, std::string_view path,
                   const BodyFields& fields) {
  if (!fleet.cfg.migration.enabled || method != "POST" || !fields.parsed) return false;
  return path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/messages" ||
         (path == "/v1/responses" && fields.store_false);
}

bool may_be_stored(const Fleet& fleet, std::string_view method, std::string_view path,
                   const BodyFields& fields) {
  return fleet.cfg.migration.enabled && method == "POST" && fields.parsed &&
         path == "/v1/responses" && !fields.store_false;
}

net::awaitable<bool> confirmed_down(const Fleet& fleet, Worker& worker,
                                    upstream::Backend& backend) {
  if (!backend.checks_ok.load(std::memory_order_relaxed)) co_return true;
  Outcome failure;
  auto connection = co_await connect(fleet, worker, backend, /*allow_pooled=*/false, failure);
  if (!connection) co_return failure.refused;
  // Connected: a process that is dying may still have taken the connection into its listener's
  // backlog, so it must answer something (any status) within the checks' timeout to count as up;
  // a reset or a close without a byte says it is down, silence says nothing for sure.
  const std::string probe =
      fmt::format("GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", backend.host_header);
  connection->dl.arm(fleet.cfg.health_checks.timeout);
  auto [write_error, written] =
      co_await net::async_write(connection->sock, net::buffer(probe), use_tuple);
  char byte = 0;
  std::size_t bytes_read = 0;
  boost::system::error_code read_error = write_error;
  if (!write_error)
    std::tie(read_error, bytes_read) =
        co_await connection->sock.async_read_some(net::buffer(&byte, 1), use_tuple);
  const bool timed_out = connection->dl.fired;
  connection->dl.disarm();
  boost::system::error_code ignored;
  connection->sock.close(ignored);
  co_return bytes_read == 0 && !timed_out;
}

net::awaitable<void> end_stream_with_error(ClientConnection& client,
                                           const StreamContinuation& continuation,
                                           const std::string& message) {
  const std::string event =
      mid_stream_error_tail(continuation.dialect(), continuation.last_sequence_number() + 1,
                            fmt::format("The upstream server failed mid-stream: {}.", message));
  const std::string framed = fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", event.size(), event);
  client.dl.arm(client.write_timeout);
  auto [error, written] = co_await net::async_write(client.sock, net::buffer(framed), use_tuple);
  client.dl.disarm();
  if (error) client.keep_alive = false;
}

bool next_leg(const Fleet& fleet, const Request& req, const upstream::Backend& cut_backend,
              StreamContinuation& continuation, UsageRequest& usage, AccessRecord& rec) {
  if (rec.migrations >= fleet.cfg.migration.max_migrations) return false;
  std::optional<std::string> body = continuation.next_leg_body(req.body());
  if (!body) return false;
  if (rec.migrations == 0) {
    rec.migrated_from = cut_backend.name;
    continuation.first_backend_metric_id = cut_backend.metric_id;
  }
  ++rec.migrations;
  usage = UsageRequest{};
  // (A Responses stream's leg is the client's request again, which reports its usage anyway.)
  if (continuation.dialect() == openai::Dialect::responses) return true;
  usage.asked = true;
  usage.owned = std::move(*body);
  return true;
}

void refuse_unusable_leg(Attempt& attempt, const upstream::Backend& backend, Outcome& outcome) {
  const int status = attempt.parser->status();
  if (status >= 200 && status <= 299 &&
      attempt.parser->content_type().find("text/event-stream") != std::string_view::npos)
    return;
  outcome = Outcome{};
  outcome.kind = Kind::bad_response;
  outcome.status = status;
  outcome.message = fmt::format("{} answered the continuation with {}", backend.name, status);
  boost::system::error_code ignored;
  attempt.up->sock.close(ignored);
  attempt.up.reset();
}

void count_migration(const Fleet& fleet, Worker& worker, const RouteRuntime& route,
                     const StreamContinuation& continuation, const upstream::Backend& backend) {
  if (!fleet.cfg.metrics.enabled) return;
  worker.worker_metrics->count(
      metrics::Family::migrations, route.metric_id, continuation.first_backend_metric_id,
      metrics::migration_target(backend.metric_id,
                                static_cast<int>(continuation.last_cut_reason())));
}

void settle_leg_tokens(const StreamContinuation& continuation, AccessRecord& rec) {
  if (!rec.prompt_tokens || !rec.completion_tokens) return;
  const LegTokens computed =
      continuation.computed(LegTokens{static_cast<std::uint64_t>(*rec.prompt_tokens),
                                      static_cast<std::uint64_t>(*rec.completion_tokens)});
  rec.prompt_tokens = static_cast<std::int64_t>(computed.prompt);
  rec.completion_tokens = static_cast<std::int64_t>(computed.completion);
}

}  // namespace llmux::gateway
