// SPDX-License-Identifier: Apache-2.0
#include "http/client.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/use_tuple.hpp"
#include "http/message_parser.hpp"

namespace llmux::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;
using core::use_tuple;

/// Reads one response with llmux's parser (message_parser.hpp), fed by hand: the status, the
/// Content-Type and the captured field at the header, and body bytes forwarded with the time of
/// the read that brought them.
class ResponseReader {
 public:
  ResponseReader(Response& response, const HeadCallback& on_head, const BodyCallback& on_body,
                 std::string_view capture)
      : response_(response),
        on_head_(on_head),
        on_body_(on_body),
        capture_(capture),
        parser_(MessageKind::response, {.header_bytes = 64 * 1024, .body_bytes = std::nullopt}) {}
  std::int64_t read_ns = 0;  // when the bytes being parsed were read

  /// Parses as much of `input` as it can; returns the bytes consumed (error::need_more when the
  /// response goes on past `input`).
  std::size_t put(std::string_view input, beast::error_code& error) {
    error = {};
    std::size_t consumed = 0;
    for (;;) {
      const ParseStep step = parser_.parse(input.substr(consumed));
      consumed += step.consumed;
      switch (step.event) {
        case ParseEvent::need_more:
          error = bhttp::error::need_more;
          return consumed;
        case ParseEvent::header:
          take_header();
          break;
        case ParseEvent::body:
          deliver(step.body);
          break;
        case ParseEvent::message_end:
          return consumed;
        case ParseEvent::error:
          error = step.error;
          return consumed;
      }
    }
  }
  void put_eof(beast::error_code& error) {
    const ParseStep step = parser_.parse_eof();
    error = step.event == ParseEvent::error ? step.error : beast::error_code{};
  }
  bool is_header_done() const { return parser_.header_done(); }
  bool is_done() const { return parser_.message_done(); }
  bool keep_alive() const { return parser_.keep_alive(); }

 private:
  void take_header() {
    response_.status = static_cast<int>(parser_.status());
    for (const FieldView& field : parser_.fields()) {
      if (field.name == bhttp::field::content_type) response_.content_type.assign(field.value);
      if (!capture_.empty() && beast::iequals(field.name_string, capture_))
        response_.captured.assign(field.value);
    }
    if (on_head_) on_head_(response_.status, response_.content_type);
  }
  void deliver(std::string_view body) {
    if (body.empty()) return;
    response_.body_bytes += body.size();
    if (on_body_) on_body_(body, read_ns);
  }

  Response& response_;
  const HeadCallback& on_head_;
  const BodyCallback& on_body_;
  std::string_view capture_;
  MessageParser parser_;
};

}  // namespace

std::optional<ConnectionMode> parse_connection_mode(std::string_view name) {
  if (name == "fresh") return ConnectionMode::fresh;
  if (name == "keep-alive" || name == "keep_alive" || name == "keepalive")
    return ConnectionMode::keep_alive;
  return std::nullopt;
}

std::string_view to_string(ConnectionMode mode) {
  return mode == ConnectionMode::fresh ? "fresh" : "keep-alive";
}

std::string_view to_string(Failure failure) {
  switch (failure) {
    case Failure::none:
      return "none";
    case Failure::connect:
      return "connect";
    case Failure::send:
      return "send";
    case Failure::timeout:
      return "timeout";
    case Failure::closed:
      return "closed";
    case Failure::protocol:
      return "protocol";
  }
  return "none";
}

// ---------------------------------------------------------------------------------------------
// Connection

struct Connection::Impl : std::enable_shared_from_this<Impl> {
  Impl(net::any_io_executor executor, Url server_url, ClientOptions options)
      : sock(executor), timer(executor), url(std::move(server_url)), opt(options) {}

  Stream sock;  // TLS on it for an https:// url (connect() shakes hands)
  net::steady_timer timer;
  Url url;
  ClientOptions opt;
  std::optional<tcp::endpoint> endpoint;
  beast::flat_buffer buf;
  std::string head;  // request header bytes, reused
  std::uint64_t connects = 0;
  // Watchdog state (read by the timer handler).
  std::uint64_t generation = 0;  // bumps per request; stale handlers do nothing
  std::int64_t last_progress_ns = 0;
  std::int64_t total_deadline_ns = 0;
  std::int64_t connect_deadline_ns = 0;
  bool connecting = false;
  bool timed_out = false;
  bool active = false;

  void close_socket() {
    boost::system::error_code ec;
    sock.socket().shutdown(tcp::socket::shutdown_both, ec);
    sock.close(ec);
    buf.clear();
  }

