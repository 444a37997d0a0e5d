// SPDX-License-Identifier: Apache-2.0 AND BSL-1.0
// llmux::http::Parser (parser.hpp): the state machine, ported from Beast 1.81's
// impl/basic_parser.ipp (Copyright (c) 2016-2019 Vinnie Falco, Boost Software License 1.0,
// http://www.boost.org/LICENSE_1_0.txt) state for state, with the same results; chunked framing
// and the framing fields are in parser_framing.cpp, the syntax pieces in parser_syntax.cpp, the
// scans in parser_scan.hpp.
#include "http/parser.hpp"

#include <algorithm>

#include <boost/assert.hpp>
#include <boost/beast/http/field.hpp>

#include "http/parser_impl.hpp"
#include "http/parser_scan.hpp"

namespace llmux::http {
#if defined(LLMUX_NO_SIMD)
inline namespace parser_scalar {
#else
inline namespace parser_simd {
#endif

namespace {
using boost::beast::http::error;
using boost::beast::http::field;
using namespace parser_detail;

}  // namespace

template <bool isRequest>
bool Parser<isRequest>::keep_alive() const {
  BOOST_ASSERT(is_header_done());
  if (f_ & flagHTTP11) {
    if (f_ & flagConnectionClose) return false;
  } else {
    if (!(f_ & flagConnectionKeepAlive)) return false;
  }
  return (f_ & flagNeedEOF) == 0;
}

template <bool isRequest>
boost::optional<std::uint64_t> Parser<isRequest>::content_length() const {
  BOOST_ASSERT(is_header_done());
  return content_length_unchecked();
}

template <bool isRequest>
boost::optional<std::uint64_t> Parser<isRequest>::content_length_remaining() const {
  BOOST_ASSERT(is_header_done());
  if (!(f_ & flagContentLength)) return boost::none;
  return len_;
}

template <bool isRequest>
void Parser<isRequest>::skip(bool v) {
  BOOST_ASSERT(!got_some());
  if (v)
    f_ |= flagSkipBody;
  else
    f_ &= ~flagSkipBody;
}

template <bool isRequest>
std::size_t Parser<isRequest>::put(boost::asio::const_buffer buffer, error_code& ec) {
  // Parsing after the message is complete (a reused parser) is a bug in the caller.
  BOOST_ASSERT(!is_done());
  if (is_done()) {
    ec = error::stale_parser;
    return 0;
  }
  auto p = static_cast<const char*>(buffer.data());
  auto n = buffer.size();
  const char* const p0 = p;
  const char* const p1 = p0 + n;
  ec = {};
loop:
  switch (state_) {
    case state::nothing_yet:
      if (n == 0) {
        ec = error::need_more;
        return 0;
      }
      state_ = state::start_line;
      [[fallthrough]];

    case state::start_line: {
      maybe_need_more(p, n, ec);
      if (ec) goto done;
      parse_start_line(p, p + (std::min<std::size_t>)(header_limit_, n), ec, is_request{});
      if (ec) {
        if (ec == error::need_more) {
          if (n >= header_limit_) {
            ec = error::header_limit;
            goto done;
          }
          if (p + 3 <= p1) skip_ = static_cast<std::size_t>(p1 - p - 3);
        }
        goto done;
      }
      BOOST_ASSERT(!is_done());
      n = static_cast<std::size_t>(p1 - p);
      if (p >= p1) {
        ec = error::need_more;
        goto done;
      }
      [[fallthrough]];
    }

    case state::fields:
      maybe_need_more(p, n, ec);
      if (ec) goto done;
      parse_fields(p, p + (std::min<std::size_t>)(header_limit_, n), ec);
      if (ec) {
        if (ec == error::need_more) {
          if (n >= header_limit_) {
            ec = error::header_limit;
            goto done;
          }
          if (p + 3 <= p1) skip_ = static_cast<std::size_t>(p1 - p - 3);
        }
        goto done;
      }
      finish_header(ec, is_request{});
      if (ec) goto done;
      break;

    case state::body0:
      BOOST_ASSERT(!skip_);
      this->on_body_init_impl(content_length(), ec);
      if (ec) goto done;
      state_ = state::body;
      [[fallthrough]];

    case state::body:
      BOOST_ASSERT(!skip_);
      parse_body(p, n, ec);
      if (ec) goto done;
      break;

    case state::body_to_eof0:
      BOOST_ASSERT(!skip_);
      this->on_body_init_impl(content_length(), ec);
      if (ec) goto done;
      state_ = state::body_to_eof;
      [[fallthrough]];

    case state::body_to_eof:
      BOOST_ASSERT(!skip_);
      parse_body_to_eof(p, n, ec);
      if (ec) goto done;
      break;

    case state::chunk_header0:
      this->on_body_init_impl(content_length(), ec);
      if (ec) goto done;
      state_ = state::chunk_header;
      [[fallthrough]];

    case state::chunk_header:
      parse_chunk_header(p, n, ec);
      if (ec) goto done;
      break;

    case state::chunk_body:
      parse_chunk_body(p, n, ec);
      if (ec) goto done;
      break;

    case state::complete:
      ec = {};
      goto done;
  }
  if (p < p1 && !is_done() && eager()) {
    n = static_cast<std::size_t>(p1 - p);
    goto loop;
  }
done:
  return static_cast<std::size_t>(p - p0);
}

template <bool isRequest>
void Parser<isRequest>::put_eof(error_code& ec) {
  BOOST_ASSERT(got_some());
  if (state_ == state::start_line || state_ == state::fields) {
    ec = error::partial_message;
    return;
  }
  if (f_ & (flagContentLength | flagChunked)) {
    if (state_ != state::complete) {
      ec = error::partial_message;
      return;
    }
    ec = {};
    return;
  }
  ec = {};
  this->on_finish_impl(ec);
  if (ec) return;
  state_ = state::complete;
}

template <bool isRequest>
void Parser<isRequest>::maybe_need_more(const char* p, std::size_t n, error_code& ec) {
  if (skip_ == 0) return;
  if (n > header_limit_) n = header_limit_;
  if (n < skip_ + 4) {
    ec = error::need_more;
    return;
  }
  const char* const term = find_eom(p + skip_, p + n);
  if (!term) {
    skip_ = n - 3;
    if (skip_ + 4 > header_limit_) {
      ec = error::header_limit;
      return;
    }
    ec = error::need_more;
    return;
  }
  skip_ = 0;
}

template <bool isRequest>
void Parser<isRequest>::parse_start_line(const char*& in, const char* last, error_code& ec,
                                         std::true_type) {
  // request-line = method SP request-target SP HTTP-version CRLF
  const char* p = in;
  string_view method;
  parse_method(p, last, method, ec);
  if (ec) return;
  string_view target;
  parse_target(p, last, target, ec);
  if (ec) return;
  int version = 0;
  parse_version(p, last, version, ec);
  if (ec) return;
  if (version < 10 || version > 11) {
    ec = error::bad_version;
    return;
  }
  if (p + 2 > last) {
    ec = error::need_more;
    return;
  }
  if (p[0] != '\r' || p[1] != '\n') {
    ec = error::bad_version;
    return;
  }
  p += 2;
  if (version >= 11) f_ |= flagHTTP11;
  this->on_request_impl(boost::beast::http::string_to_verb(method), method, target, version, ec);
  if (ec) return;
  in = p;
  state_ = state::fields;
}

template <bool isRequest>
void Parser<isRequest>::parse_start_line(const char*& in, const char* last, error_code& ec,
                                         std::false_type) {
  // status-line = HTTP-version SP status-code SP reason-phrase CRLF
  const char* p = in;
  int version = 0;
  parse_version(p, last, version, ec);
  if (ec) return;
  if (version < 10 || version > 11) {
    ec = error::bad_version;
    return;
  }
  if (p + 1 > last) {
    ec = error::need_more;
    return;
  }
  if (*p++ != ' ') {
    ec = error::bad_version;
    return;
  }
  parse_status(p, last, status_, ec);
  if (ec) return;
  string_view reason;
  parse_reason(p, last, reason, ec);
  if (ec) return;
  if (version >= 11) f_ |= flagHTTP11;
  this->on_response_impl(status_, reason, version, ec);
  if (ec) return;
  in = p;
  state_ = state::fields;
}

template <bool isRequest>
void Parser<isRequest>::parse_fields(const char*& in, const char* last, error_code& ec) {
  string_view name;
  string_view value;
  FoldBuffer buf;
  const char* p = in;
  for (;;) {
    if (p + 2 > last) {
      ec = error::need_more;
      return;
    }
    if (p[0] == '\r') {
      if (p[1] != '\n') ec = error::bad_line_ending;
      in = p + 2;
      return;
    }
    parse_field(p, last, name, value, buf, ec);
    if (ec) return;
    // The line is name ": " value CRLF exactly (field_line()): the value right after ": "
    // (not in the fold buffer) and the line's CRLF right after the value. (The name is always
    // followed by ':'; a line ends with CRLF: parse_field takes no bare LF.)
    const char* const name_end = name.data() + name.size();
    field_line_ok_ =
        value.data() == name_end + 2 && name_end[1] == ' ' && value.data() + value.size() + 2 == p;
    const field f = lookup_field(name);
    // Only these fields frame the message; for the others Beast's do_field just clears ec,
    // which is clear here.
    if (f == field::connection || f == field::proxy_connection || f == field::content_length ||
        f == field::transfer_encoding || f == field::upgrade) {
      do_field(f, value, ec);
      if (ec) return;
    }
    this->on_field_impl(f, name, value, ec);
    if (ec) return;
    in = p;
  }
}

template <bool isRequest>
void Parser<isRequest>::finish_header(error_code& ec, std::true_type) {
  // RFC 7230 section 3.3
  if (f_ & flagSkipBody) {
    state_ = state::complete;
  } else if (f_ & flagContentLength) {
    if (body_limit_.has_value() && len_ > body_limit_) {
      ec = error::body_limit;
      return;
    }
    if (len_ > 0) {
      f_ |= flagHasBody;
      state_ = state::body0;
    } else {
      state_ = state::complete;
    }
  } else if (f_ & flagChunked) {
    f_ |= flagHasBody;
    state_ = state::chunk_header0;
  } else {
    len_ = 0;
    len0_ = 0;
    state_ = state::complete;
  }
  ec = {};
  this->on_header_impl(ec);
  if (ec) return;
  if (state_ == state::complete) this->on_finish_impl(ec);
}

template <bool isRequest>
void Parser<isRequest>::finish_header(error_code& ec, std::false_type) {
  // RFC 7230 section 3.3
  if ((f_ & flagSkipBody) ||  // e.g. response to a HEAD request
      status_ / 100 == 1 ||   // 1xx e.g. Continue
      status_ == 204 ||       // No Content
      status_ == 304) {       // Not Modified
    // Content-Length may be present, but the message has no body (Beast's issue 692).
    state_ = state::complete;
  } else if (f_ & flagContentLength) {
    if (len_ > 0) {
      f_ |= flagHasBody;
      state_ = state::body0;
      if (body_limit_.has_value() && len_ > body_limit_) {
        ec = error::body_limit;
        return;
      }
    } else {
      state_ = state::complete;
    }
  } else if (f_ & flagChunked) {
    f_ |= flagHasBody;
    state_ = state::chunk_header0;
  } else {
    f_ |= flagHasBody;
    f_ |= flagNeedEOF;
    state_ = state::body_to_eof0;
  }
  ec = {};
  this->on_header_impl(ec);
  if (ec) return;
  if (state_ == state::complete) this->on_finish_impl(ec);
}

template <bool isRequest>
void Parser<isRequest>::parse_body(const char*& p, std::size_t n, error_code& ec) {
  ec = {};
  n = this->on_body_impl(string_view{p, clamp(len_, n)}, ec);
  p += n;
  len_ -= n;
  if (ec) return;
  if (len_ > 0) return;
  this->on_finish_impl(ec);
  if (ec) return;
  state_ = state::complete;
}

template <bool isRequest>
void Parser<isRequest>::parse_body_to_eof(const char*& p, std::size_t n, error_code& ec) {
  if (body_limit_.has_value()) {
    if (n > *body_limit_) {
      ec = error::body_limit;
      return;
    }
    *body_limit_ -= n;
  }
  ec = {};
  n = this->on_body_impl(string_view{p, n}, ec);
  p += n;
}

template class Parser<true>;
template class Parser<false>;

}  // namespace parser_simd / parser_scalar
}  // namespace llmux::http
