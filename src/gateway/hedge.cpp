// SPDX-License-Identifier: Apache-2.0
#include "gateway/hedge.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/read_size.hpp>

#include "core/clock.hpp"
#include "core/use_tuple.hpp"
#include "gateway/metrics.hpp"
#include "gateway/sharing.hpp"

namespace llmux::gateway {

using upstream::Outcome;
using Kind = upstream::Outcome::Kind;

namespace {

/// One of the two attempts of a race.
struct Leg {
  upstream::Backend* backend = nullptr;
  Attempt attempt;  // `up` set: it answered, its first body byte came (or it has no body)
  Outcome outcome;  // how it ended when it did not answer
  std::int64_t start_ns = 0;
  std::int64_t answered_ns = 0;
  bool running = false;
  bool cancelled = false;  // its connection was closed here: it lost, or the client left
};

/// What the attempts share with the request's coroutine, which waits on `wake` (its deadline:
/// the hedge's time; cancelled when a leg ends) and outlives both legs.
struct Race {
  explicit Race(const net::any_io_executor& executor) : wake(executor) {}
  net::steady_timer wake;
  std::array<Leg, 2> legs;
};

/// The first byte of the response's body, unless one is there already, the response is
/// complete, or the read fails (the relay then finds what happened). A stream's first chunk
/// comes with its first token.
net::awaitable<void> await_first_body_byte(const Fleet& fleet, upstream::BackendConnection& up,
                                           const UpstreamResponse& response) {
  if (up.buf.size() > 0 || response.is_done()) co_return;
  up.dl.arm(fleet.cfg.timeouts.idle);
  const auto room = up.buf.prepare(beast::read_size(up.buf, 64 * 1024));
  auto [error, bytes_read] = co_await up.sock.async_read_some(room, use_tuple);
  up.buf.commit(bytes_read);
  up.dl.disarm();
}

/// One attempt of the race, run beside the request's coroutine: send() and the first body byte.
net::awaitable<void> run_leg(const Fleet& fleet, Worker& worker, Race& race, int index,
                             const Request& req, const BodyFields& fields, ClientConnection& client,
                             const std::string& request_id, const UsageRequest& usage,
                             bool queued) {
  Leg& leg = race.legs[static_cast<std::size_t>(index)];
  leg.attempt = co_await send(fleet, worker, *leg.backend, req, fields, client, request_id, usage,
                              queued, leg.outcome, /*hedge_leg=*/index == 1);
  if (leg.attempt.up && !leg.cancelled && !client.watch.client_gone)
    co_await await_first_body_byte(fleet, *leg.attempt.up, *leg.attempt.parser);
  leg.answered_ns = mono_ns();
  leg.running = false;
  race.wake.cancel();
}

/// How long the first attempt runs alone, and the learned p99 it came from (zero for a fixed
/// `after`); no wait: it is not hedged (no p99 learned yet).
struct HedgeWait {
  std::optional<std::chrono::nanoseconds> wait;
  std::chrono::nanoseconds p99{0};
};

/// `after: Nx` multiplies the lowest p99 of the route's backends: a backend slowed for a while
/// then raises its own, not the wait (which the route's p99, all backends together, would).
HedgeWait hedge_wait(const RouteRuntime& route) {
  const config::Hedge& hedge = route.cfg->hedge;
  if (hedge.after_p99 <= 0) return {std::chrono::nanoseconds(hedge.after)};
  std::optional<std::chrono::nanoseconds> lowest;
  for (const auto& times : route.first_token_times)
    if (const auto p99 = times->quantile(0.99); p99 && (!lowest || *p99 < *lowest)) lowest = p99;
  if (!lowest) return {};
  return {std::chrono::nanoseconds(
              static_cast<std::int64_t>(static_cast<double>(lowest->count()) * hedge.after_p99)),
          *lowest};
}

/// The learned times of `backend` on `route` (null: not learned there).
upstream::FirstTokenTimes* times_of(const RouteRuntime& route, const upstream::Backend& backend) {
  for (std::size_t i = 0; i < route.backends.size() && i < route.first_token_times.size(); ++i)
    if (route.backends[i] == &backend) return route.first_token_times[i].get();
  return nullptr;
}

/// What the route learns of the first attempt's time to its first token (for that attempt's
/// backend): the time itself when it came before the hedge began; when the hedge began, only that
/// it took longer than the p99 that set the wait, which is what is recorded, just inside that
/// p99's bucket (a lower bound: recording a slow first attempt's time, or the p99's bucket bound,
/// which falls in the next bucket, would let the p99 climb with every slowdown and the wait with
/// it; a hedge's own time is another backend's). While more than 1% of requests are hedged the
/// p99 stays, and it comes back down as they stop; it rises with times that came before the wait,
/// which is why the multiple must be above 1.
void learn_first_token_time(const RouteRuntime& route, const HedgeWait& wait, const Leg& first,
                            bool hedge_began) {
  upstream::FirstTokenTimes* times = times_of(route, *first.backend);
  if (!times) return;
  if (!hedge_began) {
    if (first.attempt.up)
      times->record(std::chrono::nanoseconds(first.answered_ns - first.start_ns),
                    first.answered_ns);
  } else if (wait.p99.count() > 1) {
    times->record(wait.p99 - std::chrono::nanoseconds(1), mono_ns());
  }
}

/// How long a backend that lost `lost_in_a_row` races in a row is avoided: 1 s, doubled for each
/// further loss, at most 16 s.
std::chrono::nanoseconds avoidance(int lost_in_a_row) {
  return std::chrono::seconds(1) * (1 << std::clamp(lost_in_a_row - 1, 0, 4));
}

/// How often a first attempt waiting for its hedge looks at its backend's pace: one that turns
/// slow meanwhile (avoided_by_hedging) is raced at once, not at the end of the wait.
constexpr std::chrono::milliseconds kPaceCheckStep{50};

/// Whether a backend whose tokens come `own` apart is slower than a peer whose come `fastest`
/// apart (both timed lately). (A peer whose events came in bursts averages near zero: a
/// millisecond at least.)
bool slower_than(std::int64_t own, std::int64_t fastest) {
  constexpr std::int64_t kLeastGapNs = 1'000'000;
  return static_cast<double>(own) >
         kSlowerThanPeers * static_cast<double>(std::max(fastest, kLeastGapNs));
}

/// Whether a backend may be compared with the route's others: a prefill-only one produces no
/// stream of the route's.
bool paced(const RouteRuntime& route, const upstream::Backend& backend) {
  return !route.prefill_only.contains(backend);
}

/// The backends of `route` whose streams' tokens come kSlowerThanPeers times further apart than
/// those of the fastest other backend of the route (both timed lately). Each gap is read once,
/// and the two fastest kept: a backend's fastest peer is the fastest of all, or the second where
/// it is the fastest itself (one pass, whatever the route's size).
upstream::TriedSet slower_than_peers(const RouteRuntime& route, std::int64_t now) {
  constexpr std::int64_t kNotTimed = -1;
  std::array<std::int64_t, 64> gaps{};
  const std::size_t count = std::min(route.backends.size(), gaps.size());
  std::size_t fastest = count, second = count;
  for (std::size_t i = 0; i < count; ++i) {
    const upstream::Backend& backend = *route.backends[i];
    const std::optional<std::int64_t> gap =
        paced(route, backend) ? backend.observations.pace.gap(now) : std::nullopt;
    gaps[i] = gap ? *gap : kNotTimed;
    if (!gap) continue;
    if (fastest == count || *gap < gaps[fastest]) {
      second = fastest;
      fastest = i;
    } else if (second == count || *gap < gaps[second]) {
      second = i;
    }
  }
  upstream::TriedSet slower;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t peer = i == fastest ? second : fastest;
    if (gaps[i] != kNotTimed && peer < count && slower_than(gaps[i], gaps[peer]))
      slower.add(*route.backends[i]);
  }
  return slower;
}

/// Tells the first attempt's backend how the race went: a loss its pace does not explain makes
/// the routes that hedge avoid it for a while, longer with each such loss in a row (one its pace
/// explains is avoided for as long as the pace says: avoided_by_hedging); an answer in time ends
/// the run.
void settle_race(const RouteRuntime& route, upstream::Backend& backend, bool lost,
                 std::int64_t now) {
  if (!lost) {
    if (backend.hedges_lost_in_a_row.load(std::memory_order_relaxed) != 0)
      backend.hedges_lost_in_a_row.store(0, std::memory_order_relaxed);
    return;
  }
  if (slower_than_peers(route, now).contains(backend)) return;
  const int in_a_row = backend.hedges_lost_in_a_row.fetch_add(1, std::memory_order_relaxed) + 1;
  backend.avoided_until_ns.store(now + avoidance(in_a_row).count(), std::memory_order_relaxed);
}

/// The hedged attempt: the first leg at once, a second after the route's wait (a backend not
/// tried, a slot free, the retry budget willing), the first answer taken and the other leg
/// cancelled. See attempt_at().
net::awaitable<Attempt> hedged_send(const Fleet& fleet, Worker& worker, const RouteRuntime& route,
                                    HeldSlot& held, upstream::TriedSet& tried, const Request& req,
                                    const BodyFields& fields, ClientConnection& client,
                                    const std::string& request_id, const UsageRequest& usage,
                                    bool queued, Outcome& outcome) {
  const auto executor = co_await net::this_coro::executor;
  Race race(executor);
  HeldSlot hedge_slot(fleet);
  auto start_leg = [&](int index, upstream::Backend& backend) {
    Leg& leg = race.legs[static_cast<std::size_t>(index)];
    leg.backend = &backend;
    leg.running = true;
    leg.start_ns = mono_ns();
    net::co_spawn(
        executor,
        run_leg(fleet, worker, race, index, req, fields, client, request_id, usage, queued),
        net::detached);
  };
  Leg& first = race.legs[0];
  Leg& second = race.legs[1];
  start_leg(0, *held.slot.backend());
  const HedgeWait hedge = hedge_wait(route);
  const std::optional<std::chrono::nanoseconds>& wait = hedge.wait;
  bool hedge_decided = !wait;    // the hedge started, or it will not
  bool hedged_for_pace = false;  // before the wait: the first's backend turned slow meanwhile
  int winner = -1;
  for (;;) {
    for (int i = 0; i < 2 && winner < 0; ++i) {
      const Leg& leg = race.legs[static_cast<std::size_t>(i)];
      if (leg.backend && !leg.running && leg.attempt.up) winner = i;
    }
    if (winner >= 0 || client.watch.client_gone) break;
    // The first failed before its hedge began: the proxy's retry rules take it from here.
    if (!first.running && !second.backend) break;
    if (!first.running && !second.running) break;  // both failed
    const std::int64_t now = mono_ns();
    if (!hedge_decided && now - first.start_ns < wait->count() &&
        slower_than_peers(route, now).contains(*first.backend))
      hedged_for_pace = true;
    if (!hedge_decided && (now - first.start_ns >= wait->count() || hedged_for_pace)) {
      hedge_decided = true;
      if (route.retry_budget->try_retry(now)) {
        upstream::Backend* const not_pinned = nullptr;
        hedge_slot.slot =
            pick(route, req, fields, tried, &not_pinned, class_cap(fleet, client.priority_class));
        if (hedge_slot.slot) {
          tried.add(*hedge_slot.slot.backend());
          start_leg(1, *hedge_slot.slot.backend());
          spdlog::debug("request {}: hedged on {} after {} ms without a token from {}", request_id,
                        hedge_slot.slot.backend()->name, (now - first.start_ns) / 1'000'000,
                        first.backend->name);
        }
      }
      continue;
    }
    if (hedge_decided)
      race.wake.expires_at(net::steady_timer::time_point::max());
    else  // (woken in steps to see whether the first's backend turned slow meanwhile)
      race.wake.expires_after(
          std::min(std::chrono::nanoseconds(first.start_ns + wait->count() - now),
                   std::chrono::nanoseconds(kPaceCheckStep)));
    co_await race.wake.async_wait(use_tuple);
  }

  // The loser, or both when the client left, is cancelled: its connection closed (vLLM aborts
  // the request), and awaited, since it shares this frame.
  for (int i = 0; i < 2; ++i) {
    Leg& leg = race.legs[static_cast<std::size_t>(i)];
    if (i == winner || !leg.running) continue;
    leg.cancelled = true;
    ClientWatch::close(i == 0 ? client.watch.up : client.watch.hedge_up);
  }
  // (One that answered but lost, when both answered before this coroutine woke, is closed with
  // its Attempt at the end of this frame.)
  while (first.running || second.running) {
    race.wake.expires_at(net::steady_timer::time_point::max());
    co_await race.wake.async_wait(use_tuple);
  }
  client.watch.hedge_up = nullptr;

  const HedgeResult result = !second.backend ? HedgeResult::none
                             : winner == 1   ? HedgeResult::hedge_won
                                             : HedgeResult::first_won;
  if (winner >= 0) {
    settle_race(route, *first.backend, winner == 1, mono_ns());
    // (A hedge that could not start — no budget, no free backend — still says the first took
    // longer than the wait.)
    // (Of a first attempt raced for its backend's pace, nothing: it ran on a slow backend.)
    if (!hedged_for_pace)
      learn_first_token_time(route, hedge, first, hedge_decided && wait.has_value());
  }
  if (result != HedgeResult::none && fleet.cfg.metrics.enabled)
    worker.worker_metrics->count(metrics::Family::hedges, route.metric_id,
                                 static_cast<int>(result));
  // A leg that failed on its own (not cancelled) tells its backend's health, as any attempt
  // does; the one whose failure is returned is told by the proxy.
  const int returned = winner >= 0 ? winner : (second.backend && !second.cancelled ? 1 : 0);
  for (int i = 0; i < 2; ++i) {
    Leg& leg = race.legs[static_cast<std::size_t>(i)];
    if (i == returned || !leg.backend || leg.cancelled || leg.attempt.up) continue;
    report_outcome(fleet, *leg.backend, nullptr, leg.outcome, request_id, leg.answered_ns);
    if (fleet.cfg.metrics.enabled)
      worker.worker_metrics->count(metrics::Family::attempt_failures, leg.backend->metric_id,
                                   static_cast<int>(leg.outcome.kind));
  }
  if (client.watch.client_gone && winner < 0) {
    client.watch.up = nullptr;
    outcome = Outcome{};
    outcome.kind = Kind::client_left;
    outcome.message = "the client left";
    co_return Attempt{};
  }
  Leg& kept = race.legs[static_cast<std::size_t>(returned)];
  if (returned == 1) std::swap(held.slot, hedge_slot.slot);  // the attempt's backend is held's
  outcome = std::move(kept.outcome);
  if (winner >= 0) {
    client.watch.up = kept.attempt.up.get();
  }
  kept.attempt.hedge = result;
  co_return std::move(kept.attempt);
}

}  // namespace

