// SPDX-License-Identifier: Apache-2.0
#include "gateway/affinity.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>

#include "core/clock.hpp"
#include "http/client.hpp"
#include "upstream/health.hpp"

namespace llmux::gateway {

namespace {

constexpr std::string_view kResponses = "/v1/responses";

/// The {id} of /v1/responses/{id}[/...] ("" for other paths).
std::string_view path_id(std::string_view path) {
  if (!path.starts_with(kResponses) || path.size() <= kResponses.size() + 1 ||
      path[kResponses.size()] != '/')
    return {};
  std::string_view rest = path.substr(kResponses.size() + 1);
  return rest.substr(0, rest.find('/'));
}

/// What asking the backends found, shared by the asks (all on the worker's thread).
struct Ask {
  explicit Ask(net::any_io_executor executor) : done(executor) {}
  int pending = 0;
  int found = -1;                    // index into the route's backends
  std::vector<std::string> silent;   // "server2 (connect failed: ...)"
  std::vector<std::string> without;  // backends that answered "not here"
  net::steady_timer done;            // cancelled when the answer is known
};

/// GET /v1/responses/{id} on one backend; copies what it needs of the backend (the request may
/// have ended before the ask does).
net::awaitable<void> ask_one(std::shared_ptr<Ask> ask, int index, std::string name, http::Url url,
                             std::string authorization, http::TlsContextPtr tls, bool tls_verify,
                             std::string target, std::chrono::milliseconds timeout) {
  http::ClientOptions opt;
  opt.tls = std::move(tls);
  opt.tls_verify = tls_verify;
  opt.mode = http::ConnectionMode::fresh;
  opt.timeouts.connect = timeout;
  opt.timeouts.idle = timeout;
  opt.timeouts.total = timeout;
  http::Connection conn(co_await net::this_coro::executor, url, opt);
  http::RequestSpec req;
  req.method = "GET";
  req.target = target;
  req.content_type = {};
  std::vector<http::Header> headers;
  if (!authorization.empty()) headers.push_back({"Authorization", authorization});
  req.headers = headers;
  http::SimpleResponse response = co_await http::fetch(conn, req);
  if (response.result.failure != http::Failure::none)
    ask->silent.push_back(fmt::format("{} ({}: {})", name, http::to_string(response.result.failure),
                                      response.result.message));
  else if (response.result.status == 200 && ask->found < 0)
    ask->found = index;
  else if (response.result.status >= 500)
    ask->silent.push_back(fmt::format("{} (answered {})", name, response.result.status));
  else
    ask->without.push_back(name);
  if (--ask->pending == 0 || ask->found >= 0) ask->done.cancel();
}

constexpr std::size_t kMaxIdBytes = 512;

/// `id` as one path segment: unreserved characters as they are, every other byte %XX (an id
/// from a request body may hold anything, CR and LF included).
std::string percent_encode(std::string_view id) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(id.size());
  for (const char character : id) {
    const auto byte = static_cast<unsigned char>(character);
    if ((byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') ||
        (byte >= 'A' && byte <= 'Z') || byte == '-' || byte == '_' || byte == '.' || byte == '~') {
      out.push_back(character);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 15]);
    }
  }
  return out;
}

Pin error(int status, std::string message, std::string type = {}, int retry_after = 0) {
  Pin pin;
  pin.status = status;
  pin.message = std::move(message);
  pin.type = std::move(type);
  pin.retry_after = retry_after;
  return pin;
}

}  // namespace

std::string_view named_response_id(std::string_view path, const BodyFields& fields) {
  if (auto id = path_id(path); !id.empty()) return id;
  if (path == kResponses) return fields.previous_response_id;
  return {};
}

bool learns_response_id(std::string_view method, std::string_view path, const BodyFields& fields) {
  if (method == "POST" && path == kResponses) return !fields.store_false;
  return method == "GET" && !path_id(path).empty() &&
         path.size() == kResponses.size() + 1 + path_id(path).size();
}

net::awaitable<Pin> find_owner(state::ResponseStore& store, const Fleet& fleet,
                               const RouteRuntime& route, std::string_view id,
                               std::string_view request_id) {
  const std::int64_t now = mono_ns();
  if (auto owner = co_await store.owner(id)) {
    for (upstream::Backend* backend : route.backends) {
      if (backend->name != *owner || backend->retired.load(std::memory_order_relaxed)) continue;
      if (backend->usable(now)) {
        Pin pin;
        pin.how = Pin::How::known;
        pin.backend = backend;
        co_return pin;
      }
      co_return error(
          503,
          fmt::format("Response '{}' is stored on backend '{}', which is unavailable "
                      "now ({}); no other backend has it. Retry when '{}' is back.",
                      id, backend->name, upstream::state_name(*backend, now), backend->name),
          {}, 5);
    }
    // Its owner is no longer one of this route's backends (a reload): ask those there are.
    store.forget(id);
  }
  // vLLM's ids are short ("resp_" and 32 hex digits); a very long one is nowhere.
  if (id.size() > kMaxIdBytes)
    co_return error(404, fmt::format("Response with id '{}...' not found.", id.substr(0, 64)),
                    "invalid_request_error");
  const auto executor = co_await net::this_coro::executor;
  auto ask = std::make_shared<Ask>(executor);
  const std::string target = "/v1/responses/" + percent_encode(id);
  for (std::size_t i = 0; i < route.backends.size(); ++i) {
    const upstream::Backend& backend = *route.backends[i];
    if (backend.retired.load(std::memory_order_relaxed)) continue;
    if (!backend.usable(now)) {  // out (ejected, failing its checks): it may hold the id, not asked
      ask->silent.push_back(
          fmt::format("{} ({})", backend.name, upstream::state_name(backend, now)));
      continue;
    }
    http::Url url;
    url.host = backend.host;
    url.port = backend.port;
    url.tls = backend.tls != nullptr;
    url.path = backend.base_path;
    ++ask->pending;
    net::co_spawn(
        executor,
        ask_one(ask, static_cast<int>(i), backend.name, url, backend.authorization, backend.tls,
                backend.tls_verify, target, fleet.cfg.affinity.lookup_timeout),
        net::detached);
  }
  // The asks cancel the timer when the answer is known (they run on this thread, so none can
  // finish between the check and the wait); it runs out only if they hang.
  const auto deadline = std::chrono::steady_clock::now() + fleet.cfg.affinity.lookup_timeout +
                        std::chrono::milliseconds(500);
  while (ask->pending > 0 && ask->found < 0 && std::chrono::steady_clock::now() < deadline) {
    ask->done.expires_at(deadline);
    co_await ask->done.async_wait(use_tuple);
  }
  if (ask->found >= 0) {
    upstream::Backend* backend = route.backends[static_cast<std::size_t>(ask->found)];
    store.record_owner(id, backend->name);
    spdlog::debug("request {}: response {} found on {} by asking", request_id, id, backend->name);
    Pin pin;
    pin.how = Pin::How::found;
    pin.backend = backend;
    co_return pin;
  }
  if (!ask->silent.empty()) {
    std::string silent;
    for (const auto& entry : ask->silent) silent += (silent.empty() ? "" : ", ") + entry;
    co_return error(
        503,
        fmt::format("Response '{}' is not known to this gateway and was not found on the backends "
                    "that answered; {} did not answer and may hold it. Retry later.",
                    id, silent),
        {}, 2);
  }
  // vLLM's own answer for an id it does not have.
  co_return error(404, fmt::format("Response with id '{}' not found.", id),
                  "invalid_request_error");
}

}  // namespace llmux::gateway
