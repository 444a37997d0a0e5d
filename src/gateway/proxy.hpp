// SPDX-License-Identifier: Apache-2.0
#pragma once
// The proxy: one client request through a route to a backend, the stages in order — admit
// (gateway/admit.hpp: key, quotas, the queue), pick (gateway/pick.hpp: the backend and its
// in-flight slot), attempt (gateway/upstream_attempt.hpp: the request sent, the response header
// read), relay (gateway/relay.hpp: the response streamed), finish (gateway/finish.hpp: the
// error answer when nothing was relayed, usage, metrics, the access log). Each stage hands the
// next what it made; none calls back up. Only what provably never reached a backend is retried
// (upstream::decide_retry); every attempt's Outcome goes to the backend's health and to the
// route's policy.
//
// One worker thread per request; the Fleet is the configuration the request started with.
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/client_connection.hpp"
#include "gateway/request_view.hpp"
#include "gateway/upstream_attempt.hpp"
#include "gateway/worker.hpp"
#include "upstream/outcome.hpp"

namespace llmux::gateway {

/// Serves `req` through `route`: relays the response, or answers the error when no attempt got
/// one. Writes the access log line.
/// Once a backend's response began (no attempt follows), the request's body is released: a
/// held-open stream does not keep it (`fields.body_bytes` keeps its size).
net::awaitable<void> proxy(GatewayState& state, const Fleet& fleet, Worker& worker,
                           ClientConnection& client, Request& req, const RouteRuntime& route,
                           const BodyFields& fields, const std::string& request_id);

}  // namespace llmux::gateway
