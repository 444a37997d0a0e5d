// SPDX-License-Identifier: Apache-2.0
#pragma once
// A connection of the simulator's server and the answers written on it (Beast). Internal to the
// server: the public header sim/server.hpp stays free of Beast.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "sim/api.hpp"

namespace llmux::sim {

using Request = boost::beast::http::request<boost::beast::http::string_body>;

struct Conn {
  boost::beast::tcp_stream stream;
  boost::beast::flat_buffer buf;
  bool keep_alive = true;
  bool idle = false;   // waiting for the next request's header (refusing closes it then)
  bool admin = false;  // has carried an /admin/faults request (refusing keeps it open)
  explicit Conn(boost::asio::ip::tcp::socket socket) : stream(std::move(socket)) {}
  boost::asio::ip::tcp::socket& sock() { return stream.socket(); }
};

/// Headers every answer carries: `server`, and the request's `x-request-id` echoed.
template <typename Body>
void common_headers(boost::beast::http::response<Body>& res, const Request* req) {
  res.set(boost::beast::http::field::server, "llmux-sim");
  if (req) {
    auto rid = (*req)["x-request-id"];
    if (!rid.empty()) res.set("x-request-id", rid);
  }
}

/// Writes a whole answer; a write error ends keep-alive.
boost::asio::awaitable<void> write_body(Conn& connection, int status, std::string body,
                                        std::string_view content_type, const Request* req);
boost::asio::awaitable<void> write_json(Conn& connection, int status, std::string body,
                                        const Request* req);
/// An OpenAI error body; `keep` false closes the connection after it.
boost::asio::awaitable<void> write_error(Conn& connection, int status, std::string_view message,
                                         bool keep, const Request* req = nullptr,
                                         std::string_view type = {},
                                         std::optional<std::string_view> param = std::nullopt);
/// An ApiError in the OpenAI shape, or Anthropic's when `error.anthropic` (sim/messages_frames).
boost::asio::awaitable<void> write_api_error(Conn& connection, const ApiError& error,
                                             const Request& req);
/// What vLLM's FastAPI app answers for a path it has no route for (404 `{"detail":"Not Found"}`)
/// or a route called with a method it lacks (405 `{"detail":"Method Not Allowed"}` with
/// `Allow`): Starlette's own answers, not the OpenAI shape (vLLM's HTTPException handler is
/// registered for FastAPI's subclass, which routing does not raise).
boost::asio::awaitable<void> write_not_found(Conn& connection, const Request& req);
boost::asio::awaitable<void> write_method_not_allowed(Conn& connection, const Request& req,
                                                      std::string_view allow);

}  // namespace llmux::sim
