// SPDX-License-Identifier: Apache-2.0
#pragma once
// Prefill/decode disaggregation (config: backends[].role, routes[].disaggregation): a request's
// prompt is computed on a prefill backend first, and a decode backend then fetches that KV cache
// (vLLM's NixlConnector over the machines' link) and generates the answer the client gets. The
// protocol is vLLM's reference proxy's (vllm/tests/v1/kv_connector/nixl_integration/
// toy_proxy_server.py):
//   prefill leg  the client's body with `kv_transfer_params: {do_remote_decode: true,
//                do_remote_prefill: false, remote_engine_id/block_ids/host/port: null}`,
//                `stream: false`, `max_tokens: 1` (and `max_completion_tokens: 1` when given),
//                without `stream_options`, `min_tokens`, `min_completion_tokens`; read whole;
//   decode leg   the client's body with the `kv_transfer_params` the prefill answered, passed on
//                as they came (never interpreted); none (the prefill ended on end-of-sequence):
//                the client's body as it is, and the decode backend prefills itself.
// Both legs carry the request's X-Request-Id. The decode leg is the proxy's usual attempt, on a
// backend that is not prefill-only; the client sees only its answer, whose usage counts the
// prompt once.
//
// Only chat and completions are disaggregated, as the reference proxy does (vLLM's Responses
// and Messages APIs are served unified). A prefill that fails (no backend, an error answer, a
// broken connection) is tried on one other prefill backend, then the request is served unified.
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/access_log.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/fleet.hpp"
#include "gateway/request.hpp"
#include "gateway/request_view.hpp"
#include "gateway/stream_usage.hpp"
#include "gateway/worker.hpp"

namespace llmux::gateway {

/// Whether the request is disaggregated: a parsed POST to /v1/chat/completions or
/// /v1/completions on a route with disaggregation, and with `auto` a prompt whose uncached part
/// (prompt tokens less the share the route's prefix_aware tables say a backend holds) is above
/// `threshold_tokens` while the route's prefill backends hold fewer than
/// `max_queued_prefill_tokens` prompt tokens in prefill legs.
bool disaggregates(const RouteRuntime& route, const Request& req, const BodyFields& fields);

/// The prefill leg (above). On success `decode` becomes the body the decode leg sends (asking
/// for usage as the gateway asks every stream: gateway/stream_usage.hpp), the prefill backend
/// joins `tried` (the decode leg runs on another machine: a backend of role both does not fetch
/// its own cache), and `rec` names it and the leg's time; when no prefill succeeded `decode` is
/// left as it was (the client's request, served unified).
net::awaitable<void> prefill_first(const Fleet& fleet, Worker& worker, const RouteRuntime& route,
                                   const Request& req, const BodyFields& fields,
                                   ClientConnection& client, const std::string& request_id,
                                   UsageRequest& decode, upstream::TriedSet& tried,
                                   AccessRecord& rec);

/// After a decode leg failed: `usage` back to the client's own request (asking for usage as
/// the gateway asks every stream), which the next backend serves unified.
void serve_unified(const Fleet& fleet, const Request& req, const BodyFields& fields,
                   UsageRequest& usage);

/// The prefill leg's body, from the client's (a JSON object): nullopt when it is not one.
std::optional<std::string> prefill_body(std::string_view client_body);

/// The decode leg's body: the client's with `kv_transfer_params` (raw JSON; empty: none, the
/// client's own field removed) and, when `ask_usage`, `stream_options.include_usage: true`.
/// nullopt when the client's body is not a JSON object.
std::optional<std::string> decode_body(std::string_view client_body,
                                       std::string_view kv_transfer_params, bool ask_usage);

/// The `kv_transfer_params` of a prefill's JSON answer, as raw JSON ("" when it has none, or
/// null, or the answer is not a JSON object).
std::string kv_transfer_params_of(std::string_view prefill_answer);

}  // namespace llmux::gateway