  std::int64_t next_deadline() const {
    const std::int64_t idle = opt.timeouts.idle.count() * 1'000'000;
    std::int64_t deadline = connecting ? connect_deadline_ns : last_progress_ns + idle;
    if (total_deadline_ns && total_deadline_ns < deadline) deadline = total_deadline_ns;
    return deadline;
  }

  void arm() {
    timer.expires_at(net::steady_timer::time_point(std::chrono::nanoseconds(next_deadline())));
    timer.async_wait([self = shared_from_this(), gen = generation](boost::system::error_code ec) {
      if (ec || gen != self->generation || !self->active) return;
      const std::int64_t now = mono_ns();
      if (now >= self->next_deadline()) {
        self->timed_out = true;
        boost::system::error_code ignored;
        self->sock.cancel(ignored);
        self->sock.close(ignored);
        return;
      }
      self->arm();  // progress since: wait for the new deadline
    });
  }

  net::awaitable<bool> connect(Response& response) {
    if (!endpoint) {
      boost::system::error_code ec;
      auto addr = net::ip::make_address(url.host, ec);
      if (!ec) {
        endpoint = tcp::endpoint(addr, url.port);
      } else {
        tcp::resolver resolver(sock.get_executor());
        auto [rec, results] =
            co_await resolver.async_resolve(url.host, std::to_string(url.port), use_tuple);
        if (rec || results.empty()) {
          response.failure = Failure::connect;
          response.message =
              fmt::format("resolve {}: {}", url.host, rec ? rec.message() : "no address");
          co_return false;
        }
        endpoint = results.begin()->endpoint();
      }
    }
    connecting = true;
    connect_deadline_ns = mono_ns() + opt.timeouts.connect.count() * 1'000'000;
    auto [ec] = co_await sock.socket().async_connect(*endpoint, use_tuple);
    if (!ec && url.tls) {
      if (!opt.tls) {
        response.failure = Failure::connect;
        response.message = fmt::format("{}: https:// needs a TLS context", url.authority());
        close_socket();
        co_return false;
      }
      sock.start_client(opt.tls, url.host, opt.tls_verify);
      if (auto hec = co_await sock.handshake()) {
        connecting = false;
        response.failure = timed_out ? Failure::timeout : Failure::connect;
        response.message = fmt::format("TLS handshake with {}: {}", url.authority(),
                                       timed_out ? "timed out" : sock.tls_error_message(hec));
        close_socket();
        co_return false;
      }
    }
    connecting = false;
    last_progress_ns = mono_ns();
    if (ec) {
      response.failure = timed_out ? Failure::timeout : Failure::connect;
      response.message =
          fmt::format("connect {}: {}", url.authority(), timed_out ? "timed out" : ec.message());
      close_socket();
      co_return false;
    }
    ++connects;
    boost::system::error_code ignored;
    sock.socket().set_option(tcp::no_delay(true), ignored);
    co_return true;
  }

