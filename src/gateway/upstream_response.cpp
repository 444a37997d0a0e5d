// SPDX-License-Identifier: Apache-2.0
#include "gateway/upstream_response.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>

#include "core/ascii.hpp"
#include "gateway/http_rules.hpp"

namespace llmux::gateway {

namespace bhttp = boost::beast::http;

namespace {

using llmux::iequals;

}  // namespace

namespace {

http::ParseLimits response_limits() {
  return {.header_bytes = 64 * 1024, .body_bytes = std::nullopt};
}

}  // namespace

UpstreamResponse::UpstreamResponse(ByteBuilder header)
    : parser_(http::MessageKind::response, response_limits()), header_(std::move(header)) {
  header_.clear();
}

namespace {

/// Parsers given back on this thread (Recycle), at most kSpares.
constexpr std::size_t kSpares = 64;
std::vector<std::unique_ptr<UpstreamResponse>>& spares() {
  thread_local std::vector<std::unique_ptr<UpstreamResponse>> parsers;
  return parsers;
}

}  // namespace

void UpstreamResponse::Recycle::operator()(UpstreamResponse* response) const noexcept {
  std::unique_ptr<UpstreamResponse> owned(response);
  auto& spare = spares();
  if (spare.size() < kSpares) spare.push_back(std::move(owned));
}

UpstreamResponse::Ptr UpstreamResponse::make(ByteBuilder header) {
  auto& spare = spares();
  if (spare.empty()) return Ptr(new UpstreamResponse(std::move(header)));
  Ptr response(spare.back().release());
  spare.pop_back();
  // A fresh one's state, the parser's field table kept.
  response->parser_.reset();
  response->parser_.set_limits(response_limits());
  response->header_ = std::move(header);
  response->header_.clear();
  response->content_type_at_ = response->content_type_size_ = 0;
  response->body_ = nullptr;
  response->room_ = response->pending_body_ = 0;
  response->status_ = 0;
  response->omit_queue_depth_ = false;
  return response;
}

void UpstreamResponse::header_limit(std::uint32_t bytes) {
  http::ParseLimits limits = parser_.limits();
  limits.header_bytes = bytes;
  parser_.set_limits(limits);
}

void UpstreamResponse::body_limit(std::optional<std::uint64_t> bytes) {
  http::ParseLimits limits = parser_.limits();
  limits.body_bytes = bytes;
  parser_.set_limits(limits);
}

std::size_t UpstreamResponse::put(std::string_view input, boost::system::error_code& error) {
  error = {};
  std::size_t consumed = 0;
  if (pending_body_ > 0) {
    // Bytes the parser read last time that did not fit: the front of this input.
    const std::size_t pending = pending_body_;
    pending_body_ = 0;
    take_body(input.substr(0, pending));
    consumed = pending - pending_body_;
    if (pending_body_ > 0) {
      error = bhttp::error::need_buffer;
      return consumed;
    }
  }
  if (parser_.header_done() && !parser_.message_done() && !body_) {
    error = bhttp::error::need_buffer;
    return consumed;
  }
  for (;;) {
    const http::ParseStep step = parser_.parse(input.substr(consumed));
    switch (step.event) {
      case http::ParseEvent::need_more:
        error = bhttp::error::need_more;
        return consumed + step.consumed;
      case http::ParseEvent::header:
        take_header();
        // The fields are in the client's header now: the parser's tables go back to the
        // thread while the body streams (a held-open stream holds none).
        parser_.release_field_tables();
        return consumed + step.consumed;
      case http::ParseEvent::body:
        // The body is the end of what the step consumed: what did not fit stays unconsumed.
        take_body(step.body);
        if (pending_body_ > 0) {
          error = bhttp::error::need_buffer;
          return consumed + step.consumed - pending_body_;
        }
        break;
      case http::ParseEvent::message_end:
        return consumed + step.consumed;  // trailer fields: nothing of them reaches the client
      case http::ParseEvent::error:
        error = step.error;
        return consumed + step.consumed;
    }
    consumed += step.consumed;
  }
}

void UpstreamResponse::put_eof(boost::system::error_code& error) {
  const http::ParseStep step = parser_.parse_eof();
  error = step.event == http::ParseEvent::error ? step.error : boost::system::error_code{};
}

void UpstreamResponse::take_body(std::string_view body) {
  const std::size_t fits = body_ ? std::min(room_, body.size()) : 0;
  if (fits > 0) std::memcpy(body_, body.data(), fits);
  body_ += fits;
  room_ -= fits;
  pending_body_ = body.size() - fits;
}

void UpstreamResponse::take_header() {
  using namespace std::string_view_literals;
  status_ = static_cast<int>(parser_.status());
  // The parser takes a status of three digits (100-999).
  const char digits[3] = {static_cast<char>('0' + status_ / 100 % 10),
                          static_cast<char>('0' + status_ / 10 % 10),
                          static_cast<char>('0' + status_ % 10)};
  const std::string_view reason = parser_.reason();
  const std::string_view phrase =
      reason.empty() ? std::string_view(bhttp::obsolete_reason(static_cast<bhttp::status>(status_)))
                     : reason;
  header_.clear();
  header_.append("HTTP/1.1 "sv, std::string_view(digits, 3), " "sv, phrase, "\r\n"sv);
  std::string_view connection;  // the first Connection field's value
  std::size_t connection_fields = 0;
  for (const http::FieldView& field : parser_.fields()) {
    const std::string_view name = field.name_string;
    const std::string_view value = field.value;
    if (field.name == bhttp::field::connection && connection_fields++ == 0) connection = value;
    if (is_hop_by_hop(field.name)) continue;
    if (name[0] == 'x' || name[0] == 'X') {
      // Set by the gateway itself (relay.cpp).
      if (iequals(name, "x-llmux-backend") || iequals(name, "x-request-id") ||
          (omit_queue_depth_ && iequals(name, "x-llmux-queue-depth")))
        continue;
    }
    if (field.name == bhttp::field::content_type && content_type_size_ == 0 &&
        content_type_at_ == 0) {  // the first one
      content_type_at_ = static_cast<std::uint32_t>(header_.size() + name.size() + 2);
      content_type_size_ = static_cast<std::uint32_t>(value.size());
    }
    // The line as received when it is exactly name ": " value CRLF (the usual case): one copy.
    const char* name_end = name.data() + name.size();
    const char* value_end = value.data() + value.size();
    if (value.data() == name_end + 2 && name_end[0] == ':' && name_end[1] == ' ' &&
        value_end[0] == '\r')
      header_.append(
          std::string_view(name.data(), static_cast<std::size_t>(value_end + 2 - name.data())));
    else
      header_.append(name, ": "sv, value, "\r\n"sv);
  }
  if (connection_fields > 1) {
    std::string joined;  // every Connection field's options, as one list
    for (const http::FieldView& field : parser_.fields()) {
      if (field.name != bhttp::field::connection) continue;
      if (!joined.empty()) joined.push_back(',');
      joined.append(field.value);
    }
    remove_named_fields(joined);
  } else if (connection_fields == 1 && !iequals(connection, "keep-alive") &&
             !iequals(connection, "close")) {  // (the usual values name no field)
    remove_named_fields(connection);
  }
}

void UpstreamResponse::remove_named_fields(std::string_view connection) {
  // `close` and `keep-alive` name no field (the framing is the gateway's own).
  bool names_some = false;
  for_each_list_element(connection, [&](std::string_view option) {
    if (!iequals(option, "close") && !iequals(option, "keep-alive")) names_some = true;
  });
  if (!names_some) return;
  // Its options name fields that end here (RFC 9110 §7.6.1): their lines are taken out of what
  // was written.
  auto named = [&](std::string_view field) {
    bool found = false;
    for_each_list_element(
        connection, [&](std::string_view option) { found = found || iequals(option, field); });
    return found;
  };
  ByteBuilder kept;
  kept.reserve(header_.size());
  std::string_view rest = header_.view();
  const auto status_end = rest.find("\r\n") + 2;
  kept.append(rest.substr(0, status_end));
  rest.remove_prefix(status_end);
  const bool had_type = content_type_size_ > 0 || content_type_at_ > 0;
  content_type_at_ = content_type_size_ = 0;
  while (!rest.empty()) {
    const auto end = rest.find("\r\n") + 2;  // every line was written with its CRLF
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end);
    const std::string_view field = line.substr(0, line.find(':'));
    if (named(field)) continue;
    if (had_type && content_type_at_ == 0 && iequals(field, "content-type")) {
      content_type_at_ = static_cast<std::uint32_t>(kept.size() + field.size() + 2);
      content_type_size_ = static_cast<std::uint32_t>(line.size() - field.size() - 4);
    }
    kept.append(line);
  }
  header_ = std::move(kept);
}

}  // namespace llmux::gateway
