// SPDX-License-Identifier: Apache-2.0
#pragma once
// One attempt of a request at a backend: a connection (pooled or new), the request written, the
// final response header read. The proxy (gateway/proxy.hpp) decides which backend and whether
// another attempt follows; the relay (gateway/relay.hpp) streams the response.
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/client_connection.hpp"
#include "gateway/request_view.hpp"
#include "gateway/stream_usage.hpp"
#include "gateway/upstream_response.hpp"
#include "gateway/worker.hpp"
#include "policy/policy.hpp"
#include "upstream/outcome.hpp"

namespace llmux::gateway {

/// One attempt whose final response header has arrived (`up` null: none did; why is elsewhere).
struct Attempt {
  std::shared_ptr<upstream::BackendConnection> up;
  UpstreamResponse::Ptr parser;
  std::int64_t sent_ns = 0;  // when the request's last byte was written (mono_ns)
  /// What the route's policy follows of this attempt (Policy::on_dispatch; null: nothing): the
  /// relay tells it the stream's tokens, the proxy how the attempt ended.
  std::unique_ptr<policy::AttemptObserver> observer;
};

/// A connection to a backend, or why there is none.
struct ConnectResult {
  std::shared_ptr<upstream::BackendConnection> up;
  upstream::Outcome outcome;
};

/// A pooled connection to `backend` when `allow_pooled` and one is idle, else a new one (connect
/// timeout). `watch`, when given, learns the connection at once (a client leaving closes it).
net::awaitable<ConnectResult> connect(const Fleet& fleet, Worker& worker,
                                      upstream::Backend& backend, bool allow_pooled,
                                      ClientWatch* watch = nullptr);

/// Back to the worker's pool: only a connection whose last response was complete, did not end
/// by close, and left nothing unread (the caller checks the first two); never one of a backend a
/// reload removed.
void release(Worker& worker, upstream::Backend& backend,
             std::shared_ptr<upstream::BackendConnection> connection);

/// Sends the request (its head built here for this backend from the client's `req`, which is
/// never modified, then the client's body) to `backend` and reads
/// the final response header, skipping interim 1xx responses. A pooled connection that turns
/// out closed before a byte of the request was written is replaced by a fresh one (same
/// backend). Once any byte was written, a failure is final for this request: the backend may
/// have received it, and a retry could run the generation twice. No connection in the answer:
/// `outcome` says why. `queued`: the request waited in the route's queue (the client gets the
/// gateway's X-Llmux-Queue-Depth, not the backend's).
net::awaitable<Attempt> send(const Fleet& fleet, Worker& worker, upstream::Backend& backend,
                             const Request& req, ClientConnection& client,
                             const std::string& request_id, const UsageRequest& usage, bool queued,
                             upstream::Outcome& outcome);

/// Tells the backend's health and the route's policy how an attempt ended.
void report_outcome(const Fleet& fleet, upstream::Backend& backend,
                    policy::AttemptObserver* observer, const upstream::Outcome& outcome,
                    std::string_view request_id, std::int64_t now);

}  // namespace llmux::gateway
