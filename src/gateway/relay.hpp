// SPDX-License-Identifier: Apache-2.0
#pragma once
// The relay: a backend's response to the client as it arrives. The header goes out with X-Llmux-
// Backend and X-Request-Id (hop-by-hop fields out); the body read by read, SSE cut at event
// boundaries so every complete event leaves at once; taps read usage and sequence numbers on the
// way. An upstream dying mid-stream ends the stream in its own dialect; a client leaving closes
// the upstream at once. The connection goes back to the pool only after a complete final
// response that did not end by close.
#include <memory>

#include <boost/asio/awaitable.hpp>

#include "gateway/access_log.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/upstream_attempt.hpp"
#include "gateway/worker.hpp"
#include "state/response_store.hpp"
#include "upstream/outcome.hpp"

namespace llmux::gateway {

/// The event that ends a stream whose backend failed mid-way, in the stream's own dialect: the
/// Responses API's `error` event (numbered `sequence_number`), Anthropic's `event: error` with an
/// `api_error` (Messages), or the chat and completions error chunk followed by [DONE].
std::string mid_stream_error_tail(openai::Dialect dialect, std::int64_t sequence_number,
                                  const std::string& message);

/// Relays the response whose header `a.parser` holds; fills `rec` (status, bytes, usage, error)
/// and `outcome`, how the attempt ended (ok, broken_mid_stream or client_left; its ttfb, set by the
/// caller at the response header, is kept). `affinity_store`, when given:
/// the response id of a 2xx answer (a JSON body's, a stream's `response.created`) goes there as
/// held by `backend`, before the bytes carrying it go out to the client. `strip_usage`: the gateway
/// asked this stream for usage (gateway/stream_usage.hpp); its usage-only chunk is not relayed.
/// Records the worker's metrics of the stream (TTFT and inter-token latency as written to the
/// client, the relay's own delay). On return `attempt.up` holds the connection when it may carry
/// another request (the exchange ended cleanly on both sides and the response did not end by close
/// or ask for it: the caller gives it back to the pool), and is null otherwise (closed here).
net::awaitable<void> relay(const Fleet& fleet, Worker& worker, ClientConnection& client,
                           const Request& req, upstream::Backend& backend, Attempt& attempt,
                           AccessRecord& rec, upstream::Outcome& outcome,
                           state::ResponseStore* affinity_store = nullptr,
                           bool strip_usage = false);

}  // namespace llmux::gateway
