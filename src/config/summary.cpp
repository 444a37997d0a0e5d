// SPDX-License-Identifier: Apache-2.0
// describe(): a validated configuration in plain lines (summary.hpp).
#include "config/summary.hpp"

#include <fmt/format.h>

#include <iterator>
#include <utility>

#include "config/detail.hpp"

namespace llmux::config {
namespace {

using detail::host_port;

std::string route_line(const Route& route) {
  std::string out = fmt::format("  route {}: ", route.name);
  for (const auto& method : route.match.methods) out += method + " ";
  const RouteMatch& match = route.match;
  out +=
      match.path.empty() ? (match.path_prefix.empty() ? "*" : match.path_prefix + "*") : match.path;
  if (!match.models.empty()) out += fmt::format(" models {}", detail::join(match.models, ","));
  out += " -> " + route.policy;
  if (!route.policy_options.empty()) {
    std::vector<std::string> opts;
    for (const auto& [name, value] : route.policy_options) opts.push_back(name + "=" + value);
    out += " {" + detail::join(opts) + "}";
  }
  out += " over";
  for (const auto& backend : route.backends) out += " " + backend;
  if (route.hedge.after_p99 > 0)
    out += fmt::format(", hedged after {}x its first-token p99", route.hedge.after_p99);
  else if (route.hedge.after.count() > 0)
    out += fmt::format(", hedged after {}", format_duration(route.hedge.after));
  const Disaggregation& split = route.disaggregation;
  if (split.mode == Disaggregation::Mode::always)
    out += ", prefill on another backend first (disaggregation: always)";
  else if (split.mode == Disaggregation::Mode::automatic)
    out += fmt::format(
        ", prefill on another backend first for more than {} uncached prompt tokens "
        "(disaggregation: auto)",
        split.threshold_tokens);
  return out;
}

std::string health_line(const HealthChecks& checks) {
  if (!checks.enabled) return "off";
  return fmt::format(
      "GET {} every {} (jitter {}), timeout {}, healthy after {} pass{}, unhealthy after {} "
      "failure{}",
      checks.path, format_duration(checks.interval), checks.jitter, format_duration(checks.timeout),
      checks.healthy_threshold, checks.healthy_threshold == 1 ? "" : "es",
      checks.unhealthy_threshold, checks.unhealthy_threshold == 1 ? "" : "s");
}

}  // namespace

std::string format_duration(Millis duration) {
  if (duration.count() != 0 && duration.count() % 1000 == 0)
    return fmt::format("{}s", duration.count() / 1000);
  return fmt::format("{}ms", duration.count());
}

std::string format_size(std::uint64_t bytes) {
  constexpr std::pair<std::uint64_t, const char*> units[] = {
      {1ull << 40, "TiB"}, {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
  for (const auto& [size, name] : units)
    if (bytes != 0 && bytes % size == 0) return fmt::format("{}{}", bytes / size, name);
  return fmt::format("{}B", bytes);
}

std::string describe(const GatewayConfig& cfg, unsigned cores) {
  fmt::memory_buffer buffer;
  auto out = std::back_inserter(buffer);
  fmt::format_to(out, "configuration OK: {} backend{}, {} route{}\n", cfg.backends.size(),
                 cfg.backends.size() == 1 ? "" : "s", cfg.routes.size(),
                 cfg.routes.size() == 1 ? "" : "s");
  for (const auto& route : cfg.routes) fmt::format_to(out, "{}\n", route_line(route));

  std::vector<std::string> listen;
  for (const auto& listener : cfg.listeners)
    listen.push_back(host_port(listener) +
                     (listener.port == 0 ? " (a free port chosen at start)" : ""));
  fmt::format_to(out, "listen: {}\n", detail::join(listen));
  if (cfg.threads == 0)
    fmt::format_to(out, "threads: 0 (one per usable core: {} here)\n", cores);
  else
    fmt::format_to(out, "threads: {}\n", cfg.threads);

  fmt::format_to(out, "backends:\n");
  for (const auto& backend : cfg.backends) {
    fmt::format_to(
        out, "  {}: {} (weight {}, max_inflight {}, pool_idle_timeout {}{}{})\n", backend.name,
        backend.url, backend.weight,
        backend.max_inflight == 0 ? std::string("unlimited") : std::to_string(backend.max_inflight),
        format_duration(backend.pool_idle_timeout), backend.api_key.empty() ? "" : ", api_key set",
        backend.role == BackendRole::both ? std::string()
                                          : fmt::format(", role {}", to_string(backend.role)));
    fmt::format_to(out, "    health_checks: {}\n", health_line(backend.health));
  }

  const Timeouts& configured = cfg.timeouts;
  const std::pair<const char*, Millis> timeouts[] = {
      {"connect", configured.connect},
      {"first_byte", configured.first_byte},
      {"idle", configured.idle},
      {"client_header", configured.client_header},
      {"client_body", configured.client_body},
      {"client_idle", configured.client_idle},
      {"drain", configured.drain},
  };
  fmt::format_to(out, "timeouts:\n");
  for (const auto& [name, value] : timeouts)
    fmt::format_to(out, "  {}: {}\n", name, format_duration(value));

  fmt::format_to(out, "limits: max_body_bytes {}, max_header_bytes {}\n",
                 format_size(cfg.limits.max_body_bytes), format_size(cfg.limits.max_header_bytes));
  fmt::format_to(out, "access_log: {}\n", cfg.access_log.target);
  const OutlierDetection& outlier = cfg.outlier_detection;
  if (outlier.enabled)
    fmt::format_to(
        out, "outlier_detection: eject after {} failure{} in a row for {}, doubling up to {}\n",
        outlier.consecutive_failures, outlier.consecutive_failures == 1 ? "" : "s",
        format_duration(outlier.base_ejection), format_duration(outlier.max_ejection));
  if (outlier.enabled && outlier.stall_timeout.count() > 0)
    fmt::format_to(out, "stall detection: streams silent for {} (all flowing ones: {})\n",
                   format_duration(outlier.stall_timeout),
                   format_duration(outlier.stall_timeout / 2));
  else if (outlier.enabled)
    fmt::format_to(out, "stall detection: off\n");
  else
    fmt::format_to(out, "outlier_detection: off\n");
  if (cfg.affinity.enabled)
    fmt::format_to(out,
                   "affinity: response ids pinned to their backend (up to {} ids, {} each; "
                   "unknown ids asked for within {})\n",
                   cfg.affinity.max_entries, format_duration(cfg.affinity.ttl),
                   format_duration(cfg.affinity.lookup_timeout));
  else
    fmt::format_to(out, "affinity: off\n");
  if (cfg.state.redis()) {
    // The URL without its password, if any.
    std::string url = cfg.state.url;
    if (const auto at_sign = url.find('@'); at_sign != std::string::npos)
      url = "redis://…" + url.substr(at_sign);
    fmt::format_to(out,
                   "state: shared in Redis at {} (keys {}*; a request waits at most {} for it)\n",
                   url, cfg.state.prefix, format_duration(cfg.state.timeout));
  } else {
    fmt::format_to(out, "state: memory (this process)\n");
  }
  if (cfg.backend_metrics.enabled)
    fmt::format_to(out, "backend_metrics: {} every {} (stale after {})\n", cfg.backend_metrics.path,
                   format_duration(cfg.backend_metrics.interval),
                   format_duration(cfg.backend_metrics.stale_after));
  if (cfg.auth.enabled()) {
    const std::size_t key_count = cfg.auth.keys.size() + cfg.auth.file_keys.size();
    const std::string from_file =
        cfg.auth.keys_file.empty()
            ? ""
            : fmt::format(" ({} from {})", cfg.auth.file_keys.size(), cfg.auth.keys_file);
    fmt::format_to(
        out, "auth: {} key{}{}, usage kept {}h\n", key_count, key_count == 1 ? "" : "s", from_file,
        std::chrono::duration_cast<std::chrono::hours>(cfg.auth.usage_retention).count());
  }
  if (cfg.quotas.local_share)
    fmt::format_to(out, "quotas: local_share {} while the shared state is away\n",
                   *cfg.quotas.local_share);
  return fmt::to_string(buffer);
}

std::string listen_addresses(const std::vector<Listener>& listeners,
                             const std::vector<std::uint16_t>& ports) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < listeners.size(); ++i) {
    Listener listener = listeners[i];
    if (i < ports.size()) listener.port = ports[i];
    out.push_back(host_port(listener));
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

}  // namespace llmux::config
