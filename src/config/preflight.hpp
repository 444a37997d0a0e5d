// SPDX-License-Identifier: Apache-2.0
#pragma once
// A validated configuration checked against this machine, as `llmux gateway` start-up would
// (src/gateway/listeners.cpp refuses to start on any of these), for `llmux gateway --check`:
//   - every backend's host resolves;
//   - the access log (a file path) can be opened for appending, or, when it does not exist yet,
//     its directory is writable. Nothing is created, truncated or written;
//   - every listen address can be bound: a probe bind without SO_REUSEPORT (as start-up's
//     port_taken_by_another()), so a port held by another process fails. Port 0 always passes.
// And, for `--check --probe`, what start-up does not check: each backend's health-check path and
// GET /v1/models, answered in time.
//
// Thread safety: every function is independent and may be called from any thread; they block
// (DNS, probe binds, HTTP with a timeout). probe_backends() runs one thread per backend.
#include <string>
#include <vector>

#include "config/config.hpp"

namespace llmux::config {

struct CheckResult {
  bool ok = true;
  std::string subject;  // what was checked: "backend server1", "listen 127.0.0.1:8080", ...
  std::string detail;   // what was found
  /// "subject: detail"
  std::string to_string() const { return subject + ": " + detail; }
};

/// The backend's host resolves (to at least one address), as start-up's resolver call.
CheckResult check_resolves(const Backend& backend);
/// "stdout" and "off" pass; a file path as described above.
CheckResult check_access_log(const std::string& target);
/// A probe bind of the listener's address and port (SO_REUSEADDR, not SO_REUSEPORT).
CheckResult check_listener(const Listener& listener);

/// Two results per backend, in the order of `backends`: GET <health path> (the resolved
/// health_checks.path, sent as the health checks send it: without the URL's base path) must
/// answer 2xx; GET <base path>/v1/models (with the backend's api_key, as the gateway sends it)
/// must answer 2xx with a model list, whose ids the detail names. Each request is bounded by
/// `timeout` (connect included); the backends are asked in parallel.
std::vector<CheckResult> probe_backends(const std::vector<const Backend*>& backends,
                                        Millis timeout);

}  // namespace llmux::config
