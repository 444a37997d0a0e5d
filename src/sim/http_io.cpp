// SPDX-License-Identifier: Apache-2.0
#include "sim/http_io.hpp"

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include "core/openai_error.hpp"
#include "core/use_tuple.hpp"
#include "sim/messages_frames.hpp"

namespace llmux::sim {

namespace net = boost::asio;
namespace http = boost::beast::http;
using core::use_tuple;
using net::awaitable;

awaitable<void> write_body(Conn& connection, int status, std::string body,
                           std::string_view content_type, const Request* req) {
  http::response<http::string_body> res{static_cast<http::status>(status),
                                        req ? req->version() : 11};
  common_headers(res, req);
  res.set(http::field::content_type, content_type);
  res.keep_alive(connection.keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  auto [ec, n] = co_await http::async_write(connection.stream, res, use_tuple);
  if (ec) connection.keep_alive = false;
}

namespace {
awaitable<void> write_detail(Conn& connection, int status, std::string_view detail,
                             const Request& req, std::string_view allow) {
  http::response<http::string_body> res{static_cast<http::status>(status), req.version()};
  common_headers(res, &req);
  res.set(http::field::content_type, "application/json");
  if (!allow.empty()) res.set(http::field::allow, allow);
  res.keep_alive(connection.keep_alive);
  res.body() = fmt::format(R"({{"detail":"{}"}})", detail);
  res.prepare_payload();
  auto [ec, n] = co_await http::async_write(connection.stream, res, use_tuple);
  if (ec) connection.keep_alive = false;
}
}  // namespace

awaitable<void> write_not_found(Conn& connection, const Request& req) {
  co_await write_detail(connection, 404, "Not Found", req, {});
}

awaitable<void> write_method_not_allowed(Conn& connection, const Request& req,
                                         std::string_view allow) {
  co_await write_detail(connection, 405, "Method Not Allowed", req, allow);
}

awaitable<void> write_json(Conn& connection, int status, std::string body, const Request* req) {
  co_await write_body(connection, status, std::move(body), "application/json", req);
}

awaitable<void> write_error(Conn& connection, int status, std::string_view message, bool keep,
                            const Request* req, std::string_view type,
                            std::optional<std::string_view> param) {
  if (!keep) connection.keep_alive = false;
  co_await write_json(connection, status, openai_error_json(status, message, type, param), req);
}

awaitable<void> write_api_error(Conn& connection, const ApiError& error, const Request& req) {
  if (error.anthropic) {
    const std::string_view type =
        error.type.empty() ? error_type_for_status(error.status) : std::string_view(error.type);
    co_return co_await write_json(connection, error.status,
                                  anthropic_error_json(type, error.message), &req);
  }
  std::optional<std::string_view> param;
  if (error.param) param = *error.param;
  co_await write_error(connection, error.status, error.message, true, &req, error.type, param);
}

}  // namespace llmux::sim
