// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pick stage: which backends may take a request — the one that holds the response it names
// (affinity, gateway/affinity.hpp), else the route's — and the route's policy's choice among
// them, taken with one of the backend's in-flight slots (policy/policy.hpp). The slot is held as
// a HeldSlot, whose end wakes the queues the backend serves (gateway/admit.hpp).
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/access_log.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/fleet.hpp"
#include "gateway/request.hpp"
#include "gateway/request_view.hpp"
#include "gateway/worker.hpp"
#include "upstream/backend.hpp"

namespace llmux::gateway {

/// Response affinity: the owner of the response the request names, in `pinned`; false when the
/// request was answered here instead (owner down, id nowhere). A coroutine of its own, so the
/// lookup's state is not kept in every proxy frame.
net::awaitable<bool> pin_owner(GatewayState& state, const Fleet& fleet, ClientConnection& client,
                               const Request& req, const RouteRuntime& route,
                               const BodyFields& fields, const std::string& request_id,
                               AccessRecord& rec, upstream::Backend*& pinned);

/// The policy's choice with its in-flight slot, taken atomically (a full backend is skipped).
/// `pinned`: the backend that holds the response the request names (gateway/affinity.hpp), the
/// only candidate then. `class_cap`: what the request's priority class may hold of a backend
/// (gateway/sharing.hpp).
upstream::Slot pick(const RouteRuntime& route, const Request& req, const BodyFields& fields,
                    upstream::TriedSet& tried, upstream::Backend* const* pinned,
                    const upstream::ClassCap& class_cap);

/// A backend slot that, once given back, wakes the queues of the routes its backend serves (the
/// head waiter may take it).
struct HeldSlot {
  upstream::Slot slot;
  const Fleet& fleet;
  /// Empty until a slot is taken into `slot`.
  explicit HeldSlot(const Fleet& taken_from) : fleet(taken_from) {}
  HeldSlot(const HeldSlot&) = delete;
  HeldSlot& operator=(const HeldSlot&) = delete;
  ~HeldSlot() {
    upstream::Backend* backend = slot.backend();
    slot.reset();
    if (!backend) return;
    for (AdmissionQueue* queue : fleet.queues_by_slot[static_cast<std::size_t>(backend->index)])
      if (queue->depth() > 0) queue->wake_head();
  }
};

}  // namespace llmux::gateway
