// SPDX-License-Identifier: Apache-2.0
#include "gateway/admit.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/clock.hpp"
#include "core/use_tuple.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/pick.hpp"

namespace llmux::gateway {

/// auth.keys: the client's key, its right to this route and model, then its quotas (`permit`
/// holds its concurrency slot). False when the request was answered here instead (401, 403 or
/// 429 with Retry-After). A coroutine of its own, so that the decision and its message take no
/// room in every proxy frame.
net::awaitable<bool> admit_client(GatewayState& state, const Fleet& fleet, ClientConnection& client,
                                  const Request& req, const RouteRuntime& route,
                                  const BodyFields& fields, const std::string& request_id,
                                  AccessRecord& rec, const auth::KeyEntry*& key,
                                  auth::QuotaLimiter::Permit& permit) {
  // A request with a body names its model there ("" when it does not); one without (GET
  // /v1/responses/{id}) is held to the key's routes only.
  const std::optional<std::string_view> model =
      req.body().empty() ? std::nullopt : std::optional<std::string_view>(fields.model);
  auto [entry, decision] =
      fleet.keys.authorize(req[bhttp::field::authorization], route.cfg->name, model);
  if (entry) rec.key = entry->name;
  if (decision.ok()) {
    auto admission = state.quotas->admit(*entry, unix_ms());
    if (admission.decision.ok()) {
      key = entry;
      permit = std::move(admission.permit);
      co_return true;
    }
    decision = std::move(admission.decision);
  }
  rec.status = decision.status;
  rec.error = decision.status == 401   ? "missing or unknown API key"
              : decision.status == 403 ? "the API key may not use this route or model"
                                       : "over the API key's quota";
  co_await write_json(client, decision.status, std::move(decision.body), &req, request_id,
                      static_cast<int>(decision.retry_after_s));
  co_return false;
}

/// Waits in the route's queue until, first in line, it takes a slot (`slot`); `depth` is how many
/// were waiting when it joined, itself included. A coroutine of its own: its frame (and the
/// ticket) exist only while a request waits.
net::awaitable<QueueWait> wait_in_queue(ClientConnection& client, const RouteRuntime& route,
                                        const Request& req, const BodyFields& fields,
                                        upstream::Backend* const* pinned, upstream::Slot& slot,
                                        int& depth) {
  AdmissionQueue& queue = *route.queue;
  auto ticket = queue.join(co_await net::this_coro::executor);
  if (!ticket) co_return QueueWait::full;
  depth = ticket->depth;
  const auto deadline = std::chrono::steady_clock::now() + queue.timeout();
  for (;;) {
    if (queue.at_head(*ticket)) {
      upstream::TriedSet tried;
      slot = pick(route, req, fields, tried, pinned);
      if (slot) {
        queue.leave(ticket);
        co_return QueueWait::slot;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (client.watch.client_gone || now >= deadline) {
      queue.leave(ticket);
      co_return client.watch.client_gone ? QueueWait::client_left : QueueWait::timeout;
    }
    if (ticket->woken) {  // woken while it was not waiting: look again at once
      ticket->woken = false;
      continue;
    }
    // Woken by a slot coming free, or every 100 ms to see the client and the deadline.
    ticket->timer.expires_after(std::min<std::chrono::steady_clock::duration>(
        deadline - now, std::chrono::milliseconds(100)));
    co_await ticket->timer.async_wait(use_tuple);
    ticket->woken = false;
  }
}

}  // namespace llmux::gateway
