// SPDX-License-Identifier: Apache-2.0
#include "sim/kv_params.hpp"

#include <boost/json.hpp>

#include <fmt/format.h>

#include "sim/input_items.hpp"

namespace llmux::sim {
namespace json = boost::json;

namespace {

bool truthy(const json::object& params, std::string_view key) {
  auto it = params.find(key);
  return it != params.end() && it->value().is_bool() && it->value().get_bool();
}

/// The handle's fields when complete (present and of their types), as the consumer needs them.
std::optional<RemoteHandle> handle_of(const json::object& params) {
  auto string_field = [&](std::string_view key) -> const json::string* {
    auto it = params.find(key);
    return it != params.end() && it->value().is_string() ? &it->value().get_string() : nullptr;
  };
  const json::string* request_id = string_field("remote_request_id");
  const json::string* engine_id = string_field("remote_engine_id");
  const json::string* host = string_field("remote_host");
  auto port = params.find("remote_port");
  auto blocks = params.find("remote_block_ids");
  if (!request_id || !engine_id || !host || port == params.end() || blocks == params.end())
    return std::nullopt;
  if (!port->value().is_int64() && !port->value().is_uint64()) return std::nullopt;
  // vLLM tests the block ids for truth: an empty list means nothing to read.
  if (!blocks->value().is_array() || blocks->value().get_array().empty()) return std::nullopt;
  RemoteHandle handle;
  handle.request_id = std::string(*request_id);
  handle.engine_id = std::string(*engine_id);
  handle.host = std::string(*host);
  handle.port = static_cast<int>(port->value().to_number<std::int64_t>());
  handle.block_ids = blocks->value();
  return handle;
}

}  // namespace

std::variant<std::optional<KvRequest>, ApiError> read_kv_request(std::string_view body) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec || !doc.is_object()) return std::optional<KvRequest>{};  // parse_request said why
  auto it = doc.get_object().find("kv_transfer_params");
  if (it == doc.get_object().end() || it->value().is_null()) return std::optional<KvRequest>{};
  if (!it->value().is_object()) {
    return bad_request(
        fmt::format("'kv_transfer_params' must be an object, got {}", json_kind_name(it->value())),
        std::string("kv_transfer_params"));
  }
  const json::object& params = it->value().get_object();
  KvRequest request;
  request.remote_decode = truthy(params, "do_remote_decode");
  request.remote_prefill = truthy(params, "do_remote_prefill");
  if (request.remote_prefill) request.handle = handle_of(params);
  return std::optional<KvRequest>{std::move(request)};
}

std::string producer_params_json(const ProducerHandle& handle) {
  // One list per KV cache group (vLLM's BlockIds with the hybrid allocator); the sim has one.
  json::object params;
  params["do_remote_prefill"] = true;
  params["do_remote_decode"] = false;
  params["remote_block_ids"] = json::array{json::value_from(handle.block_ids)};
  params["remote_engine_id"] = handle.engine_id;
  params["remote_request_id"] = handle.request_id;
  params["remote_host"] = handle.host;
  params["remote_port"] = handle.port;
  params["tp_size"] = handle.tp_size;
  return json::serialize(params);
}

std::string read_request_json(const RemoteHandle& handle) {
  return json::serialize(json::object{{"remote_request_id", handle.request_id},
                                      {"remote_engine_id", handle.engine_id},
                                      {"remote_host", handle.host},
                                      {"remote_port", handle.port},
                                      {"remote_block_ids", handle.block_ids}});
}

std::optional<RemoteHandle> parse_read_request(std::string_view body) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec || !doc.is_object()) return std::nullopt;
  return handle_of(doc.get_object());
}

}  // namespace llmux::sim
