// SPDX-License-Identifier: Apache-2.0
#pragma once
// The admin API (/admin/...): off unless admin.token is set; every call then carries
// `Authorization: Bearer <token>` (401 otherwise, compared in constant time).
//
//   GET    /admin/backends                 every backend: state, counters, learned capacity
//   POST   /admin/backends                 add one: {"name","url","weight"?,"max_inflight"?,
//                                          "api_key"?,"routes"?: [route names; default all]}
//   DELETE /admin/backends/{name}          remove one (its running requests finish)
//   POST   /admin/backends/{name}/drain    no new requests (except those pinned to a response
//                                          it holds); running ones go on
//   POST   /admin/backends/{name}/undrain
//   GET    /admin/config                   the configuration in use, and the run-time changes
//
// Changes are made on the gateway's control thread, one at a time, as a reload is (the running
// requests keep the configuration they started on); each is logged with who asked. They are
// run-time only: a reload (SIGHUP) replaces them and says in its log which it replaced.
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "config/config.hpp"
#include "gateway/client_connection.hpp"
#include "gateway/worker.hpp"

namespace llmux::gateway {

struct AdminChange {
  enum class Kind { drain, undrain, add, remove };
  Kind kind = Kind::drain;
  std::string backend;              // its name
  config::Backend add;              // Kind::add: the new backend (name, url, weight, ...)
  std::vector<std::string> routes;  // Kind::add: the routes it joins (empty: every route)
  std::string by;                   // the client that asked, for the log
};

/// True for the paths this API answers.
bool is_admin_path(std::string_view path);

/// Answers one /admin/... request.
net::awaitable<void> admin(GatewayState& state, const Fleet& fleet, ClientConnection& client,
                           const Request& req, std::string_view path,
                           const std::string& request_id);

/// The admin view of the backends (GET /admin/backends).
std::string admin_backends_json(const GatewayState& state, const Fleet& fleet);

/// Applies `change` to `cfg` (a copy of the configuration in use): false with `error` and the
/// HTTP status to answer when it cannot be made. The result still needs validate().
bool apply_change(const AdminChange& change, config::GatewayConfig& cfg, std::string& error,
                  int& status);

}  // namespace llmux::gateway
