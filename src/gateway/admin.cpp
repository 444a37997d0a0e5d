// SPDX-License-Identifier: Apache-2.0
#include "gateway/admin.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include "config/summary.hpp"
#include "core/openai_error.hpp"
#include "gateway/health_checker.hpp"
#include "gateway/metrics_render.hpp"

namespace llmux::gateway {

namespace {

constexpr std::string_view kPrefix = "/admin/";
constexpr std::string_view kBackends = "/admin/backends";

/// Compares without stopping at the first difference (the time taken says nothing of the token).
bool same_secret(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ (i < expected.size() ? expected[i] : 0));
  return diff == 0;
}

std::string_view bearer(std::string_view authorization) {
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() <= kScheme.size()) return {};
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(kScheme[i])))
      return {};
  return authorization.substr(kScheme.size());
}

/// A new backend from the JSON body of POST /admin/backends.
bool read_new_backend(const std::string& body, AdminChange& change, std::string& error) {
  boost::system::error_code ec;
  const auto parsed = boost::json::parse(body, ec);
  if (ec || !parsed.is_object()) {
    error = "The body must be a JSON object: {\"name\": ..., \"url\": ...}.";
    return false;
  }
  const auto& fields = parsed.get_object();
  for (const auto& [k, val] : fields) {
    const std::string_view key = k;
    if (key == "name" && val.is_string()) {
      change.add.name = std::string(val.get_string());
    } else if (key == "url" && val.is_string()) {
      change.add.url = std::string(val.get_string());
    } else if (key == "api_key" && val.is_string()) {
      change.add.api_key = std::string(val.get_string());
    } else if (key == "weight" && val.is_int64()) {
      change.add.weight = static_cast<int>(std::clamp<std::int64_t>(val.get_int64(), -1, 1000));
    } else if (key == "max_inflight" && val.is_int64()) {
      change.add.max_inflight =
          static_cast<int>(std::clamp<std::int64_t>(val.get_int64(), -1, 1 << 20));
    } else if (key == "routes" && val.is_array()) {
      for (const auto& route : val.get_array()) {
        if (!route.is_string()) {
          error = "'routes' must be a list of route names.";
          return false;
        }
        change.routes.emplace_back(route.get_string());
      }
    } else {
      error = fmt::format(
          "Unknown or mistyped field '{}' (known: name, url, weight, max_inflight, api_key, "
          "routes).",
          key);
      return false;
    }
  }
  if (change.add.name.empty() || change.add.url.empty()) {
    error = "'name' and 'url' are required.";
    return false;
  }
  change.backend = change.add.name;
  return true;
}

net::awaitable<void> run_change(GatewayState& state, ClientConnection& client, const Request& req,
                                AdminChange change, const std::string& request_id) {
  if (!state.control || !state.change_fleet) {
    co_await write_error(client, 503, "Run-time changes are not available in this process.", &req,
                         true, request_id);
    co_return;
  }
  change.by = client.peer;
  // On the control thread, as a reload; the answer comes back to this worker.
  auto [status, body] = co_await net::co_spawn(
      *state.control,
      [&state, &change]() -> net::awaitable<std::pair<int, std::string>> {
        int change_status = 200;
        std::string change_body = state.change_fleet(change, change_status);
        co_return std::make_pair(change_status, std::move(change_body));
      },
      net::use_awaitable);
  if (status >= 400)
    co_await write_error(client, status, body, &req, true, request_id);
  else
    co_await write_json(client, status, std::move(body), &req, request_id);
}

}  // namespace

bool is_admin_path(std::string_view path) {
  return path.starts_with(kPrefix) || path == "/admin";
}

std::string admin_backends_json(const GatewayState& state, const Fleet& fleet) {
  boost::system::error_code ec;
  auto listing = boost::json::parse(admin_backends(fleet), ec);
  if (ec || !listing.is_object()) return admin_backends(fleet);
  auto& arr = listing.get_object()["backends"].as_array();
  for (std::size_t i = 0; i < arr.size() && i < fleet.backends.size(); ++i) {
    const auto& backend = *fleet.backends[i];
    auto& entry = arr[i].as_object();
    const BackendTotals totals = backend_totals(state, backend.metric_id);
    entry["draining"] = backend.draining.load(std::memory_order_relaxed);
    entry["ejections"] = backend.ejections_total.load(std::memory_order_relaxed);
    entry["requests"] = totals.requests;
    entry["errors"] = totals.errors;
    entry["prompt_tokens"] = totals.prompt_tokens;
    entry["cached_tokens"] = totals.cached_tokens;
    entry["generation_tokens"] = totals.generation_tokens;
  }
  return boost::json::serialize(listing);
}

bool apply_change(const AdminChange& change, config::GatewayConfig& cfg, std::string& error,
                  int& status) {
  auto named = [&](const config::Backend& backend) { return backend.name == change.backend; };
  const bool exists = std::any_of(cfg.backends.begin(), cfg.backends.end(), named);
  if (change.kind == AdminChange::Kind::add) {
    if (exists) {
      status = 409;
      error = fmt::format("A backend named '{}' exists already.", change.backend);
      return false;
    }
    for (const auto& route_name : change.routes) {
      if (std::none_of(cfg.routes.begin(), cfg.routes.end(),
                       [&](const config::Route& route) { return route.name == route_name; })) {
        status = 400;
        error = fmt::format("No route named '{}'.", route_name);
        return false;
      }
    }
    config::Backend backend = change.add;
    backend.health_override = {};
    cfg.backends.push_back(std::move(backend));
    for (auto& route : cfg.routes)
      if (change.routes.empty() ||
          std::find(change.routes.begin(), change.routes.end(), route.name) != change.routes.end())
        route.backends.push_back(change.backend);
    return true;
  }
  if (!exists) {
    status = 404;
    error = fmt::format("No backend named '{}'.", change.backend);
    return false;
  }
  if (change.kind == AdminChange::Kind::remove) {
    for (auto& route : cfg.routes) {
      std::erase(route.backends, change.backend);
      if (route.backends.empty()) {
        status = 409;
        error = fmt::format(
            "Removing '{}' would leave route '{}' without a backend; add another first.",
            change.backend, route.name);
        return false;
      }
    }
    std::erase_if(cfg.backends, named);
  }
  return true;
}

