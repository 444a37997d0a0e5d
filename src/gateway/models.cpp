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
    key = fleet.keys.find(authorization);
    if (!key) {
      const auth::Decision d =
          authorization.empty() ? auth::KeyTable::missing_key() : auth::KeyTable::invalid_key();
      co_await write_json(client, d.status, d.body, &req, request_id);
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
  for (auto& bp : fleet.backends) {
    upstream::Backend& b = *bp;
    bhttp::request<bhttp::string_body> mreq{bhttp::verb::get, b.base_path + "/v1/models", 11};
    mreq.set(bhttp::field::host, b.host_header);
    if (!b.authorization.empty()) mreq.set(bhttp::field::authorization, b.authorization);
    mreq.keep_alive(true);
    bool ok = false;
    for (int round = 0; round < 2 && !ok; ++round) {
      auto conn = co_await connect(fleet, worker, b, round == 0);
      if (!conn.up) {
        errors.push_back(conn.outcome.message);
        break;
      }
      conn.up->dl.arm(std::chrono::seconds(10));
      auto [wec, wn] = co_await bhttp::async_write(conn.up->sock, mreq, use_tuple);
      if (wec) continue;
      bhttp::response_parser<bhttp::string_body> rp;
      rp.body_limit(8 << 20);
      auto [rec, rn] = co_await bhttp::async_read(conn.up->sock, conn.up->buf, rp, use_tuple);
      conn.up->dl.disarm();
      if (rec) {
        if (!conn.up->reused) errors.push_back(fmt::format("{}: {}", b.name, rec.message()));
        continue;
      }
      ok = true;
      const bool reusable = rp.keep_alive();  // complete, and not ended by close
      auto res = rp.release();
      boost::system::error_code jec;
      auto v = json::parse(res.body(), jec);
      if (!jec && v.is_object() && v.as_object().contains("data") && v.at("data").is_array()) {
        for (auto& m : v.at("data").as_array()) {
          if (!m.is_object() || !m.as_object().contains("id") || !m.at("id").is_string()) continue;
          std::string id(m.at("id").as_string());
          if (!allowed(id) || std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
          seen.push_back(id);
          data.push_back(m);
        }
      } else {
        errors.push_back(fmt::format("{}: invalid /v1/models body", b.name));
      }
      if (reusable) release(worker, b, std::move(conn.up));
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
