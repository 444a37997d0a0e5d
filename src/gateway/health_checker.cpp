// SPDX-License-Identifier: Apache-2.0
#include "gateway/health_checker.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include "core/clock.hpp"
#include "gateway/worker.hpp"
#include "http/client.hpp"
#include "upstream/stall.hpp"

namespace llmux::gateway {
namespace {

/// One check: a fresh connection (so a full accept queue or a hung listener shows), GET path,
/// a 2xx within the timeout passes.
net::awaitable<std::pair<bool, std::string>> check_once(const upstream::Backend& backend,
                                                        const config::HealthChecks& checks) {
  http::Url url;
  url.host = backend.host;
  url.port = backend.port;
  url.tls = backend.tls != nullptr;
  http::ClientOptions opt;
  opt.mode = http::ConnectionMode::fresh;
  opt.tls = backend.tls;
  opt.tls_verify = backend.tls_verify;
  opt.timeouts.connect = checks.timeout;
  opt.timeouts.idle = checks.timeout;
  opt.timeouts.total = checks.timeout;
  http::Connection conn(co_await net::this_coro::executor, url, opt);
  http::RequestSpec req;
  req.method = "GET";
  req.target = checks.path;
  req.content_type = {};
  http::SimpleResponse response = co_await http::fetch(conn, req);
  if (response.result.failure != http::Failure::none)
    co_return std::pair{false, fmt::format("{}: {}", http::to_string(response.result.failure),
                                           response.result.message)};
  if (response.result.status < 200 || response.result.status > 299)
    co_return std::pair{false,
                        fmt::format("GET {} answered {}", checks.path, response.result.status)};
  co_return std::pair{true, std::string()};
}

}  // namespace

/// One backend's checks: the loop holds it; update() stops it by setting `stopped` and
/// cancelling its timer (a check in progress runs out its timeout and records nothing).
struct HealthChecker::Task {
  std::shared_ptr<upstream::Backend> backend;
  config::HealthChecks checks;
  std::string model;  // for probe generations: the backend's first model, asked once
  bool stopped = false;
  bool first = false;  // the backend is new: its first check's result is logged (its first state)
  net::steady_timer* timer = nullptr;
};

namespace {

constexpr auto kProbeTimeout = std::chrono::seconds(2);
constexpr int kProbeTokens = 16;

/// A short generation on a stalled backend (upstream/stall.hpp): 16 tokens, whatever the model
/// says, within 2 s. A hung engine fails it however healthy its /health looks.
net::awaitable<std::pair<bool, std::string>> probe_generation(HealthChecker::Task& task) {
  const upstream::Backend& backend = *task.backend;
  http::Url url;
  url.host = backend.host;
  url.port = backend.port;
  url.tls = backend.tls != nullptr;
  url.path = backend.base_path;
  http::ClientOptions opt;
  opt.mode = http::ConnectionMode::fresh;
  opt.tls = backend.tls;
  opt.tls_verify = backend.tls_verify;
  opt.timeouts.connect = kProbeTimeout;
  opt.timeouts.idle = kProbeTimeout;
  opt.timeouts.total = kProbeTimeout;
  std::vector<http::Header> headers;
  if (!backend.authorization.empty()) headers.push_back({"Authorization", backend.authorization});
  const auto executor = co_await net::this_coro::executor;
  if (task.model.empty()) {
    http::Connection conn(executor, url, opt);
    http::RequestSpec req;
    req.method = "GET";
    req.target = "/v1/models";
    req.content_type = {};
    req.headers = headers;
    http::SimpleResponse response = co_await http::fetch(conn, req);
    boost::system::error_code ec;
    const auto listing = boost::json::parse(response.body, ec);
    if (!ec && response.result.failure == http::Failure::none && response.result.status == 200 &&
        listing.is_object()) {
      const auto* data = listing.as_object().if_contains("data");
      if (data && data->is_array() && !data->as_array().empty() && data->as_array()[0].is_object())
        if (const auto* id = data->as_array()[0].as_object().if_contains("id");
            id && id->is_string())
          task.model = std::string(id->as_string());
    }
    if (task.model.empty())
      co_return std::pair{false, std::string("GET /v1/models named no model")};
  }
  http::Connection conn(executor, url, opt);
  const std::string body = boost::json::serialize(boost::json::object{{"model", task.model},
                                                                      {"prompt", "ping"},
                                                                      {"max_tokens", kProbeTokens},
                                                                      {"ignore_eos", true},
                                                                      {"temperature", 0}});
  http::RequestSpec req;
  req.target = "/v1/completions";
  req.body = body;
  req.headers = headers;
  const std::int64_t start = mono_ns();
  http::SimpleResponse response = co_await http::fetch(conn, req);
  if (response.result.failure != http::Failure::none)
    co_return std::pair{false, fmt::format("{}: {}", http::to_string(response.result.failure),
                                           response.result.message)};
  if (response.result.status < 200 || response.result.status > 299)
    co_return std::pair{false,
                        fmt::format("POST /v1/completions answered {}", response.result.status)};
  co_return std::pair{
      true, fmt::format("{} tokens in {} ms", kProbeTokens, (mono_ns() - start) / 1'000'000)};
}

net::awaitable<void> check_loop(std::shared_ptr<HealthChecker::Task> task, std::uint64_t seed) {
  const config::HealthChecks& checks = task->checks;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> spread(-checks.jitter, checks.jitter);
  net::steady_timer timer(co_await net::this_coro::executor);
  task->timer = &timer;
  struct Unhook {
    HealthChecker::Task& task;
    ~Unhook() { task.timer = nullptr; }
  } unhook{*task};
  upstream::CheckCounts counts;
  // The first check comes within one jittered fraction of the interval, so that checks of many
  // backends do not all start at once.
  auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(
      static_cast<double>(checks.interval.count()) * std::abs(spread(rng))));
  while (!task->stopped) {
    timer.expires_after(wait);
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec || task->stopped) co_return;
    auto [ok, why] = co_await check_once(*task->backend, checks);
    if (task->stopped) co_return;
    if (std::exchange(task->first, false)) {
      if (ok)
        spdlog::info("backend {} ({}): up (first health check passed)", task->backend->name,
                     task->backend->url);
      else
        spdlog::warn("backend {} ({}): down (first health check failed: {})", task->backend->name,
                     task->backend->url, why);
    }
    if (auto event = upstream::record_check(*task->backend, counts, ok, why,
                                            checks.healthy_threshold, checks.unhealthy_threshold))
      log_health_event(*event);
    if (ok && task->backend->stalled.load(std::memory_order_relaxed)) {
      // Out for the probe's time at least (its ejection may run out meanwhile): no trial request
      // goes to a backend whose probe has not passed.
      upstream::record_probe(*task->backend, false, mono_ns(), 2 * checks.interval + kProbeTimeout,
                             {});
      auto [passed, pwhy] = co_await probe_generation(*task);
      if (task->stopped) co_return;
      if (auto event = upstream::record_probe(*task->backend, passed, mono_ns(),
                                              2 * checks.interval + kProbeTimeout, pwhy))
        log_health_event(*event);
    }
    // A stalled backend is probed twice as often: it is back as soon as it generates again. A
    // failed check that has not yet taken the backend out is confirmed at once, so a dead or
    // hung machine is out within one interval plus `unhealthy_threshold` timeouts.
    double factor = 1.0;
    if (task->backend->stalled.load(std::memory_order_relaxed)) factor = 0.5;
    if (!ok && counts.fails < checks.unhealthy_threshold) factor = 0.0;
    const double interval = static_cast<double>(checks.interval.count()) * factor;
    wait = std::chrono::milliseconds(static_cast<std::int64_t>(interval * (1.0 + spread(rng))));
  }
}

}  // namespace

