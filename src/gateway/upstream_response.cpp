// SPDX-License-Identifier: Apache-2.0
#include "gateway/upstream_response.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>

#include "core/ascii.hpp"
#include "gateway/http_rules.hpp"

namespace llmux::gateway {

namespace bhttp = boost::beast::http;

namespace {

using llmux::iequals;

}  // namespace

UpstreamResponse::UpstreamResponse(ByteBuilder header) : header_(std::move(header)) {
  header_.clear();
}

namespace {

/// Parsers given back on this thread (Recycle), at most kSpares.
constexpr std::size_t kSpares = 64;
std::vector<std::unique_ptr<UpstreamResponse>>& spares() {
  thread_local std::vector<std::unique_ptr<UpstreamResponse>> v;
  return v;
}

}  // namespace

void UpstreamResponse::Recycle::operator()(UpstreamResponse* p) const noexcept {
  std::unique_ptr<UpstreamResponse> owned(p);
  auto& v = spares();
  if (v.size() < kSpares) v.push_back(std::move(owned));
}

UpstreamResponse::Ptr UpstreamResponse::make(ByteBuilder header) {
  auto& v = spares();
  if (v.empty()) return Ptr(new UpstreamResponse(std::move(header)));
  Ptr p(v.back().release());
  v.pop_back();
  *p = UpstreamResponse(std::move(header));  // a parser is not reusable: a fresh one's state
  return p;
}

// Every view Beast gives is valid only during the call that gives it (the input may change
// between two put() calls; a folded value lives in Beast's own scratch): each piece is copied
// into the client's header as it comes.

void UpstreamResponse::on_response_impl(int code, sv reason, int, error_code&) {
  using namespace std::string_view_literals;
  status_ = code;
  // Beast gives a status of three digits (100-999).
  const char digits[3] = {static_cast<char>('0' + code / 100 % 10),
                          static_cast<char>('0' + code / 10 % 10),
                          static_cast<char>('0' + code % 10)};
  const std::string_view phrase =
      reason.empty() ? std::string_view(bhttp::obsolete_reason(static_cast<bhttp::status>(code)))
                     : std::string_view(reason);
  header_.clear();
  header_.append("HTTP/1.1 "sv, std::string_view(digits, 3), " "sv, phrase, "\r\n"sv);
}

void UpstreamResponse::on_field_impl(bhttp::field name, sv name_string, sv value, error_code&) {
  using namespace std::string_view_literals;
  if (is_header_done()) return;  // a trailer field: nothing of it reaches the client
  if (name == bhttp::field::content_length) has_content_length_ = true;
  if (name == bhttp::field::connection) {
    // Its tokens name fields that end here (RFC 9110 §7.6.1), maybe fields already written.
    if (!connection_.empty()) connection_.push_back(',');
    connection_.append(value.data(), value.size());
  }
  if (is_hop_by_hop(name)) return;
  if (!name_string.empty() && (name_string[0] == 'x' || name_string[0] == 'X')) {
    // Set by the gateway itself (relay.cpp).
    if (iequals(name_string, "x-llmux-backend") || iequals(name_string, "x-request-id") ||
        (omit_queue_depth_ && iequals(name_string, "x-llmux-queue-depth")))
      return;
  }
  if (name == bhttp::field::content_type && content_type_at_ == 0) {  // the first one
    content_type_at_ = static_cast<std::uint32_t>(header_.size() + name_string.size() + 2);
    content_type_size_ = static_cast<std::uint32_t>(value.size());
  }
  // The line as received when it is exactly these pieces (the usual case): one copy.
  if (const sv line = field_line(name_string, value); !line.empty())
    header_.append(std::string_view(line));
  else
    header_.append(name_string, ": "sv, value, "\r\n"sv);
}

void UpstreamResponse::on_header_impl(error_code&) {
  if (connection_.empty()) return;
  // `close` and `keep-alive` name no field (the framing is the gateway's own).
  bool names_some = false;
  for_each_list_element(connection_, [&](std::string_view t) {
    if (!iequals(t, "close") && !iequals(t, "keep-alive")) names_some = true;
  });
  if (!names_some) return;
  // Rare: the lines of the fields it names are taken out of what was written.
  auto named = [&](std::string_view field) {
    bool found = false;
    for_each_list_element(connection_,
                          [&](std::string_view t) { found = found || iequals(t, field); });
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
std::size_t UpstreamResponse::put_body(sv body, error_code& ec) {
  // As Beast's buffer_body: what fits is taken; need_buffer when not everything did.
  if (!body_) {
    ec = bhttp::error::need_buffer;
    return 0;
  }
  const std::size_t n = std::min(room_, body.size());
  std::memcpy(body_, body.data(), n);
  body_ += n;
  room_ -= n;
  if (n < body.size()) ec = bhttp::error::need_buffer;
  return n;
}

}  // namespace llmux::gateway
