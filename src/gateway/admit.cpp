// SPDX-License-Identifier: Apache-2.0
#include "gateway/admit.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>

#include <spdlog/spdlog.h>

#include "core/clock.hpp"
#include "core/use_tuple.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/pick.hpp"
#include "gateway/sharing.hpp"

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
  if (!fleet.keys.enabled()) {  // called for a request classify_request() refused: its answer
    co_await write_error(client, rec.status, rec.error, &req, true, request_id);
    co_return false;
  }
  // A request with a body names its model there ("" when it does not); one without (GET
  // /v1/responses/{id}) is held to the key's routes only.
  const std::optional<std::string_view> model =
      req.body().empty() ? std::nullopt : std::optional<std::string_view>(fields.model);
  auto [entry, decision] = fleet.keys.authorize(req[bhttp::field::authorization], route.cfg->name,
                                                model, req["x-api-key"]);
  if (entry) {
    rec.tenant = entry->name;
    rec.tenant_is_key = true;
  }
  if (decision.ok()) {
    auto admission = state.quotas->admit(*entry, unix_ms());
    if (admission.decision.ok()) {
      key = entry;
      permit = std::move(admission.permit);
      if (classify_request(fleet, client, req, key, request_id, rec)) co_return true;
      co_await write_error(client, rec.status, rec.error, &req, true, request_id);
      co_return false;
    }
    decision = std::move(admission.decision);
  }
  rec.status = decision.status;
  rec.error = decision.status == 401   ? "missing or unknown API key"
              : decision.status == 403 ? "the API key may not use this route or model"
                                       : "over the API key's quota";
  if (client.error_dialect == ErrorDialect::anthropic)
    co_await write_error(client, decision.status, decision.message, &req, true, request_id,
                         static_cast<int>(decision.retry_after_s));
  else
    co_await write_json(client, decision.status, std::move(decision.body), &req, request_id,
                        static_cast<int>(decision.retry_after_s));
  co_return false;
}

bool classify_request(const Fleet& fleet, ClientConnection& client, const Request& req,
                      const auth::KeyEntry* key, const std::string& request_id, AccessRecord& rec) {
  Classification decided = classify(fleet, req, key, rec);
  if (decided.status != 0) {
    rec.status = decided.status;
    rec.error = std::move(decided.message);
    return false;
  }
  if (!decided.capped_from.empty())
    spdlog::info(
        "request {}: priority class '{}' is above what key '{}' may ask for (max_priority): "
        "served as '{}'",
        request_id, decided.capped_from, key->name, priority_name(fleet, rec));
  client.priority_class = rec.priority;
  return true;
}

namespace {

/// Bit c set when a request of class c could take a slot of one of the route's usable backends
/// now (the pinned one only, for a request that names a response it holds).
FairQueue::ClassMask admissible_classes(const Fleet& fleet, const RouteRuntime& route,
                                        upstream::Backend* const* pinned) {
  const std::int64_t now = mono_ns();
  const auto& classes = fleet.cfg.priorities.classes;
  FairQueue::ClassMask mask = 0;
  const std::span<upstream::Backend* const> candidates =
      *pinned ? std::span<upstream::Backend* const>(pinned, 1)
              : std::span<upstream::Backend* const>(route.backends);
  for (std::size_t priority_class = 0; priority_class < classes.size(); ++priority_class)
    for (const upstream::Backend* backend : candidates)
      if (!route.prefill_only.contains(*backend) && backend->usable(now) &&
          backend->has_capacity(class_cap(fleet, static_cast<int>(priority_class)))) {
        mask |= FairQueue::ClassMask{1} << priority_class;
        break;
      }
  return mask;
}

}  // namespace

/// Waits in the route's queue until, first in line, it takes a slot (`slot`). A coroutine of its
/// own: its frame (and the ticket) exist only while a request waits.
net::awaitable<QueueWait> wait_in_queue(const Fleet& fleet, ClientConnection& client,
                                        const RouteRuntime& route, const Request& req,
                                        const BodyFields& fields, upstream::Backend* const* pinned,
                                        upstream::Slot& slot, AccessRecord& rec) {
  AdmissionQueue& queue = *route.queue;
  FairQueue::Waiter waiter;
  waiter.tenant = std::string(rec.tenant.empty() ? std::string_view("anonymous") : rec.tenant);
  waiter.weight = fleet.cfg.tenants.weight(rec.tenant);
  waiter.priority_class = std::max<int>(0, rec.priority);
  waiter.cost = estimate_cost(req.body(), fields, queue.learned_output());
  const double cost = waiter.cost;
  FairQueue::Joined refused = FairQueue::Joined::yes;
  auto ticket = queue.join(co_await net::this_coro::executor, std::move(waiter), refused);
  if (!ticket)
    co_return refused == FairQueue::Joined::tenant_full ? QueueWait::tenant_full : QueueWait::full;
  rec.queue_depth = ticket->depth;
  const auto deadline = std::chrono::steady_clock::now() + queue.timeout();
  const upstream::ClassCap cap = class_cap(fleet, rec.priority);
  for (;;) {
    // First in line among the waiters whose class has a slot free: a slot within its class's
    // share (a promotion changes its place in line, not its share).
    if (queue.at_head(*ticket, admissible_classes(fleet, route, pinned))) {
      upstream::TriedSet tried;
      slot = pick(route, req, fields, tried, pinned, cap);
      if (slot) {
        queue.dispatched(ticket);
        rec.queue_charge = static_cast<float>(cost);
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
    // Woken by a slot coming free, or every 100 ms to see the client, the deadline and
    // promotions.
    ticket->timer.expires_after(std::min<std::chrono::steady_clock::duration>(
        deadline - now, std::chrono::milliseconds(100)));
    co_await ticket->timer.async_wait(use_tuple);
    ticket->woken = false;
  }
}

}  // namespace llmux::gateway
