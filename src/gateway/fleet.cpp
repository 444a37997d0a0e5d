// SPDX-License-Identifier: Apache-2.0
#include "gateway/fleet.hpp"
#include "gateway/metrics.hpp"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace llmux::gateway {

int BackendSlots::take() {
  std::lock_guard lock(mu_);
  for (int i = 0; i < 64; ++i) {
    if (!(used_ & (1ull << i))) {
      used_ |= 1ull << i;
      return i;
    }
  }
  return -1;
}

void BackendSlots::give(int slot) {
  std::lock_guard lock(mu_);
  used_ &= ~(1ull << slot);
}

namespace {

std::atomic<std::uint64_t> next_uid{1};

/// The same machine, reached the same way: the backend object (and its state) is kept.
bool same_backend(const upstream::Backend& backend, const config::Backend& bc) {
  const std::string auth = bc.api_key.empty() ? std::string() : "Bearer " + bc.api_key;
  return backend.name == bc.name && backend.url == bc.url && backend.authorization == auth &&
         backend.pool_idle_timeout == bc.pool_idle_timeout &&
         backend.tls_ca_file == bc.tls.ca_file && backend.tls_verify == bc.tls.verify;
}

const config::Route* find_route(const config::GatewayConfig& cfg, const std::string& name) {
  for (const auto& r : cfg.routes)
    if (r.name == name) return &r;
  return nullptr;
}

bool same_match(const config::RouteMatch& left, const config::RouteMatch& right) {
  return left.path == right.path && left.path_prefix == right.path_prefix &&
         left.methods == right.methods && left.models == right.models;
}

/// One line per difference between `prev` and the new config, for the reload's log.
void describe_changes(const Fleet& prev, const config::GatewayConfig& next,
                      const std::vector<bool>& kept, std::vector<std::string>& out) {
  for (const auto& b : prev.backends) {
    const auto it = std::find_if(next.backends.begin(), next.backends.end(),
                                 [&](const auto& bc) { return bc.name == b->name; });
    if (it == next.backends.end()) {
      out.push_back(fmt::format("backend {} removed (running requests finish on it)", b->name));
    } else if (!same_backend(*b, *it)) {
      out.push_back(fmt::format("backend {} replaced ({} → {}; its state starts afresh)", b->name,
                                b->url, it->url));
    }
  }
  for (std::size_t i = 0; i < next.backends.size(); ++i) {
    const auto& bc = next.backends[i];
    const auto it = std::find_if(prev.backends.begin(), prev.backends.end(),
                                 [&](const auto& b) { return b->name == bc.name; });
    if (it == prev.backends.end()) {
      out.push_back(fmt::format("backend {} added ({})", bc.name, bc.url));
      continue;
    }
    if (!kept[i]) continue;
    const auto& b = **it;
    if (b.weight.load() != bc.weight)
      out.push_back(fmt::format("backend {}: weight {} → {}", bc.name, b.weight.load(), bc.weight));
    if (b.max_inflight.load() != bc.max_inflight)
      out.push_back(fmt::format("backend {}: max_inflight {} → {}", bc.name, b.max_inflight.load(),
                                bc.max_inflight));
  }
  for (const auto& r : prev.cfg.routes)
    if (!find_route(next, r.name)) out.push_back(fmt::format("route {} removed", r.name));
  for (const auto& r : next.routes) {
    const config::Route* old = find_route(prev.cfg, r.name);
    if (!old) {
      out.push_back(
          fmt::format("route {} added ({} → {})", r.name, r.policy, fmt::join(r.backends, ", ")));
      continue;
    }
    if (old->policy != r.policy || old->policy_options != r.policy_options)
      out.push_back(fmt::format("route {}: policy {} → {}", r.name, old->policy, r.policy));
    if (old->backends != r.backends)
      out.push_back(fmt::format("route {}: backends [{}] → [{}]", r.name,
                                fmt::join(old->backends, ", "), fmt::join(r.backends, ", ")));
    if (!same_match(old->match, r.match))
      out.push_back(fmt::format("route {}: match changed", r.name));
  }
  if (prev.cfg.routes.size() == next.routes.size()) {
    for (std::size_t i = 0; i < next.routes.size(); ++i) {
      if (prev.cfg.routes[i].name != next.routes[i].name) {
        out.push_back("route order changed");
        break;
      }
    }
  }
}

/// The policy of `route` in `previous` when it was the same policy with the same options (its
/// learned state may carry over), else null.
const policy::Policy* previous_policy(const Fleet& previous, const config::Route& route) {
  for (const RouteRuntime& before : previous.routes)
    if (before.cfg->name == route.name && before.cfg->policy == route.policy &&
        before.cfg->policy_options == route.policy_options)
      return before.policy.get();
  return nullptr;
}

}  // namespace

