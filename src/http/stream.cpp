// SPDX-License-Identifier: Apache-2.0
#include "http/stream.hpp"

#include <array>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace llmux::http {

namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

/// The TLS state of one connection: the ssl::stream over the Stream's socket, the context it was
/// made from (kept alive with it) and the staging buffer of gathered writes.
struct Stream::Tls {
  Tls(tcp::socket& tcp_socket, TlsContextPtr context, ssl::stream_base::handshake_type role)
      : ctx(std::move(context)), stream(tcp_socket, *ctx), type(role) {}
  TlsContextPtr ctx;
  ssl::stream<tcp::socket&> stream;
  ssl::stream_base::handshake_type type;
  std::unique_ptr<std::array<char, kRecord>> staging;
};

Stream::Stream(tcp::socket tcp_socket) : sock_(std::move(tcp_socket)) {}
Stream::Stream(const executor_type& executor) : sock_(executor) {}
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&&) noexcept = default;
Stream::~Stream() = default;

void Stream::start_server(TlsContextPtr ctx) {
  tls_ = std::make_unique<Tls>(sock_, std::move(ctx), ssl::stream_base::server);
}

void Stream::start_client(TlsContextPtr ctx, const std::string& host, bool verify) {
  tls_ = std::make_unique<Tls>(sock_, std::move(ctx), ssl::stream_base::client);
  boost::system::error_code ec;
  net::ip::make_address(host, ec);
  // SNI is for names only (RFC 6066); an address is checked against the certificate's IP SANs.
  if (ec) SSL_set_tlsext_host_name(tls_->stream.native_handle(), host.c_str());
  if (verify) tls_->stream.set_verify_callback(ssl::host_name_verification(host));
}

net::awaitable<boost::system::error_code> Stream::handshake() {
  auto [ec] = co_await tls_->stream.async_handshake(tls_->type, net::as_tuple(net::use_awaitable));
  co_return ec;
}

net::awaitable<void> Stream::tls_shutdown() {
  if (!tls_ || !sock_.is_open()) co_return;
  // close_notify only: the peer's own close_notify is not waited for (RFC 8446 6.1 allows it),
  // so a client that never answers costs nothing.
  SSL_set_shutdown(tls_->stream.native_handle(), SSL_RECEIVED_SHUTDOWN);
  co_await tls_->stream.async_shutdown(net::as_tuple(net::use_awaitable));
}

std::string Stream::tls_error_message(const boost::system::error_code& ec) const {
  if (tls_) {
    const long verify_result = SSL_get_verify_result(tls_->stream.native_handle());
    if (verify_result != X509_V_OK)
      return fmt::format("certificate verify failed: {}",
                         X509_verify_cert_error_string(verify_result));
  }
  if (ec == ssl::error::stream_truncated) return "the peer closed the connection during TLS";
  return ec.message();
}

bool Stream::is_plain_http(const boost::system::error_code& ec) {
  return ec.category() == net::error::get_ssl_category() &&
         ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST;
}

void Stream::tls_read(net::mutable_buffer buffer, IoHandler handler) {
  // A peer that closes without close_notify ends the stream as a plain TCP close does: HTTP's
  // own framing tells a complete message from a truncated one (as browsers and curl do).
  auto slot = net::get_associated_cancellation_slot(handler);
  auto executor = net::get_associated_executor(handler, sock_.get_executor());
  tls_->stream.async_read_some(
      buffer, net::bind_cancellation_slot(
                  slot, net::bind_executor(executor, [handler = std::move(handler)](
                                                         boost::system::error_code ec,
                                                         std::size_t bytes_read) mutable {
                    if (ec == ssl::error::stream_truncated) ec = net::error::eof;
                    std::move(handler)(ec, bytes_read);
                  })));
}

void Stream::tls_write(net::const_buffer buffer, IoHandler handler) {
  tls_->stream.async_write_some(buffer, std::move(handler));
}

net::mutable_buffer Stream::tls_staging() {
  if (!tls_->staging) tls_->staging = std::make_unique<std::array<char, kRecord>>();
  return net::buffer(*tls_->staging);
}

namespace {
/// OpenSSL's latest error as text, for a context that could not be made.
std::string openssl_reason(const boost::system::error_code& ec) {
  std::string msg = ec.message();
  ERR_clear_error();
  return msg;
}
}  // namespace

TlsContextPtr make_server_context(const std::string& cert_file, const std::string& key_file,
                                  std::string& error) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    error = fmt::format("cannot use certificate file '{}': {}", cert_file, openssl_reason(ec));
    return nullptr;
  }
  ctx->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    error = fmt::format("cannot use key file '{}': {}", key_file, openssl_reason(ec));
    return nullptr;
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ERR_clear_error();
    error = fmt::format("key file '{}' does not match certificate file '{}'", key_file, cert_file);
    return nullptr;
  }
  return ctx;
}

TlsContextPtr make_client_context(const std::string& ca_file, bool verify, std::string& error) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  if (!verify) {
    ctx->set_verify_mode(ssl::verify_none, ec);
    return ctx;
  }
  ctx->set_verify_mode(ssl::verify_peer, ec);
  if (ca_file.empty())
    ctx->set_default_verify_paths(ec);
  else
    ctx->load_verify_file(ca_file, ec);
  if (ec) {
    error = ca_file.empty()
                ? fmt::format("cannot load the system's CA store: {}", openssl_reason(ec))
                : fmt::format("cannot use CA file '{}': {}", ca_file, openssl_reason(ec));
    return nullptr;
  }
  return ctx;
}

}  // namespace llmux::http
