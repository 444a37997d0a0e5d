// SPDX-License-Identifier: Apache-2.0
#include "gateway/models.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/json.hpp>

#include "gateway/proxy.hpp"

namespace llmux::gateway {

namespace json = boost::json;

net::awaitable<void> models(const Fleet& fleet, Worker& worker, ClientConnection& client,
                            const Request& req, const std::string& request_id) {
  const auth::KeyEntry* key = nullptr;
  if (fleet.keys.enabled()) {
    const std::string_view authorization = req[bhttp::field::authorization];
    const std::string_view api_key = req["x-api-key"];
    key = fleet.keys.find(authorization, api_key);
    if (!key) {
      const auth::Decision decision = auth::presented_key(authorization, api_key)
                                          ? auth::KeyTable::invalid_key()
                                          : auth::KeyTable::missing_key();
      co_await write_json(client, decision.status, decision.body, &req, request_id);
      co_return;
    }
  }
  auto allowed = [key](const std::string& id) {
    return !key || key->models.empty() ||
           std::find(key->models.begin(), key->models.end(), id) != key->models.end();
  };
  json::array data;
  std::vector<std::string> seen;
  std::vector<std::string> errors;
  for (auto& backend_ptr : fleet.backends) {
    upstream::Backend& backend = *backend_ptr;
    bhttp::request<bhttp::string_body> mreq{bhttp::verb::get, backend.base_path + "/v1/models", 11};
    mreq.set(bhttp::field::host, backend.host_header);
    if (!backend.authorization.empty())
      mreq.set(bhttp::field::authorization, backend.authorization);
    mreq.keep_alive(true);
    bool ok = false;
    for (int round = 0; round < 2 && !ok; ++round) {
      upstream::Outcome failure;
      auto connection = co_await connect(fleet, worker, backend, round == 0, failure);
      if (!connection) {
        errors.push_back(failure.message);
        break;
      }
      connection->dl.arm(std::chrono::seconds(10));
      auto [wec, wn] = co_await bhttp::async_write(connection->sock, mreq, use_tuple);
      if (wec) continue;
      bhttp::response_parser<bhttp::string_body> parser;
      parser.body_limit(8 << 20);
      auto [rec, rn] =
          co_await bhttp::async_read(connection->sock, connection->buf, parser, use_tuple);
      connection->dl.disarm();
      if (rec) {
        if (!connection->reused)
          errors.push_back(fmt::format("{}: {}", backend.name, rec.message()));
        continue;
      }
      ok = true;
      const bool reusable = parser.keep_alive();  // complete, and not ended by close
      auto res = parser.release();
      boost::system::error_code jec;
      auto listing = json::parse(res.body(), jec);
      if (!jec && listing.is_object() && listing.as_object().contains("data") &&
          listing.at("data").is_array()) {
        for (auto& model : listing.at("data").as_array()) {
          if (!model.is_object() || !model.as_object().contains("id") ||
              !model.at("id").is_string())
            continue;
          std::string id(model.at("id").as_string());
          if (!allowed(id) || std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
          seen.push_back(id);
          data.push_back(model);
        }
      } else {
        errors.push_back(fmt::format("{}: invalid /v1/models body", backend.name));
      }
      if (reusable) release(worker, backend, std::move(connection));
    }
  }
  if (seen.empty() && !errors.empty()) {
    co_await write_error(client, 503,
                         fmt::format("No backend answered /v1/models: {}", fmt::join(errors, "; ")),
                         &req, true, request_id);
    co_return;
  }
  json::object body;
  body["object"] = "list";
  body["data"] = std::move(data);
  std::string text = json::serialize(body);
  co_await write_json(client, 200, std::move(text), &req, request_id);
}

}  // namespace llmux::gateway
