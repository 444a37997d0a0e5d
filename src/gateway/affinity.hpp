// SPDX-License-Identifier: Apache-2.0
#pragma once
// Response affinity: the Responses API keeps each response (and the conversation it ends) in the
// memory of the vLLM that produced it, so every later request naming it — previous_response_id,
// GET /v1/responses/{id}, POST /v1/responses/{id}/cancel — must reach that backend.
//
// The relay learns each response id a backend returns (relay.hpp) into the ResponseStore
// (state/response_store.hpp). A request naming an id goes to its owner; one the store does not
// know (after a restart, or evicted) is looked for by asking the route's backends
// that are up (GET /v1/responses/{id}, all at once, within affinity.lookup_timeout) before a 404
// in vLLM's words (a 503 when one that is down or did not answer may hold it); an owner that cannot
// take requests gives a 503 that says so — never another backend, which would answer "not found" or
// lose the conversation. Requests that name no id are the route policy's to place.
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "gateway/request_view.hpp"
#include "gateway/worker.hpp"
#include "state/response_store.hpp"

namespace llmux::gateway {

/// The response id a request names: the `{id}` of /v1/responses/{id}[/...], else the body's
/// previous_response_id on /v1/responses; "" when none.
std::string_view named_response_id(std::string_view path, const BodyFields& fields);

/// True when a response to (method, path) may carry an id worth learning: POST /v1/responses
/// (unless the body said `store: false`: the backend keeps nothing) and GET /v1/responses/{id}.
bool learns_response_id(std::string_view method, std::string_view path, const BodyFields& fields);

struct Pin {
  enum class How { known, found, error };
  How how = How::error;
  upstream::Backend* backend = nullptr;  // known, found: the owner (one of the route's)
  int status = 0;                        // error: the answer
  std::string message;
  std::string type;     // error type ("" : by status)
  int retry_after = 0;  // seconds, for a 503
};

/// The backend holding `id` among the route's, by the store or by asking them (`request_id`: for
/// the log).
net::awaitable<Pin> find_owner(state::ResponseStore& store, const Fleet& fleet,
                               const RouteRuntime& route, std::string_view id,
                               std::string_view request_id = {});

}  // namespace llmux::gateway