namespace {

/// GET /admin/usage?key=&from=&to=[&format=csv]: the usage ledger's rows (auth/usage.hpp).
net::awaitable<void> usage_report(GatewayState& state, ClientConnection& client, const Request& req,
                                  const std::string& request_id) {
  auto url = boost::urls::parse_origin_form(req.target());
  if (!url) {
    co_await write_error(client, 400, "The request target is not a valid URL.", &req, true,
                         request_id);
    co_return;
  }
  std::string key, from, until, format;
  for (const auto& param : url->params()) {
    if (param.key == "key")
      key = param.value;
    else if (param.key == "from")
      from = param.value;
    else if (param.key == "to")
      until = param.value;
    else if (param.key == "format")
      format = param.value;
    else {
      co_await write_error(
          client, 400,
          fmt::format("Unknown parameter '{}': use key, from, to and format.", param.key), &req,
          true, request_id);
      co_return;
    }
  }
  if (!format.empty() && format != "json" && format != "csv") {
    co_await write_error(client, 400, "format must be json or csv.", &req, true, request_id);
    co_return;
  }
  std::string why;
  const auto query = auth::parse_usage_query(key, from, until, why);
  if (!query) {
    co_await write_error(client, 400, why, &req, true, request_id);
    co_return;
  }
  // Held in common by the replicas (Redis): every replica's rows; when Redis does not answer, this
  // replica's own, said to be partial.
  std::optional<std::vector<auth::UsageRow>> shared;
  if (state.usage_redis) shared = co_await state.usage_redis->query_shared(*query);
  const bool partial = state.usage_redis && !shared;
  const auto rows = shared ? std::move(*shared) : state.usage->query(*query);
  if (format == "csv")
    co_await write_content(client, 200, "text/csv; charset=utf-8", auth::usage_csv(rows), &req,
                           request_id,
                           partial ? ExtraHeader{"x-llmux-usage-partial", "true"} : ExtraHeader{});
  else
    co_await write_json(client, 200, auth::usage_json(rows, *query, partial), &req, request_id);
}

}  // namespace

net::awaitable<void> admin(GatewayState& state, const Fleet& fleet, ClientConnection& client,
                           const Request& req, std::string_view path,
                           const std::string& request_id) {
  const std::string& token = fleet.cfg.admin.token;
  if (token.empty()) {
    co_await write_error(client, 404,
                         "The admin API is off: set admin.token (or admin.token_file) in the "
                         "gateway's configuration to use it.",
                         &req, true, request_id);
    co_return;
  }
  if (!same_secret(bearer(req[bhttp::field::authorization]), token)) {
    co_await write_content(client, 401, "application/json",
                           openai_error_json(401,
                                             "Missing or wrong admin token: send "
                                             "'Authorization: Bearer <admin.token>'."),
                           &req, request_id, {"www-authenticate", "Bearer realm=\"llmux admin\""});
    co_return;
  }
  const auto method = req.method();
  if (path == "/admin/usage" && method == bhttp::verb::get) {
    co_await usage_report(state, client, req, request_id);
    co_return;
  }
  if (path == kBackends && method == bhttp::verb::get) {
    co_await write_json(client, 200, admin_backends_json(state, fleet), &req, request_id);
    co_return;
  }
  if (path == "/admin/config" && method == bhttp::verb::get) {
    boost::json::object answer{{"config_generation", fleet.generation},
                               {"summary", config::describe(fleet.cfg, 0)}};
    co_await write_json(client, 200, boost::json::serialize(answer), &req, request_id);
    co_return;
  }
  AdminChange change;
  if (path == kBackends && method == bhttp::verb::post) {
    change.kind = AdminChange::Kind::add;
    std::string error;
    if (!read_new_backend(req.body(), change, error)) {
      co_await write_error(client, 400, error, &req, true, request_id);
      co_return;
    }
    co_await run_change(state, client, req, std::move(change), request_id);
    co_return;
  }
  if (path.starts_with(kBackends) && path.size() > kBackends.size() + 1 &&
      path[kBackends.size()] == '/') {
    std::string_view rest = path.substr(kBackends.size() + 1);
    const auto slash = rest.find('/');
    const std::string_view name = rest.substr(0, slash);
    const std::string_view action = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    change.backend = std::string(name);
    bool known = true;
    if (action.empty() && method == bhttp::verb::delete_)
      change.kind = AdminChange::Kind::remove;
    else if (action == "drain" && method == bhttp::verb::post)
      change.kind = AdminChange::Kind::drain;
    else if (action == "undrain" && method == bhttp::verb::post)
      change.kind = AdminChange::Kind::undrain;
    else
      known = false;
    if (known) {
      co_await run_change(state, client, req, std::move(change), request_id);
      co_return;
    }
  }
  co_await write_error(client, 404,
                       fmt::format("No admin endpoint {} {} (see docs/operations.md).",
                                   std::string_view(req.method_string()), path),
                       &req, true, request_id);
}

}  // namespace llmux::gateway
