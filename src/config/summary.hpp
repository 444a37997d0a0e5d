// SPDX-License-Identifier: Apache-2.0
#pragma once
// A validated configuration described for a person: what `llmux gateway --check` prints before
// its start-up checks. Plain lines; every duration with its unit, every default filled in.
//
// Pure functions of their arguments; thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace llmux::config {

/// "250ms", or "5s" when the duration is a whole number of seconds.
std::string format_duration(Millis duration);
/// "16MiB", "64KiB", "1GiB" when exact, else "1000B".
std::string format_size(std::uint64_t bytes);

/// The whole of `cfg` (validated: it reads the derived fields), one setting per line:
///
///   configuration OK: 2 backends, 3 routes
///     route chat: POST /v1/chat/completions -> round_robin over server1 server2
///   listen: 127.0.0.1:8080
///   threads: 0 (one per usable core: 16 here)
///   backends:
///     server1: http://127.0.0.1:30001 (weight 1, max_inflight unlimited, pool_idle_timeout 4s)
///       health_checks: GET /health every 2s (jitter 0.1), timeout 1s, healthy after 1 pass,
///       unhealthy after 2 failures                                          (one line)
///   timeouts:
///     connect: 5s
///     ...
///   limits: max_body_bytes 16MiB, max_header_bytes 64KiB
///   access_log: stdout
///   outlier_detection: eject after 3 failures in a row for 5s, doubling up to 60s
///
/// `cores` is what `threads: 0` means on this machine.
std::string describe(const GatewayConfig& cfg, unsigned cores);

/// The addresses the listeners were bound to, `ports[i]` being listener i's actual port (a
/// port 0 resolved): "127.0.0.1:8080, [::1]:8080". For the gateway's start-up log line.
std::string listen_addresses(const std::vector<Listener>& listeners,
                             const std::vector<std::uint16_t>& ports);

}  // namespace llmux::config
