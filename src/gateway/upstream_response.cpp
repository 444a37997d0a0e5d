#include "gateway/upstream_response.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/status.hpp>

#include "gateway/http_rules.hpp"

namespace llmux::gateway {

namespace bhttp = boost::beast::http;

namespace {

/// What one put() saw of the header: views into the parser's input, valid until that put()
/// returns (Beast parses the status line, every field and calls on_header_impl in the one call
/// that finds the header's end). Per thread, reused: no allocation once it has grown.
struct HeaderScratch {
  struct Field {
    bhttp::field name;
    std::string_view name_string, value;
  };
  std::string_view reason;
  std::vector<Field> fields;
};
thread_local HeaderScratch scratch;

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

UpstreamResponse::UpstreamResponse(std::string header) : header_(std::move(header)) {
  header_.clear();
}

void UpstreamResponse::on_response_impl(int code, sv reason, int, error_code&) {
  status_ = code;
  scratch.reason = reason;
  scratch.fields.clear();
}

void UpstreamResponse::on_field_impl(bhttp::field name, sv name_string, sv value, error_code&) {
  if (name == bhttp::field::content_length) has_content_length_ = true;
  scratch.fields.push_back({name, name_string, value});
}

void UpstreamResponse::on_header_impl(error_code&) {
  // The tokens of every Connection field name fields that end here (RFC 9110 §7.6.1).
  std::array<std::string_view, 32> named{};
  std::size_t n = 0;
  bool overflow = false;
  for (const auto& f : scratch.fields) {
    if (f.name != bhttp::field::connection) continue;
    std::string_view v = f.value;
    for (;;) {
      const auto comma = v.find(',');
      const auto token = trim_ows(v.substr(0, comma));
      // `close` and `keep-alive` name no field (the framing is the gateway's own).
      if (!token.empty() && !boost::beast::iequals(token, "close") &&
          !boost::beast::iequals(token, "keep-alive")) {
        if (n < named.size())
          named[n++] = token;
        else
          overflow = true;
      }
      if (comma == std::string_view::npos) break;
      v.remove_prefix(comma + 1);
    }
  }
  auto named_by_connection = [&](std::string_view name) {
    for (std::size_t i = 0; i < n; ++i)
      if (boost::beast::iequals(name, named[i])) return true;
    if (!overflow) return false;
    for (const auto& f : scratch.fields) {  // more than 32 tokens: look again, slowly
      if (f.name != bhttp::field::connection) continue;
      std::string_view v = f.value;
      for (;;) {
        const auto comma = v.find(',');
        if (boost::beast::iequals(trim_ows(v.substr(0, comma)), name)) return true;
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
      }
    }
    return false;
  };

  header_.clear();
  const std::string_view reason =
      scratch.reason.empty()
          ? std::string_view(bhttp::obsolete_reason(static_cast<bhttp::status>(status_)))
          : scratch.reason;
  char code[8];
  const auto r = fmt::format_to_n(code, sizeof code, "{}", status_);
  using namespace std::string_view_literals;
  header_.append("HTTP/1.1 "sv).append(code, r.size).append(" "sv).append(reason).append("\r\n"sv);
  for (const auto& f : scratch.fields) {
    if (is_hop_by_hop(f.name)) continue;
    if (!f.name_string.empty() && (f.name_string[0] == 'x' || f.name_string[0] == 'X')) {
      // Set by the gateway itself (relay.cpp).
      if (boost::beast::iequals(f.name_string, "x-llmux-backend") ||
          boost::beast::iequals(f.name_string, "x-request-id") ||
          (omit_queue_depth_ && boost::beast::iequals(f.name_string, "x-llmux-queue-depth")))
        continue;
    }
    if (named_by_connection(f.name_string)) continue;
    if (f.name == bhttp::field::content_type) {
      content_type_at_ = static_cast<std::uint32_t>(header_.size() + f.name_string.size() + 2);
      content_type_size_ = static_cast<std::uint32_t>(f.value.size());
    }
    header_.append(f.name_string).append(": "sv).append(f.value).append("\r\n"sv);
  }
  scratch.fields.clear();
  scratch.reason = {};
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