FleetBuild build_fleet(config::GatewayConfig cfg, const Fleet* prev,
                       const std::shared_ptr<BackendSlots>& slots) {
  FleetBuild out;
  auto f = std::make_shared<Fleet>();
  f->cfg = std::move(cfg);
  f->generation = prev ? prev->generation + 1 : 1;
  const auto& c = f->cfg;
  f->keys = auth::KeyTable(c.auth);

  // Backends: the ones kept first (no resolution), then the new ones.
  std::vector<bool> kept(c.backends.size(), false);
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::resolver resolver(ioc);
  for (std::size_t i = 0; i < c.backends.size(); ++i) {
    const auto& bc = c.backends[i];
    if (prev) {
      for (const auto& pb : prev->backends) {
        if (same_backend(*pb, bc)) {
          f->backends.push_back(pb);
          kept[i] = true;
          break;
        }
      }
      if (kept[i]) continue;
    }
    const int slot = slots->take();
    if (slot < 0) {
      out.errors.push_back(fmt::format(
          "backend {}: 64 backends are alive already (removed ones live until their last request "
          "ends); try again later",
          bc.name));
      return out;
    }
    std::shared_ptr<upstream::Backend> b(new upstream::Backend, [slots](upstream::Backend* p) {
      slots->give(p->index);
      delete p;
    });
    b->index = slot;
    b->uid = next_uid.fetch_add(1);
    b->name = bc.name;
    b->metric_id = metrics::names().backends.id(bc.name);
    b->url = bc.url;
    b->host = bc.host;
    b->port = bc.port;
    b->base_path = bc.base_path;
    b->pool_idle_timeout = bc.pool_idle_timeout;
    const bool default_port = bc.port == (bc.scheme == "https" ? 443 : 80);
    b->host_header = default_port ? bc.host : fmt::format("{}:{}", bc.host, bc.port);
    if (!bc.api_key.empty()) b->authorization = "Bearer " + bc.api_key;
    b->weight = bc.weight;
    b->max_inflight = bc.max_inflight;
    if (bc.scheme == "https") {
      std::string why;
      b->tls = http::make_client_context(bc.tls.ca_file, bc.tls.verify, why);
      b->tls_ca_file = bc.tls.ca_file;
      b->tls_verify = bc.tls.verify;
      if (!b->tls) {
        out.errors.push_back(fmt::format("backend {}: {}", bc.name, why));
        return out;
      }
    }
    boost::system::error_code ec;
    auto results = resolver.resolve(bc.host, std::to_string(bc.port), ec);
    if (ec) {
      out.errors.push_back(
          fmt::format("backend {}: cannot resolve '{}': {}", bc.name, bc.host, ec.message()));
      return out;
    }
    for (auto& r : results) b->endpoints.push_back(r.endpoint());
    f->backends.push_back(std::move(b));
  }

  for (const auto& l : c.listeners) {
    http::TlsContextPtr ctx;
    if (l.tls.enabled()) {
      std::string why;
      ctx = http::make_server_context(l.tls.cert, l.tls.key, why);
      if (!ctx) {
        out.errors.push_back(fmt::format("listen {}:{}: {}", l.address, l.port, why));
        return out;
      }
    }
    f->listener_tls.push_back(std::move(ctx));
  }

  const auto& od = c.outlier_detection;
  f->outlier = {od.enabled, od.consecutive_failures, od.base_ejection, od.max_ejection,
                od.stall_timeout};
  for (const auto& rc : c.routes) {
    RouteRuntime r;
    r.cfg = &rc;
    r.metric_id = metrics::names().routes.id(rc.name);
    r.retry_budget =
        std::make_unique<upstream::RetryBudget>(c.retries.budget, c.retries.min_retries_per_second);
    std::string why;
    r.policy = policy::make_policy(rc.policy, rc.policy_options, &why);
    if (!r.policy) {
      out.errors.push_back(fmt::format("route {}: {}", rc.name, why));
      return out;
    }
    r.queue = std::make_unique<AdmissionQueue>(c.queue.size, c.queue.timeout);
    for (const auto& name : rc.backends) {
      for (std::size_t i = 0; i < c.backends.size(); ++i) {
        if (c.backends[i].name != name) continue;
        r.backends.push_back(f->backends[i].get());
        f->queues_by_slot[static_cast<std::size_t>(f->backends[i]->index)].push_back(r.queue.get());
      }
    }
    f->routes.push_back(std::move(r));
  }

  // Committed: the backends kept take their new weights and limits, the dropped ones retire.
  if (prev) {
    describe_changes(*prev, c, kept, out.changes);
    for (std::size_t i = 0; i < c.backends.size(); ++i) {
      if (!kept[i]) continue;
      f->backends[i]->weight.store(c.backends[i].weight);
      f->backends[i]->max_inflight.store(c.backends[i].max_inflight);
    }
    for (const auto& pb : prev->backends) {
      if (std::find(f->backends.begin(), f->backends.end(), pb) == f->backends.end())
        pb->retired.store(true);
    }
  }
  // Each route's policy prepares for its backends, with what the same route's policy learned in
  // the configuration this one replaces when that was the same policy with the same options.
  for (RouteRuntime& route : f->routes)
    route.policy->build(route.backends, prev ? previous_policy(*prev, *route.cfg) : nullptr);
  out.fleet = std::move(f);
  return out;
}

