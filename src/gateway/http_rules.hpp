// SPDX-License-Identifier: Apache-2.0
#pragma once
// The HTTP/1.1 intermediary rules (RFC 9110, RFC 9112) the gateway applies to every message it
// passes on: request framing checked on the header before any body byte is read, hop-by-hop
// fields (fixed ones and every token of every Connection header), trailer fields dropped, and
// each attempt's upstream request built fresh from the client's request.
//
// Pure functions over a request's fields (gateway/request.hpp): no I/O, no state; safe from any
// thread. The response side's rules are applied as its header is parsed
// (gateway/upstream_response.hpp).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <span>

#include "core/bytes.hpp"
#include "gateway/request.hpp"

namespace llmux::gateway {

namespace bhttp = boost::beast::http;

/// Optional whitespace (spaces, tabs) off both ends.
inline std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

/// Calls on_element(element) for each non-empty element of a comma-separated field value (RFC 9110
/// §5.6.1: empty elements are allowed and ignored). Parameters (";q=1") stay on the element.
template <typename Fn>
void for_each_list_element(std::string_view value, Fn&& on_element) {
  while (true) {
    const auto comma = value.find(',');
    const auto elem = trim_ows(value.substr(0, comma));
    if (!elem.empty()) on_element(elem);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

/// Why a request's framing is refused: the status to answer (400 or 501) and a message for the
/// client. The connection is closed after the answer (the rest of the bytes cannot be trusted).
struct FramingError {
  int status = 400;
  std::string message;
};

/// Checks how a request delimits its body, on the header alone (RFC 9112 §6):
/// - Transfer-Encoding in an HTTP/1.0 request, or together with Content-Length: 400;
/// - Transfer-Encoding whose final coding is not `chunked`, or `chunked` anywhere else: 400
///   (the length cannot be determined; a parser that took such a request as bodiless would
///   read its body as the next request);
/// - a coding before the final `chunked` (`gzip, chunked`): 501 (not implemented here);
/// - Content-Length repeated (even with equal values), as a list, or not a decimal number: 400.
/// nullopt when the framing is acceptable.
std::optional<FramingError> check_request_framing(std::span<const HeaderField> fields,
                                                  unsigned version);

/// True for the fields that are hop-by-hop by definition (Connection, Keep-Alive, TE, Trailer,
/// Transfer-Encoding, Upgrade, Proxy-*; and Expect, which the gateway answers itself).
bool is_hop_by_hop(bhttp::field name);

/// True when `name` is listed by any Connection header of `fields` (RFC 9110 §7.6.1: the tokens
/// of every Connection header name hop-by-hop fields). `close` and `keep-alive` name none.
bool named_by_connection(std::span<const HeaderField> fields, std::string_view name);

/// What one attempt changes in the client's request.
struct UpstreamRequestParts {
  std::string_view target;         // backend base path + the client's target
  std::string_view host;           // Host for the backend
  std::string_view authorization;  // "Bearer <key>" of the backend; empty: keep the client's
  std::string_view client_addr;    // appended to X-Forwarded-For
  std::string_view request_id;     // X-Request-Id
  std::size_t body_size = 0;       // Content-Length of the (de-chunked) body
  // False when the gateway checks client API keys (auth.keys): the client's key is then never
  // passed on, and a backend gets its own key or none.
  bool keep_client_authorization = true;
  bool https = false;  // the client came over TLS (X-Forwarded-Proto: https)
};

/// Writes into `out` (cleared first) the upstream request head for one attempt, built from the
/// client's request header, which is never modified: request line (HTTP/1.1), Host, the
/// client's end-to-end fields (hop-by-hop ones and those named by Connection left out; the
/// client's Authorization and x-api-key kept unless the backend has a key or the gateway checks
/// keys),
/// X-Forwarded-For/-Proto, X-Request-Id, Content-Length, and the blank line. The body follows it
/// unchanged.
void build_upstream_head(ByteBuilder& out, const Request& client,
                         const UpstreamRequestParts& parts);

}  // namespace llmux::gateway
