// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy.hpp"

#include <algorithm>
#include <random>

#include <spdlog/spdlog.h>
#include <boost/asio/steady_timer.hpp>

#include "core/clock.hpp"
#include "core/use_tuple.hpp"
#include "gateway/admit.hpp"
#include "gateway/affinity.hpp"
#include "gateway/disaggregation.hpp"
#include "gateway/finish.hpp"
#include "gateway/hedge.hpp"
#include "gateway/http_rules.hpp"
#include "gateway/migration.hpp"
#include "gateway/pick.hpp"
#include "gateway/relay.hpp"
#include "gateway/sharing.hpp"
#include "gateway/stream_usage.hpp"
#include "gateway/tenant_metrics.hpp"
#include "gateway/upstream_attempt.hpp"

namespace llmux::gateway {

using upstream::Outcome;
using Kind = upstream::Outcome::Kind;

namespace {

/// The jittered back-off before retry number `attempts` (x1-2 of base, doubled per retry). A
/// coroutine of its own: its timer lives only while a retry waits, not in every proxy frame.
net::awaitable<void> backoff(Worker& worker, std::chrono::milliseconds base, int attempts) {
  std::uniform_real_distribution<double> jitter(1.0, 2.0);
  const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
      base * (1 << std::min(attempts - 1, 10)) * jitter(worker.rng));
  net::steady_timer timer(co_await net::this_coro::executor, wait);
  co_await timer.async_wait(use_tuple);
}

/// The response header has come: the time to it, from the request's start (the access log)
/// and from the attempt's (the outcome: relay() keeps it). A plain function: the readings take
/// no room in proxy()'s frame, which a held-open stream keeps.
void first_byte(AccessRecord& rec, Outcome& outcome, std::int64_t start,
                std::int64_t attempt_start) {
  const std::int64_t now = mono_ns();
  rec.ttfb_ms = static_cast<double>(now - start) / 1e6;
  outcome.ttfb = std::chrono::nanoseconds(now - attempt_start);
}

}  // namespace

