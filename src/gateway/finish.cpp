// SPDX-License-Identifier: Apache-2.0
#include "gateway/finish.hpp"

#include "gateway/migration.hpp"

#include <fmt/format.h>

#include "core/clock.hpp"
#include "gateway/affinity.hpp"
#include "gateway/metrics.hpp"
#include "gateway/sharing.hpp"
#include "gateway/tenant_metrics.hpp"

namespace llmux::gateway {

namespace {

/// An admitted key's request that a backend answered: the tokens its `usage` reported go to the
/// key's tokens-per-minute quota and to the usage ledger (under the hour it ended in).
void charge_key(GatewayState& state, const auth::KeyEntry& key, const upstream::Backend& backend,
                const BodyFields& fields, const AccessRecord& rec) {
  const auth::TokenUsage used{rec.prompt_tokens.value_or(0), rec.cached_tokens.value_or(0),
                              rec.completion_tokens.value_or(0)};
  const std::int64_t now_ms = unix_ms();
  if (used.prompt + used.completion > 0)
    state.quotas->charge(key, used.prompt + used.completion, now_ms);
  state.usage->add(key.name, fields.model, backend.name, now_ms / 1000, used);
}

/// The name of the backend that ran the request's prefill leg ("unified": none answered; "":
/// not disaggregated).
std::string_view prefill_backend_name(const RouteRuntime& route, const AccessRecord& rec) {
  if (rec.prefill_backend == AccessRecord::kPrefillFailed) return "unified";
  if (rec.prefill_backend < 0 ||
      static_cast<std::size_t>(rec.prefill_backend) >= route.backends.size())
    return {};
  return route.backends[static_cast<std::size_t>(rec.prefill_backend)]->name;
}

}  // namespace

/// The answer to a request nothing was relayed for: why (a full queue, a queue timeout, every
/// backend full, the one backend holding its conversation failed, the last attempt's failure).
/// A coroutine of its own, so that its messages take no room in every proxy frame.
net::awaitable<void> answer_failure(ClientConnection& client, const Request& req,
                                    const RouteRuntime& route, const BodyFields& fields,
                                    const std::string& request_id, QueueWait queue_wait,
                                    bool all_full, int attempts, const upstream::Backend* pinned,
                                    const upstream::Outcome& outcome, AccessRecord& rec,
                                    const StreamContinuation* continuation) {
  if (on_continuation_leg(continuation)) {
    // A stream left open for a continuation that no backend could give: its error event.
    rec.attempts = attempts;
    rec.error = outcome.message;
    co_return co_await end_stream_with_error(client, *continuation, outcome.message);
  }
  upstream::ErrorAnswer answer;
  int retry_after = 0;
  if (queue_wait == QueueWait::tenant_full) {
    answer.status = 429;
    answer.message = fmt::format(
        "Too many requests of tenant '{}' waiting: every backend of this route is at its "
        "max_inflight and this tenant holds {} places of its queue already (tenants.max_queued). "
        "Retry later.",
        rec.tenant, route.queue->max_queued_per_tenant());
    retry_after = 1;
  } else if (queue_wait == QueueWait::full) {
    answer.status = 429;
    answer.message = fmt::format(
        "Too many requests waiting: every backend of this route is at its max_inflight and {} "
        "requests are queued already (queue.size). Retry later.",
        route.queue->size());
    retry_after = 1;
  } else if (queue_wait == QueueWait::timeout) {
    answer.status = 503;
    answer.message = fmt::format(
        "Every backend of this route stayed at its max_inflight while this request waited {} ms "
        "in the queue (queue.timeout). Retry later.",
        route.queue->timeout().count());
    retry_after = 2;
  } else if (all_full) {
    answer.message = "No backend available for this route: every backend is at its max_inflight.";
  } else if (attempts > 0 && pinned) {
    // The one backend that holds the conversation failed: no other may be asked.
    answer.status = 503;
    answer.message = fmt::format(
        "Response '{}' is stored on backend '{}', which failed: {}. No other backend has it; "
        "retry when '{}' is back.",
        named_response_id(req.path(), fields), pinned->name, outcome.message, pinned->name);
    retry_after = 5;
    rec.affinity = "unavailable";
  } else if (attempts > 0) {
    answer = upstream::error_answer(outcome);
  } else {
    answer.message = "No backend available for this route.";
  }
  rec.attempts = attempts;
  rec.status = answer.status;
  rec.error = answer.message;
  co_await write_error(client, answer.status, answer.message, &req, true, request_id, retry_after);
}

/// The request's metrics and access log line, once it ended (at `now`, mono_ns()). `backend`:
/// the backend that answered (null when none did).
void finish(GatewayState& state, const Fleet& fleet, Worker& worker, const RouteRuntime& route,
            const upstream::Backend* backend, const BodyFields& fields, AccessRecord& rec,
            std::int64_t start, std::int64_t now, const auth::KeyEntry* key) {
  rec.total_ms = static_cast<double>(now - start) / 1e6;
  settle_queue_charge(fleet, route, rec);  // its tenant's charge in the queue, by its real tokens
  if (key && backend) charge_key(state, *key, *backend, fields, rec);
  if (!fleet.cfg.metrics.enabled) {
    state.log.write(rec, priority_name(fleet, rec), prefill_backend_name(route, rec));
    return;
  }
  metrics::WorkerMetrics& worker_metrics = *worker.worker_metrics;
  using metrics::Family;
  const int bid = backend ? backend->metric_id : 0;
  worker_metrics.count(Family::requests, route.metric_id, bid, rec.status);
  count_tenant_end(fleet, worker_metrics, rec);
  if (rec.attempts > 1)
    worker_metrics.count(Family::retries, route.metric_id, 0, 0, rec.attempts - 1);
  if (rec.prefill_backend != -1) {
    const int prefill =
        rec.prefill_backend >= 0 &&
                static_cast<std::size_t>(rec.prefill_backend) < route.backends.size()
            ? route.backends[static_cast<std::size_t>(rec.prefill_backend)]->metric_id
            : 0;
    worker_metrics.count(Family::prefills, route.metric_id, prefill);
  }
  if (backend) {
    worker_metrics.e2e[static_cast<std::size_t>(bid)].record(
        metrics::bounds(metrics::HistKind::e2e), now - start);
    // Models only from answers a backend accepted: a made-up name never becomes a label.
    const int model =
        rec.status >= 200 && rec.status < 300 ? metrics::names().models.id(fields.model) : 0;
    auto tokens = [&](Family family, const std::optional<std::int64_t>& count) {
      if (count && *count > 0)
        worker_metrics.count(family, bid, model, 0, static_cast<std::uint64_t>(*count));
    };
    tokens(Family::prompt_tokens, rec.prompt_tokens);
    tokens(Family::cached_tokens, rec.cached_tokens);
    // What the stream's events counted already is not counted twice.
    if (rec.completion_tokens && *rec.completion_tokens > 0) {
      const auto total = static_cast<std::uint64_t>(*rec.completion_tokens);
      if (total > rec.streamed_tokens)
        worker_metrics.count(Family::generation_tokens, bid, model, 0, total - rec.streamed_tokens);
    }
  }
  state.log.write(rec, priority_name(fleet, rec), prefill_backend_name(route, rec));
}

}  // namespace llmux::gateway
