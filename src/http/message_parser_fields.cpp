// SPDX-License-Identifier: Apache-2.0
// llmux::http::MessageParser (message_parser.hpp): the fields that frame a message and what the
// header decides from them: Content-Length (RFC 9110 §8.6), Transfer-Encoding (RFC 9112 §6.1),
// Connection (RFC 9110 §7.6.1; Proxy-Connection read the same way, as Beast reads it), and the
// message body length (RFC 9112 §6.3).
#include <cstdint>
#include <limits>
#include <string_view>

#include "http/message_parser.hpp"
#include "http/message_parser_detail.hpp"
#include "http/parser_namespace.hpp"
#include "http/parser_scan.hpp"

namespace llmux::http {
inline namespace LLMUX_PARSER_NAMESPACE {

namespace bhttp = boost::beast::http;

namespace {

/// `text` is a token (RFC 9110 §5.6.2): one or more tchar.
bool message_is_token(std::string_view text) {
  return !text.empty() && parser_detail::find_non_token(text.data(), text.data() + text.size()) ==
                              text.data() + text.size();
}

}  // namespace

bool MessageParser::take_field(bhttp::field name, std::string_view value, bool trailers) {
  switch (name) {
    case bhttp::field::content_length:
      if (trailers) {  // framing has no place in trailers (RFC 9110 §6.5.1); Beast's error
        error_ = bhttp::error::bad_content_length;
        return false;
      }
      return take_content_length(value);
    case bhttp::field::transfer_encoding:
      if (trailers) {
        error_ = bhttp::error::bad_transfer_encoding;
        return false;
      }
      return take_transfer_encoding(value);
    case bhttp::field::connection:
    case bhttp::field::proxy_connection:
      return take_connection(value);
    default:
      return true;
  }
}

// Content-Length = 1*DIGIT; a list of equal values is that value (RFC 9110 §8.6), as are several
// fields with equal values; anything else is an error.
bool MessageParser::take_content_length(std::string_view value) {
  if (te_present_) {  // deliberate difference 4 (always an error)
    error_ = bhttp::error::bad_content_length;
    return false;
  }
  // The usual value: one number of up to 19 digits (no overflow possible), the only one.
  if (!content_length_ && !value.empty() && value.size() <= 19) {
    std::uint64_t length = 0;
    bool digits = true;
    for (const char character : value) {
      if (!message_detail::is_digit(character)) {
        digits = false;
        break;
      }
      length = length * 10 + static_cast<std::uint64_t>(character - '0');
    }
    if (digits) {
      content_length_ = length;
      return true;
    }
  }
  std::uint64_t first = 0;
  bool have = content_length_.has_value();
  if (have) first = *content_length_;
  bool differ = false;
  const bool valid = message_detail::for_each_element(value, [&](std::string_view item) {
    if (item.empty()) return false;
    std::uint64_t number = 0;
    for (const char character : item) {
      if (!message_detail::is_digit(character)) return false;
      const auto digit = static_cast<std::uint64_t>(character - '0');
      if (number > (std::numeric_limits<std::uint64_t>::max() - digit) / 10)
        return false;  // overflow
      number = number * 10 + digit;
    }
    if (have && number != first) differ = true;
    first = number;
    have = true;
    return true;
  });
  if (!valid) {
    error_ = bhttp::error::bad_content_length;
    return false;
  }
  if (differ) {
    error_ = bhttp::error::multiple_content_length;
    return false;
  }
  content_length_ = first;
  return true;
}

// Transfer-Encoding = #transfer-coding (RFC 9112 §6.1). Codings with parameters, and chunked
// more than once, are refused (deliberate differences 2 and 3); a request's must end in chunked.
bool MessageParser::take_transfer_encoding(std::string_view value) {
  if (content_length_) {  // deliberate difference 4
    error_ = bhttp::error::bad_transfer_encoding;
    return false;
  }
  // Beast refuses any Transfer-Encoding after one that ended in chunked.
  bool valid = !te_chunked_;
  const bool request = kind_ == MessageKind::request;
  if (valid) {
    valid = message_detail::for_each_element(value, [&](std::string_view coding) {
      if (coding.empty()) return true;  // empty list elements are ignored (RFC 9110 §5.6.1)
      if (!message_is_token(coding)) return false;  // parameters, or not a coding at all
      if (message_detail::equals_ignoring_case(coding, "chunked")) {
        if (te_has_chunked_) return false;  // chunked twice
        te_has_chunked_ = true;
        te_chunked_ = true;
        return true;
      }
      // A coding after chunked: a request's framing is lost (deliberate difference 2), a
      // response's body runs until the close. Another coding before chunked is the server's to
      // refuse (the gateway answers 501: gateway/http_rules.cpp).
      if (request && te_has_chunked_) return false;
      te_chunked_ = false;
      return true;
    });
  }
  te_present_ = true;
  if (!valid) {
    error_ = bhttp::error::bad_transfer_encoding;
    return false;
  }
  return true;
}

// Connection = #connection-option, connection-option = token (RFC 9110 §7.6.1).
bool MessageParser::take_connection(std::string_view value) {
  // The usual values, one option each: no list to walk.
  if (message_detail::equals_ignoring_case(value, "keep-alive")) {
    connection_keep_alive_ = true;
    return true;
  }
  if (message_detail::equals_ignoring_case(value, "close")) {
    connection_close_ = true;
    return true;
  }
  const bool valid = message_detail::for_each_element(value, [&](std::string_view option) {
    if (option.empty()) return true;
    if (!message_is_token(option)) return false;
    if (message_detail::equals_ignoring_case(option, "close"))
      connection_close_ = true;
    else if (message_detail::equals_ignoring_case(option, "keep-alive"))
      connection_keep_alive_ = true;
    else if (message_detail::equals_ignoring_case(option, "upgrade"))
      connection_upgrade_ = true;
    return true;
  });
  if (!valid) error_ = bhttp::error::bad_value;  // Beast's error for it
  return valid;
}

// The message body length (RFC 9112 §6.3).
bool MessageParser::finish_header() {
  const auto body_of_length = [this](std::uint64_t length) {
    if (limits_.body_bytes && length > *limits_.body_bytes) {
      error_ = bhttp::error::body_limit;
      return false;
    }
    remaining_ = length;
    stage_ = length == 0 ? Stage::done : Stage::length_body;
    return true;
  };
  if (kind_ == MessageKind::request) {
    if (te_present_ && !te_chunked_) {  // an empty Transfer-Encoding: deliberate difference 2
      error_ = bhttp::error::bad_transfer_encoding;
      return false;
    }
    if (te_chunked_) {
      stage_ = Stage::chunk_line;
      return true;
    }
    if (content_length_) return body_of_length(*content_length_);
    stage_ = Stage::done;  // a request without a length has no body
    return true;
  }
  // 1xx, 204 and 304 have no body whatever the header says, nor a response to HEAD.
  if (status_ / 100 == 1 || status_ == 204 || status_ == 304 || no_body_expected_) {
    stage_ = Stage::done;
    return true;
  }
  if (te_chunked_) {
    stage_ = Stage::chunk_line;
    return true;
  }
  if (content_length_) return body_of_length(*content_length_);
  stage_ = Stage::eof_body;  // neither: until the close
  until_eof_ = true;
  return true;
}

}  // namespace LLMUX_PARSER_NAMESPACE
}  // namespace llmux::http