net::awaitable<void> proxy(GatewayState& state, const Fleet& fleet, Worker& worker,
                           ClientConnection& client, Request& req, const RouteRuntime& route,
                           const BodyFields& fields, const std::string& request_id) {
  const std::int64_t start = mono_ns();

  upstream::TriedSet tried;
  Outcome outcome;
  int attempts = 0;
  bool all_full = false;
  QueueWait queue_wait = QueueWait::slot;
  AccessRecord rec;
  rec.received_ns = start;
  rec.request_id = request_id;
  rec.client = client.peer;
  // Views of the client's request, which outlives this frame and is never modified (the
  // method and path are read from here on: a held-open stream's frame keeps no copy of them).
  rec.method = req.method_string();
  rec.path = req.path();
  rec.route = route.cfg->name;
  rec.model = fields.model;
  rec.stream = fields.stream;
  rec.bytes_in = req.body().size();

  // auth.keys: who is calling, may they, and within which quotas (held until the request ends);
  // whom the request is for and its priority class (gateway/sharing.hpp). A request refused is
  // answered by admit_client().
  const auth::KeyEntry* key = nullptr;
  auth::QuotaLimiter::Permit permit;
  if ((fleet.keys.enabled() || !classify_request(fleet, client, req, nullptr, request_id, rec)) &&
      !co_await admit_client(state, fleet, client, req, route, fields, request_id, rec, key,
                             permit)) {
    finish(state, fleet, worker, route, nullptr, fields, rec, start, mono_ns());
    co_return;
  }
  if (fleet.cfg.metrics.enabled) count_tenant_start(fleet, *worker.worker_metrics, rec);
  route.retry_budget->on_request(start);

  upstream::Backend* pinned = nullptr;
  // Affinity matters where a route has a choice; a route of one backend sends it everything.
  if (fleet.cfg.affinity.enabled && route.backends.size() > 1 &&
      !co_await pin_owner(state, fleet, client, req, route, fields, request_id, rec, pinned)) {
    finish(state, fleet, worker, route, nullptr, fields, rec, start, mono_ns());
    co_return;
  }
  // Time the gateway spent not on its own work (the owner lookup above, the queue below): left
  // out of its request overhead.
  // (The clock is read four times on a request's usual path: here, after the owner lookup, at
  // the response's header and at its end; each read costs ~36 ns.)
  std::int64_t ready = mono_ns();
  std::int64_t not_overhead = ready - start;
  state::ResponseStore* affinity_store =
      fleet.cfg.affinity.enabled && learns_response_id(rec.method, rec.path, fields)
          ? state.responses
          : nullptr;
  // Every stream's tokens counted: ask for usage where the client did not (stream_usage.hpp).
  // (A continuation leg sends a body of its own: gateway/migration.hpp.)
  UsageRequest usage = fleet.cfg.metrics.stream_usage
                           ? ask_for_usage(rec.method, rec.path, req.body(), fields)
                           : UsageRequest{};
  if (usage.asked && fleet.cfg.metrics.enabled)
    worker.worker_metrics->count(metrics::Family::usage_requested, route.metric_id);

  // A stream another backend may continue if its own breaks (gateway/migration.hpp).
  const std::unique_ptr<StreamContinuation> continuation =
      continuation_for(fleet, req, route, fields);

  // Watch the client (from the worker's next tick but one, if the request still runs then): a
  // client that leaves while its request waits for the first response byte aborts the upstream
  // request as surely as one that leaves mid-stream.
  start_watch(worker, client);

  // Prefill/decode disaggregation (gateway/disaggregation.hpp): the prompt is computed on a
  // prefill backend first, and the attempts below send the decode leg's body.
  if (disaggregates(route, req, fields))
    co_await prefill_first(fleet, worker, route, req, fields, client, request_id, usage, tried,
                           rec);

  for (;;) {
    // The slot is taken atomically with the choice: a backend at max_inflight is skipped. While
    // requests wait in the route's queue, a new one joins them rather than overtaking them.
    HeldSlot held(fleet);
    if (attempts > 0 || route.queue->depth() == 0)
      held.slot = pick(route, req, fields, tried, &pinned, class_cap(fleet, client.priority_class));
    if (!held.slot && attempts == 0 && route.queue->size() > 0) {
      const std::int64_t queued_at = mono_ns();
      queue_wait =
          co_await wait_in_queue(fleet, client, route, req, fields, &pinned, held.slot, rec);
      ready = mono_ns();
      not_overhead += ready - queued_at;
      rec.queue_ms = static_cast<double>(ready - queued_at) / 1e6;
      if (queue_wait == QueueWait::client_left) outcome.kind = Kind::client_left;
    }
    if (!held.slot) {
      all_full = attempts == 0;
      break;
    }
    tried.add(*held.slot.backend());
    ++attempts;
    // The first attempt starts when the request was ready to go (the pick takes microseconds).
    const std::int64_t attempt_start = attempts == 1 ? ready : mono_ns();
    // Each attempt's request is built fresh from the client's, which is never modified: a
    // retry carries nothing of the backend tried before (its target, Host or key). A route that
    // hedges races the first with a second backend (gateway/hedge.hpp); held has the winner's.
    Attempt attempt = co_await attempt_at(
        fleet, worker, route, held, tried, req, fields, client, request_id, usage,
        rec.queue_depth > 0, attempts == 1 && !pinned && !on_continuation_leg(continuation.get()),
        outcome);
    upstream::Backend& backend = *held.slot.backend();
    rec.hedge = attempt.hedge;
    // The route's policy may follow the attempt, sent (what it learns from it).
    attempt.observer = route.policy->on_dispatch(backend);
    // A continuation leg's answer must be a stream to go on with.
    if (attempt.up && on_continuation_leg(continuation.get()))
      refuse_unusable_leg(attempt, backend, outcome);
    if (!attempt.up) {
      client.watch.up = nullptr;
      const std::int64_t now = mono_ns();
      outcome.total = std::chrono::nanoseconds(now - attempt_start);
      report_outcome(fleet, backend, attempt.observer.get(), outcome, request_id, now);
      if (fleet.cfg.metrics.enabled)
        worker.worker_metrics->count(metrics::Family::attempt_failures, backend.metric_id,
                                     static_cast<int>(outcome.kind));
      spdlog::debug("request {}: {}", request_id, outcome.message);
      if (on_continuation_leg(continuation.get())) {
        // A continuation leg that failed before its stream began: the next one, if any is left.
        if (!client.watch.client_gone && next_leg(fleet, req, backend, *continuation, usage, rec))
          continue;
        break;
      }
      // (A request the backend may store is sent again only from a backend down for sure.)
      if (upstream::decide_retry(
              outcome, attempts, fleet.cfg.retries.max_attempts,
              may_run_twice(fleet, rec.method, rec.path, fields) || outcome.backend_down) !=
          upstream::RetryDecision::try_another_backend)
        break;
      // A decode leg that failed: the next attempt prefills itself (the KV cache it was to
      // fetch may be gone).
      if (rec.prefill_backend >= 0) serve_unified(fleet, req, fields, usage);
      // Never sent: another backend may take it, within the request's time and the route's
      // retry budget, after a short jittered back-off.
      if (now - start > std::chrono::nanoseconds(fleet.cfg.retries.request_budget).count()) {
        outcome.message += " (no time left in the request's retry budget)";
        break;
      }
      // (A backend declared down is failed over whatever the budget says: that is no storm.)
      if (!outcome.backend_down && !route.retry_budget->try_retry(now)) {
        outcome.message += " (the route's retry budget is spent)";
        break;
      }
      if (fleet.cfg.retries.backoff.count() > 0) {
        co_await backoff(worker, fleet.cfg.retries.backoff, attempts);
        if (client.watch.client_gone) {
          outcome.kind = Kind::client_left;
          break;
        }
      }
      continue;
    }
    rec.backend = backend.name;
    rec.attempts = attempts;
    if (on_continuation_leg(continuation.get())) {
      // A continuation leg: the client's time to first byte was the first leg's.
      outcome.ttfb = std::chrono::nanoseconds(mono_ns() - attempt_start);
      count_migration(fleet, worker, route, *continuation, backend);
    } else {
      first_byte(rec, outcome, start, attempt_start);
      if (fleet.cfg.metrics.enabled)
        worker.worker_metrics->request_overhead.record(
            metrics::bounds(metrics::HistKind::request_overhead),
            attempt.sent_ns - start - not_overhead);
    }
    // No attempt follows one that got a response: the body is not needed any more (a Codex
    // turn's can be hundreds of KiB, and its stream lasts minutes) unless another backend may
    // have to continue the stream.
    if (!continuation) req.release_body();
    attempt.continuation = continuation.get();
    // The usage chunk the gateway asked for is not the client's (a leg always asks).
    co_await relay(fleet, worker, client, req, backend, attempt, rec, outcome, affinity_store,
                   usage.asked && fields.include_usage != 1);
    if (attempt.up) release(worker, backend, std::move(attempt.up));  // reusable: back to the pool
    // Counted before anything else may suspend: the client has the whole answer already, and
    // its next request (a scrape of /metrics, say) may reach another worker at once.
    const std::int64_t end = mono_ns();
    outcome.total = std::chrono::nanoseconds(end - attempt_start);
    report_outcome(fleet, backend, attempt.observer.get(), outcome, request_id, end);
    if (outcome.kind == Kind::broken_mid_stream && fleet.cfg.metrics.enabled)
      worker.worker_metrics->count(metrics::Family::attempt_failures, backend.metric_id,
                                   static_cast<int>(outcome.kind));
    if (attempt.continues_elsewhere) {
      // The stream broke, the client's response is still open: the next pass of this loop is
      // the next leg, on another backend (gateway/migration.hpp), if one is left.
      if (!client.watch.client_gone && next_leg(fleet, req, backend, *continuation, usage, rec))
        continue;
      break;
    }
    if (on_continuation_leg(continuation.get())) settle_leg_tokens(*continuation, rec);
    finish(state, fleet, worker, route, &backend, fields, rec, start, end, key);
    if (!end_watch(client)) co_await stop_watch(client);
    co_return;
  }
  if (!end_watch(client)) co_await stop_watch(client);
  if (outcome.kind == Kind::client_left || client.watch.client_gone) {
    client.keep_alive = false;
    rec.attempts = attempts;
    rec.status = 499;  // nginx's "client closed request"
    rec.error = "client left before the response began";
    finish(state, fleet, worker, route, nullptr, fields, rec, start, mono_ns());
    co_return;
  }
  // Nothing was relayed (or a stream's legs ran out): answer with the error.
  co_await answer_failure(client, req, route, fields, request_id, queue_wait, all_full, attempts,
                          pinned, outcome, rec, continuation.get());
  finish(state, fleet, worker, route, nullptr, fields, rec, start, mono_ns());
}

}  // namespace llmux::gateway