void log_health_event(const upstream::HealthEvent& event, std::string_view request_id) {
  using K = upstream::HealthEvent::Kind;
  const auto level = event.kind == K::ejected || event.kind == K::unhealthy ? spdlog::level::warn
                                                                            : spdlog::level::info;
  if (request_id.empty())
    spdlog::log(level, "{}", event.message);
  else
    spdlog::log(level, "request {}: {}", request_id, event.message);
}

HealthChecker::HealthChecker() : work_(net::make_work_guard(ioc_)) {}

HealthChecker::~HealthChecker() {
  stop();
}

void HealthChecker::start() {
  thread_ = std::thread([this] { ioc_.run(); });
}

void HealthChecker::update(const Fleet& fleet) {
  std::vector<std::shared_ptr<Task>> next;
  for (std::size_t i = 0; i < fleet.backends.size(); ++i) {
    auto task = std::make_shared<Task>();
    task->backend = fleet.backends[i];
    task->checks = fleet.cfg.backends[i].health;
    next.push_back(std::move(task));
  }
  std::vector<std::shared_ptr<ScrapeTask>> scrapes;
  if (fleet.cfg.backend_metrics.enabled)
    for (const auto& backend : fleet.backends)
      scrapes.push_back(
          std::make_shared<ScrapeTask>(ScrapeTask{backend, fleet.cfg.backend_metrics}));
  net::post(ioc_, [this, next = std::move(next), scrapes = std::move(scrapes)]() mutable {
    for (auto& task : tasks_) {
      task->stopped = true;
      if (task->timer) task->timer->cancel();
    }
    tasks_.clear();
    for (auto& scrape : scrapes_) {
      scrape->stopped = true;
      if (scrape->timer) scrape->timer->cancel();
    }
    scrapes_ = std::move(scrapes);
    for (auto& scrape : scrapes_) net::co_spawn(ioc_, scrape_loop(scrape), net::detached);
    std::random_device entropy;
    std::vector<const upstream::Backend*> seen;
    for (auto& task : next) {
      seen.push_back(task->backend.get());
      task->first = std::find(seen_.begin(), seen_.end(), task->backend.get()) == seen_.end();
      if (!task->checks.enabled) {
        if (task->first)
          spdlog::info("backend {} ({}): unchecked (health checks off)", task->backend->name,
                       task->backend->url);
        // No checks (now): nothing they said before keeps the backend out.
        task->backend->checks_ok.store(true, std::memory_order_relaxed);
        continue;
      }
      net::co_spawn(ioc_, check_loop(task, entropy()), net::detached);
      tasks_.push_back(std::move(task));
    }
    seen_ = std::move(seen);  // a backend a reload removed is new if it comes back
  });
}

