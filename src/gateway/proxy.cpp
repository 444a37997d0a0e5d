// SPDX-License-Identifier: Apache-2.0
#include "gateway/proxy.hpp"

#include <array>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "core/clock.hpp"
#include "core/openai_error.hpp"
#include "gateway/affinity.hpp"
#include "gateway/health_checker.hpp"
#include "gateway/http_rules.hpp"
#include "gateway/relay.hpp"
#include "gateway/stream_usage.hpp"
#include "gateway/upstream_attempt.hpp"
#include "http/read_parsed.hpp"

namespace llmux::gateway {

using upstream::Outcome;
using Kind = upstream::Outcome::Kind;

namespace {

/// The client's path (its target without the query).
std::string_view request_path(const Request& req) {
  const std::string_view target = req.target();
  return target.substr(0, target.find('?'));
}

/// A request header's value by name, for PickContext::header.
struct HeaderLookup {
  const Request* req;
  std::string_view operator()(std::string_view name) const { return (*req)[name]; }
};

/// The policy's view of the request. Built by the plain functions below, on their own stack:
/// a coroutine keeps every local in its frame, and a held-open stream should cost little.
policy::PickContext context(const RouteRuntime& route, const Request& req, const BodyFields& fields,
                            std::string_view path, const HeaderLookup& headers,
                            bool with_prompt = false, bool pinned = false) {
  policy::PickContext ctx;
  ctx.route = route.cfg->name;
  ctx.method = req.method_string();
  ctx.path = path;
  ctx.model = fields.model;
  ctx.user = fields.user;
  ctx.previous_response_id = fields.previous_response_id;
  ctx.prompt_cache_key = fields.prompt_cache_key;
  ctx.stream = fields.stream;
  ctx.output_tokens = fields.max_tokens >= 0 ? fields.max_tokens : 256;
  ctx.tokens = static_cast<std::int64_t>(fields.body_bytes / 4) + ctx.output_tokens;
  ctx.header = headers;
  ctx.pinned = pinned;
  if (with_prompt && route.policy->needs_prompt()) {
    // The worker's scratch text: valid until the next request's pick on this thread.
    thread_local std::string text;
    text.clear();
    read_prompt_text(req.body(), text);
    ctx.prompt = text;
  }
  return ctx;
}

/// The policy's choice with its in-flight slot, taken atomically (a full backend is skipped).
/// `pinned`: the backend that holds the response the request names (gateway/affinity.hpp), the
/// only candidate then.
upstream::Slot pick(const RouteRuntime& route, const Request& req, const BodyFields& fields,
                    std::string_view path, upstream::TriedSet& tried,
                    upstream::Backend* const* pinned) {
  const HeaderLookup headers{&req};
  const std::span<upstream::Backend* const> candidates =
      *pinned ? std::span<upstream::Backend* const>(pinned, 1)
              : std::span<upstream::Backend* const>(route.backends);
  return policy::pick_and_acquire(
      *route.policy, context(route, req, fields, path, headers, true, *pinned != nullptr),
      candidates, tried);
}

/// Tells the backend's health and the route's policy how an attempt ended.
void report(const Fleet& fleet, upstream::Backend& backend, policy::AttemptObserver* observer,
            const Outcome& outcome, std::string_view request_id, std::int64_t now) {
  if (auto event = upstream::record_outcome(backend, outcome, now, fleet.outlier))
    log_health_event(*event, request_id);
  if (observer) observer->on_done(outcome);
}

/// The jittered back-off before retry number `attempts` (x1-2 of base, doubled per retry). A
/// coroutine of its own: its timer lives only while a retry waits, not in every proxy frame.
net::awaitable<void> backoff(Worker& worker, std::chrono::milliseconds base, int attempts) {
  std::uniform_real_distribution<double> jitter(1.0, 2.0);
  const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
      base * (1 << std::min(attempts - 1, 10)) * jitter(worker.rng));
  net::steady_timer t(co_await net::this_coro::executor, wait);
  co_await t.async_wait(use_tuple);
}

/// A backend slot that, once given back, wakes the queues of the routes its backend serves (the
/// head waiter may take it).
struct HeldSlot {
  upstream::Slot slot;
  const Fleet& fleet;
  HeldSlot(upstream::Slot taken, const Fleet& taken_from)
      : slot(std::move(taken)), fleet(taken_from) {}
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

enum class Admit { slot, full, timeout, client_left };

/// Waits in the route's queue until, first in line, it takes a slot (`slot`); `depth` is how many
/// were waiting when it joined, itself included. A coroutine of its own: its frame (and the
/// ticket) exist only while a request waits.
net::awaitable<Admit> wait_in_queue(ClientConnection& client, const RouteRuntime& route,
                                    const Request& req, const BodyFields& fields,
                                    upstream::Backend* const* pinned, upstream::Slot& slot,
                                    int& depth) {
  const std::string_view path = request_path(req);
  AdmissionQueue& q = *route.queue;
  auto t = q.join(co_await net::this_coro::executor);
  if (!t) co_return Admit::full;
  depth = t->depth;
  const auto deadline = std::chrono::steady_clock::now() + q.timeout();
  for (;;) {
    if (q.at_head(*t)) {
      upstream::TriedSet tried;
      slot = pick(route, req, fields, path, tried, pinned);
      if (slot) {
        q.leave(t);
        co_return Admit::slot;
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (client.watch.client_gone || now >= deadline) {
      q.leave(t);
      co_return client.watch.client_gone ? Admit::client_left : Admit::timeout;
    }
    if (t->woken) {  // woken while it was not waiting: look again at once
      t->woken = false;
      continue;
    }
    // Woken by a slot coming free, or every 100 ms to see the client and the deadline.
    t->timer.expires_after(std::min<std::chrono::steady_clock::duration>(
        deadline - now, std::chrono::milliseconds(100)));
    co_await t->timer.async_wait(use_tuple);
    t->woken = false;
  }
}

/// Response affinity: the owner of the response the request names, in `pinned`; false when the
/// request was answered here instead (owner down, id nowhere). A coroutine of its own, so the
/// lookup's state is not kept in every proxy frame.
net::awaitable<bool> pin_owner(GatewayState& state, const Fleet& fleet, ClientConnection& client,
                               const Request& req, const RouteRuntime& route,
                               const BodyFields& fields, const std::string& request_id,
                               AccessRecord& rec, upstream::Backend*& pinned) {
  const std::string_view path = request_path(req);
  const std::string_view id = named_response_id(path, fields);
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

/// The answer to a request nothing was relayed for: why (a full queue, a queue timeout, every
/// backend full, the one backend holding its conversation failed, the last attempt's failure).
/// A coroutine of its own, so that its messages take no room in every proxy frame.
net::awaitable<void> answer_failure(ClientConnection& client, const Request& req,
                                    const RouteRuntime& route, const BodyFields& fields,
                                    const std::string& request_id, Admit admit, bool all_full,
                                    int attempts, const upstream::Backend* pinned,
                                    const Outcome& outcome, AccessRecord& rec) {
  const std::string_view path = request_path(req);
  upstream::ErrorAnswer answer;
  int retry_after = 0;
  if (admit == Admit::full) {
    answer.status = 429;
    answer.message = fmt::format(
        "Too many requests waiting: every backend of this route is at its max_inflight and {} "
        "requests are queued already (queue.size). Retry later.",
        route.queue->size());
    retry_after = 1;
  } else if (admit == Admit::timeout) {
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
        named_response_id(path, fields), pinned->name, outcome.message, pinned->name);
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

/// The request's metrics and access log line, once it ended (at `now`, mono_ns()). `backend`:
/// the backend that answered (null when none did).
void finish(GatewayState& state, const Fleet& fleet, Worker& worker, const RouteRuntime& route,
            const upstream::Backend* backend, const BodyFields& fields, AccessRecord& rec,
            std::int64_t start, std::int64_t now, const auth::KeyEntry* key = nullptr) {
  rec.total_ms = static_cast<double>(now - start) / 1e6;
  if (key && backend) charge_key(state, *key, *backend, fields, rec);
  if (!fleet.cfg.metrics.enabled) {
    state.log.write(rec);
    return;
  }
  metrics::WorkerMetrics& m = *worker.worker_metrics;
  using metrics::Family;
  const int bid = backend ? backend->metric_id : 0;
  m.count(Family::requests, route.metric_id, bid, rec.status);
  if (rec.attempts > 1) m.count(Family::retries, route.metric_id, 0, 0, rec.attempts - 1);
  if (backend) {
    m.e2e[static_cast<std::size_t>(bid)].observe(metrics::bounds(metrics::HistKind::e2e),
                                                 now - start);
    // Models only from answers a backend accepted: a made-up name never becomes a label.
    const int model =
        rec.status >= 200 && rec.status < 300 ? metrics::names().models.id(fields.model) : 0;
    auto tokens = [&](Family family, const std::optional<std::int64_t>& n) {
      if (n && *n > 0) m.count(family, bid, model, 0, static_cast<std::uint64_t>(*n));
    };
    tokens(Family::prompt_tokens, rec.prompt_tokens);
    tokens(Family::cached_tokens, rec.cached_tokens);
    // What the stream's events counted already is not counted twice.
    if (rec.completion_tokens && *rec.completion_tokens > 0) {
      const auto total = static_cast<std::uint64_t>(*rec.completion_tokens);
      if (total > rec.streamed_tokens)
        m.count(Family::generation_tokens, bid, model, 0, total - rec.streamed_tokens);
    }
  }
  state.log.write(rec);
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
  Admit admit = Admit::slot;
  AccessRecord rec;
  rec.received_ns = start;
  rec.request_id = request_id;
  rec.client = client.peer;
  // Views of the client's request, which outlives this frame and is never modified (the
  // method and path are read from here on: a held-open stream's frame keeps no copy of them).
  rec.method = req.method_string();
  rec.path = request_path(req);
  rec.route = route.cfg->name;
  rec.model = fields.model;
  rec.stream = fields.stream;
  rec.bytes_in = req.body().size();

  // auth.keys: who is calling, may they, and within which quotas (held until the request ends).
  const auth::KeyEntry* key = nullptr;
  auth::QuotaLimiter::Permit permit;
  if (fleet.keys.enabled() && !co_await admit_client(state, fleet, client, req, route, fields,
                                                     request_id, rec, key, permit)) {
    finish(state, fleet, worker, route, nullptr, fields, rec, start, mono_ns());
    co_return;
  }
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
  const UsageRequest usage = fleet.cfg.metrics.stream_usage
                                 ? ask_for_usage(rec.method, rec.path, req.body(), fields)
                                 : UsageRequest{};
  if (usage.asked && fleet.cfg.metrics.enabled)
    worker.worker_metrics->count(metrics::Family::usage_requested, route.metric_id);

  // Watch the client (from the worker's next tick but one, if the request still runs then): a
  // client that leaves while its request waits for the first response byte aborts the upstream
  // request as surely as one that leaves mid-stream.
  start_watch(worker, client);

  for (;;) {
    // The slot is taken atomically with the choice: a backend at max_inflight is skipped. While
    // requests wait in the route's queue, a new one joins them rather than overtaking them.
    upstream::Slot picked;
    if (attempts > 0 || route.queue->depth() == 0)
      picked = pick(route, req, fields, rec.path, tried, &pinned);
    if (!picked && attempts == 0 && route.queue->size() > 0) {
      const std::int64_t queued_at = mono_ns();
      admit = co_await wait_in_queue(client, route, req, fields, &pinned, picked, rec.queue_depth);
      ready = mono_ns();
      not_overhead += ready - queued_at;
      rec.queue_ms = static_cast<double>(ready - queued_at) / 1e6;
      if (admit == Admit::client_left) outcome.kind = Kind::client_left;
    }
    if (!picked) {
      all_full = attempts == 0;
      break;
    }
    HeldSlot held(std::move(picked), fleet);
    upstream::Backend& b = *held.slot.backend();
    tried.add(b);
    ++attempts;
    // The first attempt starts when the request was ready to go (the pick takes microseconds).
    const std::int64_t attempt_start = attempts == 1 ? ready : mono_ns();
    // The route's policy may follow the attempt (what it learns from it).
    std::unique_ptr<policy::AttemptObserver> observer = route.policy->on_dispatch(b);
    // Each attempt's request is built fresh from the client's, which is never modified: a
    // retry carries nothing of the backend tried before (its target, Host or key).
    Attempt a = co_await send(fleet, worker, b, req, client, request_id, usage, rec.queue_depth > 0,
                              outcome);
    a.observer = std::move(observer);
    if (!a.up) {
      client.watch.up = nullptr;
      const std::int64_t now = mono_ns();
      outcome.total = std::chrono::nanoseconds(now - attempt_start);
      report(fleet, b, a.observer.get(), outcome, request_id, now);
      if (fleet.cfg.metrics.enabled)
        worker.worker_metrics->count(metrics::Family::attempt_failures, b.metric_id,
                                     static_cast<int>(outcome.kind));
      spdlog::debug("request {}: {}", request_id, outcome.message);
      if (upstream::decide_retry(outcome, attempts, fleet.cfg.retries.max_attempts) !=
          upstream::RetryDecision::try_another_backend)
        break;
      // Never sent: another backend may take it, within the request's time and the route's
      // retry budget, after a short jittered back-off.
      if (now - start > std::chrono::nanoseconds(fleet.cfg.retries.request_budget).count()) {
        outcome.message += " (no time left in the request's retry budget)";
        break;
      }
      if (!route.retry_budget->try_retry(now)) {
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
    rec.backend = b.name;
    rec.attempts = attempts;
    first_byte(rec, outcome, start, attempt_start);
    if (fleet.cfg.metrics.enabled)
      worker.worker_metrics->request_overhead.observe(
          metrics::bounds(metrics::HistKind::request_overhead), a.sent_ns - start - not_overhead);
    // No attempt follows one that got a response: the body is not needed any more (a Codex
    // turn's can be hundreds of KiB, and its stream lasts minutes).
    req.release_body();
    co_await relay(fleet, worker, client, req, b, a, rec, outcome, affinity_store, usage.asked);
    if (a.up) release(worker, b, std::move(a.up));  // reusable: back to the pool
    // Counted before anything else may suspend: the client has the whole answer already, and
    // its next request (a scrape of /metrics, say) may reach another worker at once.
    const std::int64_t end = mono_ns();
    outcome.total = std::chrono::nanoseconds(end - attempt_start);
    report(fleet, b, a.observer.get(), outcome, request_id, end);
    if (outcome.kind == Kind::broken_mid_stream && fleet.cfg.metrics.enabled)
      worker.worker_metrics->count(metrics::Family::attempt_failures, b.metric_id,
                                   static_cast<int>(outcome.kind));
    finish(state, fleet, worker, route, &b, fields, rec, start, end, key);
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
  // Nothing was relayed: answer with the error.
  co_await answer_failure(client, req, route, fields, request_id, admit, all_full, attempts, pinned,
                          outcome, rec);
  finish(state, fleet, worker, route, nullptr, fields, rec, start, mono_ns());
}

}  // namespace llmux::gateway
