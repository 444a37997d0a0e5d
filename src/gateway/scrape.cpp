// SPDX-License-Identifier: Apache-2.0
#include "gateway/scrape.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/clock.hpp"
#include "gateway/worker.hpp"
#include "http/client.hpp"
#include "upstream/load_report.hpp"

namespace llmux::gateway {

namespace {

/// One reading: the report, or why there is none.
net::awaitable<std::optional<upstream::LoadReport>> read_once(
    const upstream::Backend& backend, const config::BackendMetrics& settings, std::string& why) {
  http::Url url;
  url.host = backend.host;
  url.port = backend.port;
  url.tls = backend.tls != nullptr;
  url.path = backend.base_path;
  http::ClientOptions opt;
  opt.mode = http::ConnectionMode::fresh;
  opt.tls = backend.tls;
  opt.tls_verify = backend.tls_verify;
  opt.timeouts.connect = settings.timeout;
  opt.timeouts.idle = settings.timeout;
  opt.timeouts.total = settings.timeout;
  http::Connection conn(co_await net::this_coro::executor, url, opt);
  http::RequestSpec req;
  req.method = "GET";
  req.target = settings.path;
  req.content_type = {};
  std::vector<http::Header> headers;
  if (!backend.authorization.empty()) headers.push_back({"Authorization", backend.authorization});
  req.headers = headers;
  http::SimpleResponse response = co_await http::fetch(conn, req);
  if (response.result.failure != http::Failure::none) {
    why = fmt::format("{}: {}", http::to_string(response.result.failure), response.result.message);
    co_return std::nullopt;
  }
  if (response.result.status != 200) {
    why = fmt::format("GET {} answered {}", settings.path, response.result.status);
    co_return std::nullopt;
  }
  std::string_view reason;
  auto report = upstream::parse_load_report(response.body, &reason);
  if (!report) why = std::string(reason);
  co_return report;
}

}  // namespace

net::awaitable<void> scrape_loop(std::shared_ptr<ScrapeTask> task) {
  net::steady_timer timer(co_await net::this_coro::executor);
  task->timer = &timer;
  struct Unhook {
    ScrapeTask& task;
    ~Unhook() { task.timer = nullptr; }
  } unhook{*task};
  bool failing = false;
  const std::int64_t stale_ns = std::chrono::nanoseconds(task->settings.stale_after).count();
  while (!task->stopped) {
    const auto started = std::chrono::steady_clock::now();
    std::string why;
    auto report = co_await read_once(*task->backend, task->settings, why);
    if (task->stopped) co_return;
    if (report) {
      upstream::store_report(*task->backend, *report, mono_ns(), stale_ns);
      if (failing)
        spdlog::info("backend {}: its metrics ({}) read again: {} running, {} waiting",
                     task->backend->name, task->settings.path, report->running, report->waiting);
      failing = false;
    } else if (!failing) {
      failing = true;
      spdlog::warn(
          "backend {}: its metrics ({}) cannot be read ({}); least_load counts it busy once its "
          "last report is {} old",
          task->backend->name, task->settings.path, why,
          task->settings.stale_after.count() >= 1000
              ? fmt::format("{} s", task->settings.stale_after.count() / 1000.0)
              : fmt::format("{} ms", task->settings.stale_after.count()));
    }
    timer.expires_at(started + task->settings.interval);
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec || task->stopped) co_return;
  }
}

}  // namespace llmux::gateway
