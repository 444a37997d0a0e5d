// SPDX-License-Identifier: Apache-2.0
#pragma once
// Stream migration: a chat or completions stream whose backend broke before its final event (a
// reset, a close, a stall, silence past the idle timeout) goes on from another usable backend
// of its route, asked to continue what was generated so far (gateway/continuation.hpp says how);
// the client sees one stream. The relay leaves the client's response open when the stream can go
// on (Attempt::continues_elsewhere); the proxy's loop runs the legs that follow, each through the
// same stages as the first (pick, upstream attempt, relay).
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/access_log.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/continuation.hpp"
#include "gateway/fleet.hpp"
#include "gateway/request.hpp"
#include "gateway/request_view.hpp"
#include "gateway/stream_usage.hpp"
#include "gateway/upstream_attempt.hpp"
#include "gateway/worker.hpp"
#include "upstream/backend.hpp"
#include "upstream/outcome.hpp"

namespace llmux::gateway {

/// The continuation of a request's stream, when it may have one: a streamed chat or completions
/// request, migration on, more than one backend on its route, no field that keeps its output
/// from being continued (BodyFields::not_continuable) and no `X-Llmux-Migrate: off`. Null
/// otherwise (nothing is kept, the body is released as before).
std::unique_ptr<StreamContinuation> continuation_for(const Fleet& fleet, const Request& req,
                                                     const RouteRuntime& route,
                                                     const BodyFields& fields);

/// Whether a request that reached a backend may be sent to another when that one closes or
/// times out before answering: a generation request (chat, completions, Anthropic's messages, a
/// Responses request with `store: false`) with migration on; a repeat costs compute, not
/// correctness.
bool may_run_twice(const Fleet& fleet, std::string_view method, std::string_view path,
                   const BodyFields& fields);

/// A Responses request the backend may store (`store` not false), with migration on: sent to
/// another backend only when the first is confirmed down (confirmed_down()), since a second
/// backend storing it too leaves a response the client never hears of.
bool may_be_stored(const Fleet& fleet, std::string_view method, std::string_view path,
                   const BodyFields& fields);

/// Whether `backend` is down for sure, not just slow or failing one request: its active checks
/// fail, or a fresh connection to it is refused. A coroutine of its own: its connect takes no
/// room in send()'s frame.
net::awaitable<bool> confirmed_down(const Fleet& fleet, Worker& worker, upstream::Backend& backend);

// The legs after a cut run in the proxy's loop (gateway/proxy.cpp), through the same stages as
// the first; these say what differs.

/// Prepares the next leg after `cut_backend` broke the stream (or a leg failed before its
/// stream began): its body into `usage` (StreamContinuation::next_leg_body), counted in `rec`
/// (migrations, migrated_from). False when none may follow: `migration.max_migrations` legs ran,
/// or the client's body cannot be continued.
bool next_leg(const Fleet& fleet, const Request& req, const upstream::Backend& cut_backend,
              StreamContinuation& continuation, UsageRequest& usage, AccessRecord& rec);

/// A continuation leg's answer that is no stream to go on with (not 2xx, not an event stream):
/// its connection closed and `outcome` saying why, as a failed attempt.
void refuse_unusable_leg(Attempt& attempt, const upstream::Backend& backend,
                         upstream::Outcome& outcome);

/// Counts a leg that began on `backend` in llmux_migrations_total.
void count_migration(const Fleet& fleet, Worker& worker, const RouteRuntime& route,
                     const StreamContinuation& continuation, const upstream::Backend& backend);

/// After the last leg: `rec`'s token counts become what every leg computed (the usage ledger,
/// quotas, the access log); the client's usage chunk already had its own view.
void settle_leg_tokens(const StreamContinuation& continuation, AccessRecord& rec);

/// Ends the client's open stream with the error event of its dialect and the last chunk.
net::awaitable<void> end_stream_with_error(ClientConnection& client,
                                           const StreamContinuation& continuation,
                                           const std::string& message);

}  // namespace llmux::gateway
