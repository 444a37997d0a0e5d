// SPDX-License-Identifier: Apache-2.0
#pragma once
// Sharing a team's machines (config `tenants` and `priorities`): whom a request is for and its
// priority class (classify), what its class may hold of a backend's slots (class_cap),
// the tokens its tenant is charged when it leaves the route's queue (estimate_cost), and the
// correction by its real tokens when it ends (settle_queue_charge). The queue's order itself is
// gateway/fair_queue.hpp.
//
// A request's tenant is its API key's name, else the value of the `tenants.header` header, else
// "anonymous". Its class is the one the `priorities.header` header names, else its key's
// `priority`, else `priorities.default`; a key's `max_priority` caps it.
#include <string>
#include <string_view>

#include "auth/keys.hpp"
#include "gateway/access_log.hpp"
#include "gateway/fleet.hpp"
#include "gateway/request.hpp"
#include "gateway/request_view.hpp"

namespace llmux::gateway {

/// How classify() decided: `status` 0 to go on, else the answer (400: a malformed or unknown
/// header value; 403: a class above the key's cap, where the config refuses those).
struct Classification {
  int status = 0;
  std::string message;
  /// A class above the key's cap that is served at the cap: the class asked (for a log line).
  std::string_view capped_from;
};

/// Sets rec.tenant (a view that outlives the request: the key's name, the client's header) and
/// rec.priority (the class's index in the config).
Classification classify(const Fleet& fleet, const Request& req, const auth::KeyEntry* key,
                        AccessRecord& rec);

/// The name of rec.priority's class ("" before it is known).
std::string_view priority_name(const Fleet& fleet, const AccessRecord& rec);

/// What a request of class `priority_class` may hold of each backend: its class's max_share of
/// max_inflight.
upstream::ClassCap class_cap(const Fleet& fleet, int priority_class);

/// The tokens a request is charged when it leaves the queue: its prompt (counted by the
/// tokenizer in src/core) plus twice its output — max_tokens where it sets one, else
/// `learned_output` — as the fairness paper weighs them (decoding costs more per token).
double estimate_cost(const std::string& body, const BodyFields& fields, double learned_output);

/// The tokens a request cost by its usage (prompt + twice the output); nullopt when no usage
/// was seen.
std::optional<double> real_cost(const AccessRecord& rec);

/// A request that left the route's queue with a charge, ended: its tenant is charged the
/// difference to its real tokens (none seen: nothing for a request no backend answered, the
/// estimate stands for one that was answered).
void settle_queue_charge(const Fleet& fleet, const RouteRuntime& route, const AccessRecord& rec);

}  // namespace llmux::gateway
