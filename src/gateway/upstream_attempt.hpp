// SPDX-License-Identifier: Apache-2.0
#pragma once
// One attempt of a request at a backend: a connection (pooled or new), the request written, the
// final response header read. The proxy (gateway/proxy.hpp) decides which backend and whether
// another attempt follows; the relay (gateway/relay.hpp) streams the response.
#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/access_log.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/continuation.hpp"
#include "gateway/request_view.hpp"
#include "gateway/stream_usage.hpp"
#include "gateway/upstream_response.hpp"
#include "gateway/worker.hpp"
#include "policy/policy.hpp"
#include "upstream/outcome.hpp"

namespace llmux::gateway {

/// How long a request that may go to another backend (a generation request waiting for its
/// header, a stream another backend may continue) waits at a time before it looks whether its
/// backend was declared down (ejected, failed checks) meanwhile.
inline constexpr std::chrono::milliseconds kDownCheckStep{500};

/// One attempt whose final response header has arrived (`up` null: none did; why is elsewhere).
struct Attempt {
  std::shared_ptr<upstream::BackendConnection> up;
  UpstreamResponse::Ptr parser;
  std::int64_t sent_ns = 0;  // when the request's last byte was written (mono_ns)
  /// What the route's policy follows of this attempt (Policy::on_dispatch; null: nothing): the
  /// relay tells it the stream's tokens, the proxy how the attempt ended.
  std::unique_ptr<policy::AttemptObserver> observer;
  /// What the relay keeps so that another backend may continue the stream if this one breaks
  /// (gateway/continuation.hpp; null: it is not continued).
  StreamContinuation* continuation = nullptr;
  /// Set by the relay: the stream broke, the client's response was left open, and
  /// `continuation` says how another backend goes on (gateway/migration.hpp).
  bool continues_elsewhere = false;
  HedgeResult hedge = HedgeResult::none;
};

/// A pooled connection to `backend` when `allow_pooled` and one is idle, else a new one (connect
/// timeout); null when none could be made, and `failure` says why. `watched`, when given (a
/// ClientWatch's pointer), learns the connection at once (a client leaving closes it). (The
/// failure is the caller's: a result that held an Outcome would take ~100 bytes of the frame of
/// send(), which every request has while it waits for its answer.)
net::awaitable<std::shared_ptr<upstream::BackendConnection>> connect(
    const Fleet& fleet, Worker& worker, upstream::Backend& backend, bool allow_pooled,
    upstream::Outcome& failure, upstream::BackendConnection** watched = nullptr);

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
/// gateway's X-Llmux-Queue-Depth, not the backend's). A request that may run twice
/// (gateway/migration.hpp: may_run_twice, from `fields`) waits for its header in steps, and its
/// backend declared down meanwhile ends the wait at once (Outcome::backend_down; the connection
/// closed, which makes vLLM abort it). `hedge_leg`: the second attempt of a hedged request
/// (gateway/hedge.hpp), whose connection the client's watch knows as `hedge_up`, not `up`.
net::awaitable<Attempt> send(const Fleet& fleet, Worker& worker, upstream::Backend& backend,
                             const Request& req, const BodyFields& fields, ClientConnection& client,
                             const std::string& request_id, const UsageRequest& usage, bool queued,
                             upstream::Outcome& outcome, bool hedge_leg = false);

/// Tells the backend's health and the route's policy how an attempt ended.
void report_outcome(const Fleet& fleet, upstream::Backend& backend,
                    policy::AttemptObserver* observer, const upstream::Outcome& outcome,
                    std::string_view request_id, std::int64_t now);

}  // namespace llmux::gateway