upstream::TriedSet avoided_by_hedging(const RouteRuntime& route, std::int64_t now_ns) {
  upstream::TriedSet avoided = slower_than_peers(route, now_ns);
  for (const upstream::Backend* backend : route.backends)
    if (backend->avoided_until_ns.load(std::memory_order_relaxed) > now_ns) avoided.add(*backend);
  return avoided;
}

bool hedges(const RouteRuntime& route, std::string_view method, std::string_view path,
            const BodyFields& fields) {
  if (!route.cfg->hedge.enabled() || route.backends.size() < 2 || method != "POST" ||
      !fields.parsed)
    return false;
  // (vLLM sends a Messages stream's message_start with its first token, as it sends a chat
  // stream's first chunk: its first byte is its first token.)
  return path == "/v1/chat/completions" || path == "/v1/completions" || path == "/v1/messages" ||
         (path == "/v1/responses" && fields.store_false);
}

net::awaitable<Attempt> attempt_at(const Fleet& fleet, Worker& worker, const RouteRuntime& route,
                                   HeldSlot& held, upstream::TriedSet& tried, const Request& req,
                                   const BodyFields& fields, ClientConnection& client,
                                   const std::string& request_id, const UsageRequest& usage,
                                   bool queued, bool may_hedge, upstream::Outcome& outcome) {
  if (may_hedge && hedges(route, req.method_string(), req.path(), fields))
    return hedged_send(fleet, worker, route, held, tried, req, fields, client, request_id, usage,
                       queued, outcome);
  return send(fleet, worker, *held.slot.backend(), req, fields, client, request_id, usage, queued,
              outcome);
}

}  // namespace llmux::gateway
