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
net::awaitable<std::optional<upstream::LoadReport>> read_once(const upstream::Backend& b,
                                                              const config::BackendMetrics& m,
                                                              std::string& why) {
  http::Url url;
  url.host = b.host;
  url.port = b.port;
  url.tls = b.tls != nullptr;
  url.path = b.base_path;
  http::ClientOptions opt;
  opt.mode = http::ConnectionMode::fresh;
  opt.tls = b.tls;
  opt.tls_verify = b.tls_verify;
  opt.timeouts.connect = m.timeout;
  opt.timeouts.idle = m.timeout;
  opt.timeouts.total = m.timeout;
  http::Connection conn(co_await net::this_coro::executor, url, opt);
  http::RequestSpec req;
  req.method = "GET";
  req.target = m.path;
  req.content_type = {};
  std::vector<http::Header> headers;
  if (!b.authorization.empty()) headers.push_back({"Authorization", b.authorization});
  req.headers = headers;
  http::SimpleResponse r = co_await http::fetch(conn, req);
  if (r.r.failure != http::Failure::none) {
    why = fmt::format("{}: {}", http::to_string(r.r.failure), r.r.message);
    co_return std::nullopt;
  }
  if (r.r.status != 200) {
    why = fmt::format("GET {} answered {}", m.path, r.r.status);
    co_return std::nullopt;
  }
  std::string_view reason;
  auto report = upstream::parse_load_report(r.body, &reason);
  if (!report) why = std::string(reason);
  co_return report;
}

}  // namespace

net::awaitable<void> scrape_loop(std::shared_ptr<ScrapeTask> t) {
  net::steady_timer timer(co_await net::this_coro::executor);
  t->timer = &timer;
  struct Unhook {
    ScrapeTask& t;
    ~Unhook() { t.timer = nullptr; }
  } unhook{*t};
  bool failing = false;
  const std::int64_t stale_ns = std::chrono::nanoseconds(t->m.stale_after).count();
  while (!t->stopped) {
    const auto started = std::chrono::steady_clock::now();
    std::string why;
    auto report = co_await read_once(*t->b, t->m, why);
    if (t->stopped) co_return;
    if (report) {
      upstream::store_report(*t->b, *report, mono_ns(), stale_ns);
      if (failing)
        spdlog::info("backend {}: its metrics ({}) read again: {} running, {} waiting", t->b->name,
                     t->m.path, report->running, report->waiting);
      failing = false;
    } else if (!failing) {
      failing = true;
      spdlog::warn(
          "backend {}: its metrics ({}) cannot be read ({}); least_load counts it busy once its "
          "last report is {} old",
          t->b->name, t->m.path, why,
          t->m.stale_after.count() >= 1000 ? fmt::format("{} s", t->m.stale_after.count() / 1000.0)
                                           : fmt::format("{} ms", t->m.stale_after.count()));
    }
    timer.expires_at(started + t->m.interval);
    auto [ec] = co_await timer.async_wait(use_tuple);
    if (ec || t->stopped) co_return;
  }
}

}  // namespace llmux::gateway