std::vector<std::string> keep_restart_only(const config::GatewayConfig& running,
                                           config::GatewayConfig& next) {
  std::vector<std::string> out;
  auto listeners = [](const config::GatewayConfig& config) {
    std::vector<std::string> v;
    for (const auto& l : config.listeners)
      v.push_back(fmt::format("{}:{}{}", l.address, l.port, l.tls.enabled() ? " (tls)" : ""));
    return fmt::format("{}", fmt::join(v, ", "));
  };
  if (listeners(running) != listeners(next)) {
    out.push_back(fmt::format("listen: {} → {} needs a restart; still listening on {}",
                              listeners(running), listeners(next), listeners(running)));
    next.listeners = running.listeners;  // Fleet::listener_tls follows the sockets open
  }
  if (running.threads != next.threads)
    out.push_back(fmt::format("threads: {} → {} needs a restart; keeping {}", running.threads,
                              next.threads, running.threads));
  if (running.access_log.target != next.access_log.target)
    out.push_back(fmt::format("access_log: {} → {} needs a restart; still writing to {}",
                              running.access_log.target, next.access_log.target,
                              running.access_log.target));
  if (running.pid_file != next.pid_file)
    out.push_back(fmt::format("pid_file: '{}' → '{}' needs a restart; keeping '{}'",
                              running.pid_file, next.pid_file, running.pid_file));
  auto metrics_listen = [&](const config::GatewayConfig& config) {
    return config.metrics.listen.empty() ? std::string("(main listeners)")
                                         : fmt::format("{}:{}", config.metrics.listen[0].address,
                                                       config.metrics.listen[0].port);
  };
  if (metrics_listen(running) != metrics_listen(next))
    out.push_back(fmt::format("metrics.listen: {} → {} needs a restart; keeping {}",
                              metrics_listen(running), metrics_listen(next),
                              metrics_listen(running)));
  next.metrics.listen = running.metrics.listen;
  next.listeners = running.listeners;
  next.threads = running.threads;
  next.access_log = running.access_log;
  next.pid_file = running.pid_file;
  return out;
}

}  // namespace llmux::gateway
