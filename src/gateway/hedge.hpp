// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hedging before the first token (a route's `hedge`, config::Hedge): a generation request goes
// to the backend picked for it; if that one has produced no token by the route's `after` (a
// fixed wait, or a multiple of the learned time-to-first-token p99 of the route's fastest
// backend), a second attempt goes to another backend of the route, within the route's retry
// budget. The first attempt to produce a token wins and is relayed; the other is cancelled (its
// connection closed, which makes vLLM abort it).
//
// "Produced a token" is read as "sent a byte of its body": vLLM writes a chat or completions
// stream's header at once and its first chunk (the role delta, or the first text) with the first
// token, and a whole answer at its end. A Responses stream sends `response.created` before any
// token, so hedging ends as soon as it begins there (docs/config.md says so).
//
// The routes that hedge keep new requests off a slow backend while another can take them
// (gateway/pick.cpp), seen two ways:
// - its streams' tokens come kSlowerThanPeers times further apart than those of the fastest of
//   its peers on the route (upstream/decode_pace.hpp; both measured within the last 2 s): avoided
//   while they do, so a backend slowed for a while is left alone from its first slow steps, not
//   from its first lost race, and is asked again as soon as its streams speed up. A fleet that is
//   slower as a whole (more load) is no backend's fault: only the ratio counts.
// - it lost a race (the hedge produced the first token) that its pace does not explain (no
//   streams to time, a slow prefill): avoided for 1 s, doubled with each further race it loses in
//   a row (at most 16 s); an answer in time ends the run.
// A backend slowed for a while then costs a few hedges, not one per request sent to it; and a
// first attempt still waiting for its token when its backend's streams turn slow is raced at
// once, not at the end of its wait.
//
// Only a request's first attempt is hedged, only where a repeat costs compute, not correctness
// (chat, completions, a Responses request with `store: false`), and never one pinned to the
// backend that holds the response it names.
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/client_connection.hpp"
#include "gateway/pick.hpp"
#include "gateway/upstream_attempt.hpp"

namespace llmux::gateway {

/// The request's attempt at the backend of `held`: send() (gateway/upstream_attempt.hpp), or,
/// when `may_hedge` and the route hedges this request, a race with a second backend. A hedge that
/// wins (or the one that failed last) moves its slot into `held`: the attempt's backend is
/// always held's. `tried` gets the second backend. A plain function: the proxy's frame keeps one
/// awaitable, whichever runs.
net::awaitable<Attempt> attempt_at(const Fleet& fleet, Worker& worker, const RouteRuntime& route,
                                   HeldSlot& held, upstream::TriedSet& tried, const Request& req,
                                   const BodyFields& fields, ClientConnection& client,
                                   const std::string& request_id, const UsageRequest& usage,
                                   bool queued, bool may_hedge, upstream::Outcome& outcome);

/// How many times further apart a backend's tokens must come than its fastest peer's for the
/// routes that hedge to avoid it (see above): above the spread a batch size makes between two
/// healthy backends, well below a slowdown worth a hedge.
inline constexpr double kSlowerThanPeers = 4.0;

/// The backends `route`, which hedges, keeps new requests off while another backend can take
/// them (see above).
upstream::TriedSet avoided_by_hedging(const RouteRuntime& route, std::int64_t now_ns);

/// Whether the route hedges a request like this one (a generation request: see above).
bool hedges(const RouteRuntime& route, std::string_view method, std::string_view path,
            const BodyFields& fields);

}  // namespace llmux::gateway