  void build_head(const RequestSpec& req) {
    head.clear();
    head.append(req.method).append(" ").append(url.path).append(req.target);
    head.append(" HTTP/1.1\r\nHost: ").append(url.authority());
    head.append("\r\nUser-Agent: llmux-bench\r\nAccept: */*\r\n");
    if (opt.mode == ConnectionMode::fresh) head.append("Connection: close\r\n");
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT") {
      head.append("Content-Type: ").append(req.content_type).append("\r\n");
      head.append("Content-Length: ").append(std::to_string(req.body.size())).append("\r\n");
    }
    for (const Header& header : req.headers)
      head.append(header.name).append(": ").append(header.value).append("\r\n");
    head.append("\r\n");
  }

  net::awaitable<Response> request(const RequestSpec& req, const HeadCallback& on_head,
                                   const BodyCallback& on_body) {
    Response response;
    response.start_ns = mono_ns();
    ++generation;
    active = true;
    timed_out = false;
    last_progress_ns = response.start_ns;
    total_deadline_ns = opt.timeouts.total.count() > 0
                            ? response.start_ns + opt.timeouts.total.count() * 1'000'000
                            : 0;
    connecting = false;
    if (opt.mode == ConnectionMode::fresh && sock.is_open()) close_socket();
    // A kept-alive socket may have been closed by the server meanwhile; if it failed with nothing
    // read, retry once on a fresh connection (what HTTP clients do for idempotent reuse).
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = sock.is_open();
      const std::int64_t start = response.start_ns;
      response = Response{};
      response.start_ns = start;
      response.reused = reused;
      arm();
      if (!reused && !co_await connect(response)) break;
      build_head(req);
      std::array<net::const_buffer, 2> bufs{net::buffer(head), net::buffer(req.body)};
      auto [wec, wn] = co_await net::async_write(sock, bufs, use_tuple);
      response.sent_ns = mono_ns();
      last_progress_ns = response.sent_ns;
      if (wec) {
        close_socket();
        if (reused && !timed_out) continue;
        response.failure = timed_out ? Failure::timeout : Failure::send;
        response.message = fmt::format("send: {}", timed_out ? "timed out" : wec.message());
        break;
      }
      const bool retry = co_await read_response(response, on_head, on_body, req.capture_header);
      if (retry && reused && !timed_out) continue;
      break;
    }
    active = false;
    ++generation;
    timer.cancel();
    response.end_ns = mono_ns();
    co_return response;
  }

  /// The bytes read and not parsed yet.
  std::string_view unconsumed() const {
    return {static_cast<const char*>(buf.data().data()), buf.size()};
  }

  /// Reads one response. Returns true when the connection failed before any byte arrived
  /// (a stale kept-alive socket: the caller may retry).
  net::awaitable<bool> read_response(Response& response, const HeadCallback& on_head,
                                     const BodyCallback& on_body, std::string_view capture) {
    ResponseReader reader(response, on_head, on_body, capture);
    bool any = buf.size() > 0;
    reader.read_ns = mono_ns();
    for (;;) {
      if (buf.size() > 0) {
        beast::error_code pec;
        const std::size_t consumed = reader.put(unconsumed(), pec);
        buf.consume(consumed);
        if (pec && pec != bhttp::error::need_more) {
          response.failure = Failure::protocol;
          response.message = fmt::format("HTTP parse: {}", pec.message());
          close_socket();
          co_return false;
        }
        if (reader.is_done()) break;
        if (!pec && consumed > 0) continue;
      }
      auto [ec, n] = co_await sock.async_read_some(buf.prepare(opt.read_size), use_tuple);
      const std::int64_t now_ns = mono_ns();
      if (n > 0) {
        buf.commit(n);
        if (!any) response.first_byte_ns = now_ns;
        any = true;
        last_progress_ns = now_ns;
        reader.read_ns = now_ns;
      }
      if (ec) {
        if (ec == net::error::eof && reader.is_header_done()) {
          beast::error_code pec;
          if (buf.size() > 0) buf.consume(reader.put(unconsumed(), pec));
          reader.put_eof(pec);
          if (!pec && reader.is_done()) {
            close_socket();
            break;
          }
        }
        close_socket();
        if (timed_out) {
          response.failure = Failure::timeout;
          response.message = "timed out waiting for the response";
        } else {
          response.failure = Failure::closed;
          response.message =
              fmt::format("connection closed before the response was complete ({})", ec.message());
        }
        co_return !any && !timed_out;
      }
    }
    response.complete = true;
    if (!reader.keep_alive() || opt.mode == ConnectionMode::fresh) close_socket();
    co_return false;
  }
};

Connection::Connection(net::any_io_executor executor, Url url, ClientOptions opt)
    : impl_(std::make_shared<Impl>(std::move(executor), std::move(url), opt)) {}

Connection::~Connection() {
  if (impl_) {
    impl_->active = false;
    ++impl_->generation;
    impl_->timer.cancel();
    impl_->close_socket();
  }
}

net::awaitable<Response> Connection::request(const RequestSpec& req, const HeadCallback& on_head,
                                             const BodyCallback& on_body) {
  auto self = impl_;  // keep alive across suspension
  co_return co_await self->request(req, on_head, on_body);
}

void Connection::close() {
  impl_->close_socket();
}
std::uint64_t Connection::connects() const {
  return impl_->connects;
}
const Url& Connection::url() const {
  return impl_->url;
}

net::awaitable<SimpleResponse> fetch(Connection& connection, const RequestSpec& req) {
  SimpleResponse out;
  BodyCallback sink = [&out](std::string_view bytes, std::int64_t) { out.body.append(bytes); };
  out.result = co_await connection.request(req, {}, sink);
  co_return out;
}

SimpleResponse fetch_blocking(const Url& url, const RequestSpec& req,
                              std::chrono::milliseconds timeout, TlsContextPtr tls,
                              bool tls_verify) {
  net::io_context ioc{1};
  ClientOptions opt;
  opt.tls = std::move(tls);
  opt.tls_verify = tls_verify;
  opt.mode = ConnectionMode::fresh;
  opt.timeouts.connect = timeout;
  opt.timeouts.idle = timeout;
  opt.timeouts.total = timeout;
  Connection connection(ioc.get_executor(), url, opt);
  SimpleResponse out;
  net::co_spawn(
      ioc, [&]() -> net::awaitable<void> { out = co_await fetch(connection, req); }, net::detached);
  ioc.run();
  return out;
}

}  // namespace llmux::http
