// SPDX-License-Identifier: Apache-2.0
#pragma once
// The client session: reads requests on one connection (limits, timeouts, framing checked on the
// header, 100-continue, trailers dropped), dispatches each (health, models, a route's proxy) and
// closes the connection — by lingering when an error was answered before the request was read.
#include <boost/asio/awaitable.hpp>

#include "gateway/worker.hpp"
#include "http/stream.hpp"

namespace llmux::gateway {

/// Serves one accepted connection until it closes, errs, idles out, or the gateway drains.
/// `metrics_only`: accepted on metrics.listen (answers /metrics, /dashboard and /health only).
/// `tls`: the listener's server context (null: plain HTTP); the TLS handshake must complete
/// within timeouts.client_header, or the connection is closed.
/// Started with co_spawn(..., detached) on the worker's io_context.
net::awaitable<void> session(GatewayState& state, Worker& worker, tcp::socket sock,
                             bool metrics_only = false, http::TlsContextPtr tls = nullptr);

}  // namespace llmux::gateway
