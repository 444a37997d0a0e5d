// SPDX-License-Identifier: Apache-2.0
#pragma once
// The finish stage: the end of a request. The answer to one nothing was relayed for (why, in the
// client's dialect), then for every request its key's usage charged (quotas, the usage ledger),
// the worker's metrics and the access log line.
#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/keys.hpp"
#include "gateway/access_log.hpp"
#include "gateway/admit.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/continuation.hpp"
#include "gateway/fleet.hpp"
#include "gateway/request.hpp"
#include "gateway/request_view.hpp"
#include "gateway/worker.hpp"
#include "upstream/backend.hpp"
#include "upstream/outcome.hpp"

namespace llmux::gateway {

/// The answer to a request nothing was relayed for: why (a full queue, a queue timeout, every
/// backend full, the one backend holding its conversation failed, the last attempt's failure);
/// or, for a stream left open for a continuation no backend could give (`continuation` cut), the
/// stream's error event. A coroutine of its own, so that its messages take no room in every
/// proxy frame.
net::awaitable<void> answer_failure(ClientConnection& client, const Request& req,
                                    const RouteRuntime& route, const BodyFields& fields,
                                    const std::string& request_id, QueueWait queue_wait,
                                    bool all_full, int attempts, const upstream::Backend* pinned,
                                    const upstream::Outcome& outcome, AccessRecord& rec,
                                    const StreamContinuation* continuation = nullptr);

/// The request's metrics and access log line, once it ended (at `now`, mono_ns()). `backend`:
/// the backend that answered (null when none did).
void finish(GatewayState& state, const Fleet& fleet, Worker& worker, const RouteRuntime& route,
            const upstream::Backend* backend, const BodyFields& fields, AccessRecord& rec,
            std::int64_t start, std::int64_t now, const auth::KeyEntry* key = nullptr);

}  // namespace llmux::gateway
