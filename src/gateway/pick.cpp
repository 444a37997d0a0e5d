// SPDX-License-Identifier: Apache-2.0
#include "gateway/pick.hpp"

#include <string>

#include "core/clock.hpp"
#include "core/openai_error.hpp"
#include "gateway/affinity.hpp"
#include "gateway/hedge.hpp"
#include "gateway/http_rules.hpp"
#include "gateway/taps.hpp"

namespace llmux::gateway {

namespace {

/// A request header's value by name, for PickContext::header.
struct HeaderLookup {
  const Request* req;
  std::string_view operator()(std::string_view name) const { return (*req)[name]; }
};

/// The policy's view of the request. Built by pick(), a plain function, on its own stack: a
/// coroutine keeps every local in its frame, and a held-open stream should cost little.
policy::PickContext context(const RouteRuntime& route, const Request& req, const BodyFields& fields,
                            const HeaderLookup& headers, bool pinned) {
  policy::PickContext ctx;
  ctx.route = route.cfg->name;
  ctx.method = req.method_string();
  ctx.path = req.path();
  ctx.model = fields.model;
  ctx.user = fields.user;
  ctx.previous_response_id = fields.previous_response_id;
  ctx.prompt_cache_key = fields.prompt_cache_key;
  // Claude Code names its session in a header: the cache hint (prefix_aware) and the session
  // key (consistent_hash) a Codex session gives in prompt_cache_key.
  if (ctx.prompt_cache_key.empty()) ctx.prompt_cache_key = req["x-claude-code-session-id"];
  ctx.stream = fields.stream;
  ctx.output_tokens = fields.max_tokens >= 0 ? fields.max_tokens : 256;
  ctx.tokens = static_cast<std::int64_t>(fields.body_bytes / 4) + ctx.output_tokens;
  ctx.header = headers;
  ctx.pinned = pinned;
  if (route.policy->needs_prompt()) {
    // The worker's scratch text: valid until the next request's pick on this thread.
    thread_local std::string text;
    text.clear();
    read_prompt_text(req.body(), text,
                     dialect_of(ctx.path) == openai::Dialect::messages ? PromptOrder::messages_api
                                                                       : PromptOrder::as_written);
    ctx.prompt = text;
  }
  return ctx;
}

}  // namespace

/// Response affinity: the owner of the response the request names, in `pinned`; false when the
/// request was answered here instead (owner down, id nowhere). A coroutine of its own, so the
/// lookup's state is not kept in every proxy frame.
net::awaitable<bool> pin_owner(GatewayState& state, const Fleet& fleet, ClientConnection& client,
                               const Request& req, const RouteRuntime& route,
                               const BodyFields& fields, const std::string& request_id,
                               AccessRecord& rec, upstream::Backend*& pinned) {
  const std::string_view id = named_response_id(req.path(), fields);
  if (id.empty() || !state.responses) co_return true;
  Pin pin = co_await find_owner(*state.responses, fleet, route, id, request_id);
  if (pin.how != Pin::How::error) {
    pinned = pin.backend;
    rec.affinity = pin.how == Pin::How::known ? "known" : "found";
    co_return true;
  }
  rec.affinity = pin.status == 404 ? "not_found" : "unavailable";
  rec.status = pin.status;
  rec.error = pin.message;
  co_await write_json(client, pin.status, openai_error_json(pin.status, pin.message, pin.type),
                      &req, request_id, pin.retry_after);
  co_return false;
}

/// The policy's choice with its in-flight slot, taken atomically (a full backend is skipped).
/// `pinned`: the backend that holds the response the request names (gateway/affinity.hpp), the
/// only candidate then.
upstream::Slot pick(const RouteRuntime& route, const Request& req, const BodyFields& fields,
                    upstream::TriedSet& tried, upstream::Backend* const* pinned,
                    const upstream::ClassCap& class_cap) {
  const HeaderLookup headers{&req};
  const std::span<upstream::Backend* const> candidates =
      *pinned ? std::span<upstream::Backend* const>(pinned, 1)
              : std::span<upstream::Backend* const>(route.backends);
  // A prefill-only backend (disaggregation) never takes the client's request itself.
  tried.add(route.prefill_only);
  policy::PickContext pick_context = context(route, req, fields, headers, *pinned != nullptr);
  pick_context.class_cap = class_cap;
  if (route.cfg->hedge.enabled() && !*pinned) {
    // A route that hedges avoids the backends it finds slow (gateway/hedge.hpp) while another
    // can take the request.
    const upstream::TriedSet to_avoid = avoided_by_hedging(route, mono_ns());
    if (!to_avoid.empty()) {
      upstream::TriedSet avoided = tried;
      avoided.add(to_avoid);
      if (upstream::Slot slot =
              policy::pick_and_acquire(*route.policy, pick_context, candidates, avoided))
        return slot;
    }
  }
  return policy::pick_and_acquire(*route.policy, pick_context, candidates, tried);
}

}  // namespace llmux::gateway
