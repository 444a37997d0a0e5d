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

/// The order of each route's queue: the priority classes and the tenants' limit.
FairQueueRules queue_rules(const config::GatewayConfig& config) {
  FairQueueRules rules;
  rules.size = config.queue.size;
  rules.max_queued_per_tenant = config.tenants.max_queued;
  rules.promote_after_ns.clear();
  for (const auto& rule : config.priorities.classes)
    rules.promote_after_ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(rule.promote_after).count());
  return rules;
}

std::atomic<std::uint64_t> next_uid{1};

/// The same machine, reached the same way: the backend object (and its state) is kept.
bool same_backend(const upstream::Backend& backend, const config::Backend& configured) {
  const std::string auth =
      configured.api_key.empty() ? std::string() : "Bearer " + configured.api_key;
  return backend.name == configured.name && backend.url == configured.url &&
         backend.authorization == auth &&
         backend.pool_idle_timeout == configured.pool_idle_timeout &&
         backend.tls_ca_file == configured.tls.ca_file &&
         backend.tls_verify == configured.tls.verify;
}

const config::Route* find_route(const config::GatewayConfig& cfg, const std::string& name) {
  for (const auto& route : cfg.routes)
    if (route.name == name) return &route;
  return nullptr;
}

bool same_match(const config::RouteMatch& left, const config::RouteMatch& right) {
  return left.path == right.path && left.path_prefix == right.path_prefix &&
         left.methods == right.methods && left.models == right.models;
}

