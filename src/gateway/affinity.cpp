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
  explicit Ask(net::any_io_executor ex) : done(ex) {}
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
  http::SimpleResponse r = co_await http::fetch(conn, req);
  if (r.r.failure != http::Failure::none)
    ask->silent.push_back(
        fmt::format("{} ({}: {})", name, http::to_string(r.r.failure), r.r.message));
  else if (r.r.status == 200 && ask->found < 0)
    ask->found = index;
  else if (r.r.status >= 500)
    ask->silent.push_back(fmt::format("{} (answered {})", name, r.r.status));
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
  for (const char ch : id) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Pin error(int status, std::string message, std::string type = {}, int retry_after = 0) {
  Pin p;
  p.status = status;
  p.message = std::move(message);
  p.type = std::move(type);
  p.retry_after = retry_after;
  return p;
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
    for (upstream::Backend* b : route.backends) {
      if (b->name != *owner || b->retired.load(std::memory_order_relaxed)) continue;
      if (b->usable(now)) {
        Pin p;
        p.how = Pin::How::known;
        p.backend = b;
        co_return p;
      }
      co_return error(503,
                      fmt::format("Response '{}' is stored on backend '{}', which is unavailable "
                                  "now ({}); no other backend has it. Retry when '{}' is back.",
                                  id, b->name, upstream::state_name(*b, now), b->name),
                      {}, 5);
    }
    // Its owner is no longer one of this route's backends (a reload): ask those there are.
    store.forget(id);
  }
  // vLLM's ids are short ("resp_" and 32 hex digits); a very long one is nowhere.
  if (id.size() > kMaxIdBytes)
    co_return error(404, fmt::format("Response with id '{}...' not found.", id.substr(0, 64)),
                    "invalid_request_error");
  const auto ex = co_await net::this_coro::executor;
  auto ask = std::make_shared<Ask>(ex);
  const std::string target = "/v1/responses/" + percent_encode(id);
  for (std::size_t i = 0; i < route.backends.size(); ++i) {
    const upstream::Backend& b = *route.backends[i];
    if (b.retired.load(std::memory_order_relaxed)) continue;
    if (!b.usable(now)) {  // out (ejected, failing its checks): it may hold the id, not asked
      ask->silent.push_back(fmt::format("{} ({})", b.name, upstream::state_name(b, now)));
      continue;
    }
    http::Url url;
    url.host = b.host;
    url.port = b.port;
    url.tls = b.tls != nullptr;
    url.path = b.base_path;
    ++ask->pending;
    net::co_spawn(ex,
                  ask_one(ask, static_cast<int>(i), b.name, url, b.authorization, b.tls,
                          b.tls_verify, target, fleet.cfg.affinity.lookup_timeout),
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
    upstream::Backend* b = route.backends[static_cast<std::size_t>(ask->found)];
    store.learn(id, b->name);
    spdlog::debug("request {}: response {} found on {} by asking", request_id, id, b->name);
    Pin p;
    p.how = Pin::How::found;
    p.backend = b;
    co_return p;
  }
  if (!ask->silent.empty()) {
    std::string silent;
    for (const auto& s : ask->silent) silent += (silent.empty() ? "" : ", ") + s;
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
