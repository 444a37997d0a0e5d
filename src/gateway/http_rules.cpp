// SPDX-License-Identifier: Apache-2.0
#include "gateway/http_rules.hpp"

#include "core/ascii.hpp"

#include <array>

#include <fmt/format.h>
#include <boost/beast/core/string.hpp>

namespace llmux::gateway {

namespace {

std::string_view coding_name(std::string_view elem) {
  return trim_ows(elem.substr(0, elem.find(';')));
}

bool is_decimal(std::string_view text) {
  if (text.empty() || text.size() > 19) return false;  // 19 digits always fit in uint64
  for (char character : text)
    if (character < '0' || character > '9') return false;
  return true;
}

using llmux::iequals;

}  // namespace

std::optional<FramingError> check_request_framing(std::span<const HeaderField> fields,
                                                  unsigned version) {
  // Content-Length: exactly one field holding one decimal number.
  std::size_t cl_fields = 0;
  for (const auto& field : fields) {
    if (field.name != bhttp::field::content_length) continue;
    ++cl_fields;
    if (!is_decimal(trim_ows(field.value)))
      return FramingError{
          400, fmt::format("Bad request: invalid Content-Length '{}'.", field.value.substr(0, 64))};
  }
  if (cl_fields > 1) return FramingError{400, "Bad request: Content-Length is repeated."};

  // Transfer-Encoding: the codings of every field, in order.
  bool any_te = false;
  std::size_t codings = 0;
  bool chunked_before_last = false;
  bool last_is_chunked = false;
  std::string_view first_other;
  for (const auto& field : fields) {
    if (field.name != bhttp::field::transfer_encoding) continue;
    any_te = true;
    for_each_list_element(field.value, [&](std::string_view elem) {
      const auto name = coding_name(elem);
      if (last_is_chunked) chunked_before_last = true;  // something follows a chunked
      last_is_chunked = iequals(name, "chunked");
      if (!last_is_chunked && first_other.empty()) first_other = name;
      ++codings;
    });
  }
  if (!any_te) return std::nullopt;
  if (version < 11)
    return FramingError{400, "Bad request: Transfer-Encoding is not allowed in HTTP/1.0."};
  if (cl_fields > 0)
    return FramingError{400, "Bad request: both Content-Length and Transfer-Encoding."};
  if (codings == 0) return FramingError{400, "Bad request: empty Transfer-Encoding."};
  if (chunked_before_last || !last_is_chunked)
    return FramingError{400,
                        "Bad request: Transfer-Encoding must end in a single 'chunked' "
                        "(the length of the body cannot be determined)."};
  if (!first_other.empty())
    return FramingError{
        501, fmt::format("Transfer-Encoding '{}' is not implemented.", first_other.substr(0, 64))};
  return std::nullopt;
}

bool is_hop_by_hop(bhttp::field name) {
  switch (name) {
    case bhttp::field::connection:
    case bhttp::field::keep_alive:
    case bhttp::field::proxy_connection:
    case bhttp::field::proxy_authenticate:
    case bhttp::field::proxy_authorization:
    case bhttp::field::te:
    case bhttp::field::trailer:
    case bhttp::field::transfer_encoding:
    case bhttp::field::upgrade:
    case bhttp::field::expect:
      return true;
    default:
      return false;
  }
}

bool named_by_connection(std::span<const HeaderField> fields, std::string_view name) {
  bool found = false;
  for (const auto& field : fields) {
    if (field.name != bhttp::field::connection) continue;
    for_each_list_element(field.value, [&](std::string_view token) {
      if (iequals(token, name)) found = true;
    });
    if (found) break;
  }
  return found;
}

void build_upstream_head(ByteBuilder& out, const Request& client,
                         const UpstreamRequestParts& parts) {
  using namespace std::string_view_literals;
  out.clear();
  const std::string_view method = client.method_string();
  out.append(method, " "sv, parts.target, " HTTP/1.1\r\nHost: "sv, parts.host, "\r\n"sv);

  // Tokens of the client's Connection fields name fields that end at the gateway.
  std::array<std::string_view, 32> named{};
  std::size_t named_count = 0;
  bool overflow = false;
  for (const auto& field : client) {
    if (field.name != bhttp::field::connection) continue;
    for_each_list_element(field.value, [&](std::string_view token) {
      if (named_count < named.size()) {
        named[named_count++] = token;
      } else {
        overflow = true;
      }
    });
  }
  // The lines of the fields that pass, copied in runs: the Request keeps each field's line,
  // in order (request.hpp), so neighbours that both pass go out in one copy.
  const char* run_begin = nullptr;
  const char* run_end = nullptr;
  std::string_view xff_first;  // the client's X-Forwarded-For, when it sent exactly one
  std::string xff_joined;      // several: joined with ", "
  std::size_t xff_count = 0;
  for (const auto& field : client) {
    const auto name = field.name;
    if (is_hop_by_hop(name)) continue;
    switch (name) {
      case bhttp::field::host:
      case bhttp::field::content_length:
        continue;
      case bhttp::field::authorization:
        if (!parts.authorization.empty() || !parts.keep_client_authorization) continue;
        break;
      default:
        break;
    }
    const std::string_view name_string = field.name_string;
    if (name == bhttp::field::unknown) {
      // Set by the gateway below (X-Forwarded-For extended with the client's address).
      if (iequals(name_string, "x-forwarded-for")) {
        if (xff_count++ == 0) {
          xff_first = field.value;
        } else {
          if (xff_count == 2) xff_joined.assign(xff_first);
          xff_joined.append(", ").append(field.value);
        }
        continue;
      }
      if (iequals(name_string, "x-forwarded-proto") || iequals(name_string, "x-request-id"))
        continue;
      // Anthropic's clients send their key here: it goes where the Authorization header goes.
      if ((!parts.authorization.empty() || !parts.keep_client_authorization) &&
          iequals(name_string, "x-api-key"))
        continue;
    }
    bool named_here = false;
    for (std::size_t i = 0; i < named_count && !named_here; ++i)
      named_here = iequals(name_string, named[i]);
    if (!named_here && overflow) named_here = named_by_connection(client.fields(), name_string);
    if (named_here) continue;
    const std::string_view line = field.line();
    if (line.data() != run_end) {
      if (run_begin) out.append(std::string_view(run_begin, run_end - run_begin));
      run_begin = line.data();
    }
    run_end = line.data() + line.size();
  }
  if (run_begin) out.append(std::string_view(run_begin, run_end - run_begin));
  if (!parts.authorization.empty()) out.append("Authorization: "sv, parts.authorization, "\r\n"sv);
  const std::string_view xff = xff_count == 1 ? xff_first : std::string_view(xff_joined);
  out.append(
      "X-Forwarded-For: "sv, xff, xff_count > 0 ? ", "sv : ""sv, parts.client_addr,
      parts.https ? "\r\nX-Forwarded-Proto: https\r\n"sv : "\r\nX-Forwarded-Proto: http\r\n"sv);
  if (!parts.request_id.empty()) out.append("X-Request-Id: "sv, parts.request_id, "\r\n"sv);
  const auto verb = client.method();
  if (parts.body_size > 0 || verb == bhttp::verb::post || verb == bhttp::verb::put ||
      verb == bhttp::verb::patch) {
    char digits[24];
    const auto formatted = fmt::format_to_n(digits, sizeof digits, "{}", parts.body_size);
    out.append("Content-Length: "sv, std::string_view(digits, formatted.size), "\r\n"sv);
  }
  out.append("\r\n"sv);
}

}  // namespace llmux::gateway