/// One line per difference between `prev` and the new config, for the reload's log.
void describe_changes(const Fleet& prev, const config::GatewayConfig& next,
                      const std::vector<bool>& kept, std::vector<std::string>& out) {
  for (const auto& backend : prev.backends) {
    const auto it =
        std::find_if(next.backends.begin(), next.backends.end(),
                     [&](const auto& configured) { return configured.name == backend->name; });
    if (it == next.backends.end()) {
      out.push_back(
          fmt::format("backend {} removed (running requests finish on it)", backend->name));
    } else if (!same_backend(*backend, *it)) {
      out.push_back(fmt::format("backend {} replaced ({} → {}; its state starts afresh)",
                                backend->name, backend->url, it->url));
    }
  }
  for (std::size_t i = 0; i < next.backends.size(); ++i) {
    const auto& configured = next.backends[i];
    const auto it =
        std::find_if(prev.backends.begin(), prev.backends.end(),
                     [&](const auto& backend) { return backend->name == configured.name; });
    if (it == prev.backends.end()) {
      out.push_back(fmt::format("backend {} added ({})", configured.name, configured.url));
      continue;
    }
    if (!kept[i]) continue;
    const auto& backend = **it;
    if (backend.weight.load() != configured.weight)
      out.push_back(fmt::format("backend {}: weight {} → {}", configured.name,
                                backend.weight.load(), configured.weight));
    if (backend.max_inflight.load() != configured.max_inflight)
      out.push_back(fmt::format("backend {}: max_inflight {} → {}", configured.name,
                                backend.max_inflight.load(), configured.max_inflight));
  }
  for (const auto& route : prev.cfg.routes)
    if (!find_route(next, route.name)) out.push_back(fmt::format("route {} removed", route.name));
  for (const auto& route : next.routes) {
    const config::Route* old = find_route(prev.cfg, route.name);
    if (!old) {
      out.push_back(fmt::format("route {} added ({} → {})", route.name, route.policy,
                                fmt::join(route.backends, ", ")));
      continue;
    }
    if (old->policy != route.policy || old->policy_options != route.policy_options)
      out.push_back(fmt::format("route {}: policy {} → {}", route.name, old->policy, route.policy));
    if (old->backends != route.backends)
      out.push_back(fmt::format("route {}: backends [{}] → [{}]", route.name,
                                fmt::join(old->backends, ", "), fmt::join(route.backends, ", ")));
    if (!same_match(old->match, route.match))
      out.push_back(fmt::format("route {}: match changed", route.name));
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

namespace {

/// A route hedged after a multiple of its p99: each backend's learned times, those of a backend
/// the same route had before a reload kept.
void keep_first_token_times(const Fleet* prev, RouteRuntime& route) {
  for (const upstream::Backend* backend : route.backends) {
    std::shared_ptr<upstream::FirstTokenTimes> kept;
    if (prev)
      for (const RouteRuntime& before : prev->routes) {
        if (before.cfg->name != route.cfg->name) continue;
        for (std::size_t i = 0; i < before.backends.size() && i < before.first_token_times.size();
             ++i)
          if (before.backends[i] == backend) kept = before.first_token_times[i];
      }
    route.first_token_times.push_back(kept ? std::move(kept)
                                           : std::make_shared<upstream::FirstTokenTimes>());
  }
}

}  // namespace

FleetBuild build_fleet(config::GatewayConfig cfg, const Fleet* prev,
                       const std::shared_ptr<BackendSlots>& slots) {
  FleetBuild out;
  auto fleet = std::make_shared<Fleet>();
  fleet->cfg = std::move(cfg);
  fleet->generation = prev ? prev->generation + 1 : 1;
  const auto& config = fleet->cfg;
  fleet->keys = auth::KeyTable(config.auth);

  // Backends: the ones kept first (no resolution), then the new ones.
  std::vector<bool> kept(config.backends.size(), false);
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::resolver resolver(ioc);
  for (std::size_t i = 0; i < config.backends.size(); ++i) {
    const auto& configured = config.backends[i];
    if (prev) {
      for (const auto& old_backend : prev->backends) {
        if (same_backend(*old_backend, configured)) {
          fleet->backends.push_back(old_backend);
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
          configured.name));
      return out;
    }
    std::shared_ptr<upstream::Backend> backend(new upstream::Backend,
                                               [slots](upstream::Backend* released) {
                                                 slots->give(released->index);
                                                 delete released;
                                               });
    backend->index = slot;
    backend->uid = next_uid.fetch_add(1);
    backend->name = configured.name;
    backend->metric_id = metrics::names().backends.id(configured.name);
    backend->url = configured.url;
    backend->host = configured.host;
    backend->port = configured.port;
    backend->base_path = configured.base_path;
    backend->pool_idle_timeout = configured.pool_idle_timeout;
    const bool default_port = configured.port == (configured.scheme == "https" ? 443 : 80);
    backend->host_header =
        default_port ? configured.host : fmt::format("{}:{}", configured.host, configured.port);
    if (!configured.api_key.empty()) backend->authorization = "Bearer " + configured.api_key;
    backend->weight = configured.weight;
    backend->max_inflight = configured.max_inflight;
    backend->send_priority = configured.send_priority;
    if (configured.scheme == "https") {
      std::string why;
      backend->tls = http::make_client_context(configured.tls.ca_file, configured.tls.verify, why);
      backend->tls_ca_file = configured.tls.ca_file;
      backend->tls_verify = configured.tls.verify;
      if (!backend->tls) {
        out.errors.push_back(fmt::format("backend {}: {}", configured.name, why));
        return out;
      }
    }
    boost::system::error_code ec;
    auto results = resolver.resolve(configured.host, std::to_string(configured.port), ec);
    if (ec) {
      out.errors.push_back(fmt::format("backend {}: cannot resolve '{}': {}", configured.name,
                                       configured.host, ec.message()));
      return out;
    }
    for (auto& entry : results) backend->endpoints.push_back(entry.endpoint());
    fleet->backends.push_back(std::move(backend));
  }

  for (const auto& listener : config.listeners) {
    http::TlsContextPtr ctx;
    if (listener.tls.enabled()) {
      std::string why;
      ctx = http::make_server_context(listener.tls.cert, listener.tls.key, why);
      if (!ctx) {
        out.errors.push_back(fmt::format("listen {}:{}: {}", listener.address, listener.port, why));
        return out;
      }
    }
    fleet->listener_tls.push_back(std::move(ctx));
  }

  const auto& detection = config.outlier_detection;
  fleet->outlier = {detection.enabled, detection.consecutive_failures, detection.base_ejection,
                    detection.max_ejection, detection.stall_timeout};
  for (const auto& configured_route : config.routes) {
    RouteRuntime route;
    route.cfg = &configured_route;
    route.metric_id = metrics::names().routes.id(configured_route.name);
    route.retry_budget = std::make_unique<upstream::RetryBudget>(
        config.retries.budget, config.retries.min_retries_per_second);
    std::string why;
    route.policy =
        policy::make_policy(configured_route.policy, configured_route.policy_options, &why);
    if (!route.policy) {
      out.errors.push_back(fmt::format("route {}: {}", configured_route.name, why));
      return out;
    }
    route.queue = std::make_unique<AdmissionQueue>(queue_rules(config), config.queue.timeout);

    for (const auto& name : configured_route.backends) {
      for (std::size_t i = 0; i < config.backends.size(); ++i) {
        if (config.backends[i].name != name) continue;
        route.backends.push_back(fleet->backends[i].get());
        if (config.backends[i].role == config::BackendRole::prefill)
          route.prefill_only.add(*fleet->backends[i]);
        if (config.backends[i].role != config::BackendRole::decode)
          route.prefillers.push_back(fleet->backends[i].get());
        fleet->queues_by_slot[static_cast<std::size_t>(fleet->backends[i]->index)].push_back(
            route.queue.get());
      }
    }
    if (configured_route.hedge.after_p99 > 0) keep_first_token_times(prev, route);
    fleet->routes.push_back(std::move(route));
  }

  // Committed: the backends kept take their new weights and limits, the dropped ones retire.
  if (prev) {
    describe_changes(*prev, config, kept, out.changes);
    for (std::size_t i = 0; i < config.backends.size(); ++i) {
      if (!kept[i]) continue;
      fleet->backends[i]->weight.store(config.backends[i].weight);
      fleet->backends[i]->max_inflight.store(config.backends[i].max_inflight);
      fleet->backends[i]->send_priority.store(config.backends[i].send_priority);
    }
    for (const auto& old_backend : prev->backends) {
      if (std::find(fleet->backends.begin(), fleet->backends.end(), old_backend) ==
          fleet->backends.end())
        old_backend->retired.store(true);
    }
  }
  // The relay times the tokens of the backends a route that hedges compares (gateway/hedge.hpp).
  for (const auto& backend : fleet->backends) {
    bool hedged = false;
    for (const RouteRuntime& route : fleet->routes)
      hedged = hedged || (route.cfg->hedge.enabled() &&
                          std::find(route.backends.begin(), route.backends.end(), backend.get()) !=
                              route.backends.end());
    backend->observations.pace.watch(hedged);
  }
  // Each route's policy prepares for its backends, with what the same route's policy learned in
  // the configuration this one replaces when that was the same policy with the same options.
  for (RouteRuntime& route : fleet->routes)
    route.policy->build(route.backends, prev ? previous_policy(*prev, *route.cfg) : nullptr);
  out.fleet = std::move(fleet);
  return out;
}

std::vector<std::string> keep_restart_only(const config::GatewayConfig& running,
                                           config::GatewayConfig& next) {
  std::vector<std::string> out;
  auto listeners = [](const config::GatewayConfig& config) {
    std::vector<std::string> addresses;
    for (const auto& listener : config.listeners)
      addresses.push_back(fmt::format("{}:{}{}", listener.address, listener.port,
                                      listener.tls.enabled() ? " (tls)" : ""));
    return fmt::format("{}", fmt::join(addresses, ", "));
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
