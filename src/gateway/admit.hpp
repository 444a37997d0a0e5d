// SPDX-License-Identifier: Apache-2.0
#pragma once
// The admit stage: may this request go on now? The client's API key, its right to the route and
// model and its quotas (auth.keys: admit_client), and — when every backend of the route is at
// its max_inflight — its turn in the route's queue (wait_in_queue, gateway/admission_queue.hpp).
// A request refused here is answered here, in the client's dialect.
#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/keys.hpp"
#include "auth/quota.hpp"
#include "gateway/access_log.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/fleet.hpp"
#include "gateway/request.hpp"
#include "gateway/request_view.hpp"
#include "gateway/worker.hpp"
#include "upstream/backend.hpp"

namespace llmux::gateway {

/// auth.keys: the client's key, its right to this route and model, then its quotas (`permit`
/// holds its concurrency slot), then whom the request is for and its class (classify_request).
/// False when the request was answered here instead (400, 401, 403 or 429 with Retry-After).
/// Without auth.keys, called only for a request classify_request() refused: it answers it. A
/// coroutine of its own, so that the decision and its message take no room in every proxy
/// frame.
net::awaitable<bool> admit_client(GatewayState& state, const Fleet& fleet, ClientConnection& client,
                                  const Request& req, const RouteRuntime& route,
                                  const BodyFields& fields, const std::string& request_id,
                                  AccessRecord& rec, const auth::KeyEntry*& key,
                                  auth::QuotaLimiter::Permit& permit);

/// Whom the request is for and its priority class (gateway/sharing.hpp) into `rec` (the class
/// also into client.priority_class). False when it must be
/// refused instead: rec.status (400 or 403) and rec.error say why, for the caller to answer.
bool classify_request(const Fleet& fleet, ClientConnection& client, const Request& req,
                      const auth::KeyEntry* key, const std::string& request_id, AccessRecord& rec);

/// How a wait in the route's queue ended: with a slot, refused (the queue is full, or the
/// tenant holds its max_queued places), timed out, or the client left.
enum class QueueWait { slot, full, tenant_full, timeout, client_left };

/// Waits in the route's queue until, first in line, it takes a slot (`slot`). Sets rec's
/// queue_depth (how many were waiting when it joined, itself included) and, with a slot, its
/// queue_charge. A coroutine of its own: its frame (and the ticket) exist only while a request
/// waits.
net::awaitable<QueueWait> wait_in_queue(const Fleet& fleet, ClientConnection& client,
                                        const RouteRuntime& route, const Request& req,
                                        const BodyFields& fields, upstream::Backend* const* pinned,
                                        upstream::Slot& slot, AccessRecord& rec);

}  // namespace llmux::gateway
