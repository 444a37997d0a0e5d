#include "gateway/health.hpp"

#include <chrono>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include "core/clock.hpp"
#include "gateway/worker.hpp"
#include "http/client.hpp"

namespace llmux::gateway {
namespace {

/// One check: a fresh connection (so a full accept queue or a hung listener shows), GET path,
/// a 2xx within the timeout passes.
net::awaitable<std::pair<bool, std::string>> check_once(const upstream::Backend& b,
                                                        const config::HealthChecks& h) {
  http::Url url;
  url.host = b.host;
  url.port = b.port;
  http::ClientOptions opt;
  opt.mode = http::ConnectionMode::fresh;
  opt.timeouts.connect = h.timeout;
  opt.timeouts.idle = h.timeout;
  opt.timeouts.total = h.timeout;
  http::Connection conn(co_await net::this_coro::executor, url, opt);
  http::RequestSpec req;
  req.method = "GET";
  req.target = h.path;
  req.content_type = {};
  http::SimpleResponse r = co_await http::fetch(conn, req);
  if (r.r.failure != http::Failure::none)
    co_return std::pair{false, fmt::format("{}: {}", http::to_string(r.r.failure), r.r.message)};
  if (r.r.status < 200 || r.r.status > 299)
    co_return std::pair{false, fmt::format("GET {} answered {}", h.path, r.r.status)};
  co_return std::pair{true, std::string()};
}

net::awaitable<void> check_loop(upstream::Backend& b, const config::HealthChecks& h,
                                std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> spread(-h.jitter, h.jitter);
  net::steady_timer timer(co_await net::this_coro::executor);
  upstream::CheckCounts counts;
  // The first check comes within one jittered fraction of the interval, so that checks of many
  // backends do not all start at once.
  auto wait = std::chrono::milliseconds(
      static_cast<std::int64_t>(static_cast<double>(h.interval.count()) * std::abs(spread(rng))));
  for (;;) {
    timer.expires_after(wait);
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec) co_return;
    auto [ok, why] = co_await check_once(b, h);
    if (auto ev =
            upstream::record_check(b, counts, ok, why, h.healthy_threshold, h.unhealthy_threshold))
      log_health_event(*ev);
    wait = std::chrono::milliseconds(
        static_cast<std::int64_t>(static_cast<double>(h.interval.count()) * (1.0 + spread(rng))));
  }
}

}  // namespace

void log_health_event(const upstream::HealthEvent& ev) {
  using K = upstream::HealthEvent::Kind;
  if (ev.kind == K::ejected || ev.kind == K::unhealthy)
    spdlog::warn("{}", ev.message);
  else
    spdlog::info("{}", ev.message);
}

HealthChecker::HealthChecker(std::vector<upstream::Backend*> backends,
                             std::vector<const config::HealthChecks*> settings)
    : backends_(std::move(backends)), settings_(std::move(settings)) {}

HealthChecker::~HealthChecker() {
  stop();
}

void HealthChecker::start() {
  std::random_device rd;
  bool any = false;
  for (std::size_t i = 0; i < backends_.size(); ++i) {
    if (!settings_[i]->enabled) continue;
    any = true;
    net::co_spawn(ioc_, check_loop(*backends_[i], *settings_[i], rd()), net::detached);
  }
  if (any) thread_ = std::thread([this] { ioc_.run(); });
}

void HealthChecker::stop() {
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
}

Readiness readiness(const Shared& s) {
  const std::int64_t now = mono_ns();
  boost::json::object body;
  boost::json::array backends;
  for (const auto& b : s.backends) {
    boost::json::object o;
    o["name"] = b->name;
    o["state"] = upstream::state_name(*b, now);
    o["inflight"] = b->inflight.load(std::memory_order_relaxed);
    const std::int64_t until = b->ejected_until_ns.load(std::memory_order_relaxed);
    if (until > now) o["ejected_for_ms"] = (until - now) / 1'000'000;
    o["failures_in_a_row"] = b->failures_in_a_row.load(std::memory_order_relaxed);
    backends.push_back(std::move(o));
  }
  boost::json::array routes;
  bool ready = true;
  for (const auto& r : s.routes) {
    int up = 0;
    for (const auto* b : r.backends) up += b->usable(now) ? 1 : 0;
    if (up == 0) ready = false;
    routes.push_back(boost::json::object{{"name", r.cfg->name}, {"backends_up", up}});
  }
  body["status"] = ready ? "ok" : "unavailable";
  body["routes"] = std::move(routes);
  body["backends"] = std::move(backends);
  return Readiness{ready ? 200 : 503, boost::json::serialize(body)};
}

}  // namespace llmux::gateway
