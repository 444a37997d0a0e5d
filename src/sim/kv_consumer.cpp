// SPDX-License-Identifier: Apache-2.0
#include "sim/kv_consumer.hpp"

#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include "core/use_tuple.hpp"
#include "http/client.hpp"

namespace llmux::sim {

namespace net = boost::asio;
namespace json = boost::json;

net::awaitable<KvReadResult> read_remote_kv(net::any_io_executor executor,
                                            const RemoteHandle& handle,
                                            std::chrono::milliseconds timeout) {
  KvReadResult result;
  std::string error;
  const auto url = http::Url::parse(fmt::format("http://{}:{}", handle.host, handle.port), &error);
  if (!url) {
    result.error = fmt::format("bad producer address {}:{}: {}", handle.host, handle.port, error);
    co_return result;
  }
  http::ClientOptions options;
  options.mode = http::ConnectionMode::fresh;
  // As vLLM's NIXL handshake, which gives up on a silent side channel after 5 s.
  options.timeouts.connect = timeout;
  options.timeouts.idle = timeout;
  options.timeouts.total = timeout;
  http::Connection connection(executor, *url, options);
  const std::string body = read_request_json(handle);
  http::RequestSpec spec;
  spec.target = "/nixl/read";
  spec.body = body;
  std::string answer;
  const http::HeadCallback on_head = [](int, std::string_view) {};
  const http::BodyCallback on_body = [&](std::string_view bytes, std::int64_t) {
    answer.append(bytes);
  };
  const http::Response response = co_await connection.request(spec, on_head, on_body);
  if (response.failure != http::Failure::none) {
    result.error = fmt::format("producer {}:{} unreachable ({}: {})", handle.host, handle.port,
                               http::to_string(response.failure), response.message);
    co_return result;
  }
  if (response.status != 200) {
    result.error = fmt::format("producer answered {}: {}", response.status, answer);
    co_return result;
  }
  boost::system::error_code ec;
  const json::value doc = json::parse(answer, ec);
  const json::value* tokens = ec                ? nullptr
                              : doc.is_object() ? doc.get_object().if_contains("tokens")
                                                : nullptr;
  if (!tokens || !tokens->is_int64()) {
    result.error = fmt::format("unreadable answer from the producer: {}", answer);
    co_return result;
  }
  result.ok = true;
  result.tokens = tokens->get_int64();
  co_return result;
}

net::awaitable<void> write_kv_load_failure(Conn& connection, const Request& req,
                                           const GenRequest& request) {
  constexpr std::string_view kMessage = "Internal server error";
  if (request.stream && !request.messages_api && request.endpoint != Endpoint::Responses) {
    // Chunked, as vLLM's streams are (a client reads it as any other stream's end).
    boost::beast::http::response<boost::beast::http::string_body> res{
        boost::beast::http::status::ok, req.version()};
    common_headers(res, &req);
    res.set(boost::beast::http::field::content_type, "text/event-stream; charset=utf-8");
    res.set(boost::beast::http::field::cache_control, "no-cache");
    res.body() = stream_error_frame(500, kMessage) + done_frame();
    if (req.version() >= 11) {
      res.chunked(true);
    } else {
      res.prepare_payload();
      connection.keep_alive = false;
    }
    res.keep_alive(connection.keep_alive);
    auto [error, bytes] =
        co_await boost::beast::http::async_write(connection.stream, res, core::use_tuple);
    if (error) connection.keep_alive = false;
    co_return;
  }
  ApiError error{500, std::string(kMessage), "InternalServerError", std::nullopt};
  error.anthropic = request.messages_api;
  co_await write_api_error(connection, error, req);
}

}  // namespace llmux::sim
