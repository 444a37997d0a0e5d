// SPDX-License-Identifier: Apache-2.0
#pragma once
// A backend's response as the relay needs it: llmux's HTTP/1.1 parser (http/message_parser.hpp)
// without a fields container. When the header is complete, its end-to-end fields are written
// into the header the client will get ("Name: value\r\n" each, in order): hop-by-hop fields (the
// fixed ones and those named by any Connection field) and the fields the gateway sets itself are
// left out. What the relay decides on (status, Content-Type, framing, keep-alive) is kept; the
// body goes into the buffer it is given (need_buffer when it is full).
//
// A response_parser<buffer_body> with its fields, then erasing the hop-by-hop fields and
// serialising the rest, allocated per field and walked the header three times; this copies
// each passing field once, and allocates nothing in the steady state (the header builder comes
// from the worker's pool; the parser's field tables go back to the thread once the header is
// written, so that a held-open stream holds none, and the next response takes them).
//
// Thread safety: one thread, like any parser.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>
#include "core/bytes.hpp"
#include "http/message_parser.hpp"

namespace llmux::gateway {

class UpstreamResponse {
 public:
  /// `header`: where the client's header goes (cleared first): a worker's pooled builder.
  /// Limits: 64 KiB of header, no limit on the body (a backend's answer is what it is).
  explicit UpstreamResponse(ByteBuilder header = {});

  /// Gives a parser back to this thread's spares when its owner is done with it.
  struct Recycle {
    void operator()(UpstreamResponse* response) const noexcept;
  };
  using Ptr = std::unique_ptr<UpstreamResponse, Recycle>;
  /// A parser for a new response, as the constructor makes it: one of this thread's spares when
  /// there is one (no allocation per response), else a new one.
  static Ptr make(ByteBuilder header);

  void header_limit(std::uint32_t bytes);
  void body_limit(std::optional<std::uint64_t> bytes);
  /// The response has no body whatever its header says (the answer to a HEAD request).
  void expect_no_body() { parser_.expect_no_body(); }

  /// Parses `input` (the unconsumed bytes of the connection's buffer, those of an earlier call
  /// that were not consumed first) and returns how many of them it consumed. It stops after the
  /// header (`error` clear, is_header_done()), then goes on with the body: it copies body bytes
  /// into the body buffer until the buffer is full (`error` http::error::need_buffer: the bytes
  /// that did not fit are not consumed), the input ends inside the message (http::error::
  /// need_more), or the message is complete (`error` clear). Another boost::beast::http::error
  /// when the bytes are not a response it accepts.
  std::size_t put(std::string_view input, boost::system::error_code& error);
  /// The backend closed: the end of a body that runs until the close, else
  /// error::partial_message (or error::end_of_stream before any byte).
  void put_eof(boost::system::error_code& error);

  bool got_some() const { return parser_.started(); }
  bool is_header_done() const { return parser_.header_done(); }
  bool is_done() const { return parser_.message_done() && pending_body_ == 0; }
  /// Whether the connection may carry another exchange after this response.
  bool keep_alive() const { return parser_.keep_alive(); }

  int status() const { return status_; }
  /// Set before the header is parsed: the gateway writes X-Llmux-Queue-Depth itself (as it
  /// always writes X-Llmux-Backend and X-Request-Id): the backend's is left out.
  void omit_queue_depth(bool omit) { omit_queue_depth_ = omit; }

  /// Once is_header_done(): the client's header so far, "HTTP/1.1 <status> <reason>\r\n" and
  /// the end-to-end fields ("Name: value\r\n" each); the caller adds its own fields and the
  /// blank line.
  ByteBuilder& header() { return header_; }
  /// Content-Type's value (a view into header(), valid while it is unchanged).
  std::string_view content_type() const {
    return header_.view().substr(content_type_at_, content_type_size_);
  }
  bool has_content_length() const { return parser_.content_length().has_value(); }
  /// The body is chunked (Transfer-Encoding ends in chunked).
  bool chunked() const { return parser_.chunked(); }

  /// Where the body's next bytes go (null: none may come; put() then stops with need_buffer).
  void body_buffer(char* data, std::size_t size) {
    body_ = data;
    room_ = size;
  }
  /// Room left in the body buffer.
  std::size_t body_room() const { return room_; }

 private:
  /// The header event: the client's header from the status line and the fields.
  void take_header();
  /// Copies what fits of `body` into the body buffer; the rest is pending (its bytes are at the
  /// front of the next put()'s input).
  void take_body(std::string_view body);
  /// A Connection field names other fields (rare): their lines are taken out of header_.
  void remove_named_fields(std::string_view connection);

  http::MessageParser parser_;
  ByteBuilder header_;
  std::uint32_t content_type_at_ = 0, content_type_size_ = 0;
  char* body_ = nullptr;
  std::size_t room_ = 0;
  /// Body bytes the parser has read that did not fit the body buffer: the caller still holds
  /// them at the front of its input (put() did not count them as consumed).
  std::size_t pending_body_ = 0;
  int status_ = 0;
  bool omit_queue_depth_ = false;
};

}  // namespace llmux::gateway