void HealthChecker::stop() {
  work_.reset();
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
}

Readiness readiness(const Fleet& fleet, std::int64_t generation) {
  const std::int64_t now = mono_ns();
  boost::json::object body;
  boost::json::array backends;
  for (const auto& backend : fleet.backends) {
    boost::json::object entry;
    entry["name"] = backend->name;
    entry["state"] = upstream::state_name(*backend, now);
    entry["inflight"] = backend->inflight.load(std::memory_order_relaxed);
    const std::int64_t until = backend->ejected_until_ns.load(std::memory_order_relaxed);
    if (until > now) entry["ejected_for_ms"] = (until - now) / 1'000'000;
    entry["failures_in_a_row"] = backend->failures_in_a_row.load(std::memory_order_relaxed);
    backends.push_back(std::move(entry));
  }
  boost::json::array routes;
  bool ready = true;
  for (const auto& route : fleet.routes) {
    int backends_up = 0;
    for (const auto* backend : route.backends) backends_up += backend->usable(now) ? 1 : 0;
    if (backends_up == 0) ready = false;
    routes.push_back(boost::json::object{
        {"name", route.cfg->name}, {"backends_up", backends_up}, {"queued", route.queue->depth()}});
  }
  body["status"] = ready ? "ok" : "unavailable";
  body["config_generation"] = generation;
  body["routes"] = std::move(routes);
  body["backends"] = std::move(backends);
  return Readiness{ready ? 200 : 503, boost::json::serialize(body)};
}

std::string admin_backends(const Fleet& fleet) {
  const std::int64_t now = mono_ns();
  boost::json::array backends;
  for (std::size_t i = 0; i < fleet.backends.size(); ++i) {
    const auto& backend = *fleet.backends[i];
    boost::json::object entry;
    entry["name"] = backend.name;
    entry["url"] = backend.url;
    entry["state"] = upstream::state_name(backend, now);
    entry["inflight"] = backend.inflight.load(std::memory_order_relaxed);
    entry["outstanding_tokens"] = backend.outstanding_tokens.load(std::memory_order_relaxed);
    entry["weight"] = backend.weight.load(std::memory_order_relaxed);
    entry["max_inflight"] = backend.max_inflight.load(std::memory_order_relaxed);
    // Where a route that hedges times its streams (upstream/decode_pace.hpp), lately.
    if (const auto gap = backend.observations.pace.gap(now))
      entry["token_gap_ms"] = static_cast<double>(*gap) / 1e6;
    boost::json::array curve;
    for (const auto& level : backend.observations.capacity.levels())
      curve.push_back(boost::json::object{{"inflight", level.inflight},
                                          {"tokens_per_s_per_stream", level.tokens_per_s},
                                          {"samples", level.samples}});
    entry["capacity_curve"] = std::move(curve);
    if (!backend.observations.capacity.empty()) {
      boost::json::object predicted;
      for (int inflight : {1, 2, 4, 8, 16, 32})
        predicted[std::to_string(inflight)] =
            backend.observations.capacity.rate(inflight, 0.0) * inflight;
      entry["predicted_total_tokens_per_s"] = std::move(predicted);
    }
    backends.push_back(std::move(entry));
  }
  return boost::json::serialize(boost::json::object{{"config_generation", fleet.generation},
                                                    {"backends", std::move(backends)}});
}

}  // namespace llmux::gateway
