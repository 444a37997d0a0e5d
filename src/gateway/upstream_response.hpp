// SPDX-License-Identifier: Apache-2.0
#pragma once
// A backend's response as the relay needs it: llmux's HTTP/1 parser (http/parser.hpp, Beast's
// basic_parser's drop-in) without a fields container. As the header is parsed, its end-to-end
// fields are written straight into the header the client will get ("Name: value\r\n" each, in
// order): hop-by-hop fields (the fixed ones and those named by any Connection field) and the fields
// the gateway sets itself are left out. What the relay decides on (status, Content-Type, framing,
// keep-alive) is kept; the body goes into the buffer it is given, as with Beast's buffer_body
// (need_buffer when it is full).
//
// A response_parser<buffer_body> with its fields, then erasing the hop-by-hop fields and
// serialising the rest, allocated per field and walked the header three times; this copies
// each passing field once, as it is parsed, and allocates nothing in the steady state (the
// header builder comes from the worker's pool). Only a Connection field naming other fields (rare)
// makes it take their lines out again when the header is complete.
//
// Thread safety: one thread, like any parser.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <boost/beast/core/string.hpp>
#include "core/bytes.hpp"
#include "http/parser.hpp"

namespace llmux::gateway {

class UpstreamResponse final : public llmux::http::Parser<false> {
 public:
  /// `header`: where the client's header goes (cleared first): a worker's pooled builder.
  explicit UpstreamResponse(ByteBuilder header = {});

  /// Gives a parser back to this thread's spares when its owner is done with it.
  struct Recycle {
    void operator()(UpstreamResponse* p) const noexcept;
  };
  using Ptr = std::unique_ptr<UpstreamResponse, Recycle>;
  /// A parser for a new response, as the constructor makes it: one of this thread's spares when
  /// there is one (no allocation per response), else a new one.
  static Ptr make(ByteBuilder header);

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
  bool has_content_length() const { return has_content_length_; }

  /// Where the body's next bytes go (null: none may come; put() then stops with need_buffer).
  void body_buffer(char* data, std::size_t size) {
    body_ = data;
    room_ = size;
  }
  /// Room left in the body buffer.
  std::size_t body_room() const { return room_; }

 private:
  using error_code = boost::system::error_code;
  using sv = boost::beast::string_view;  // Beast's (boost::core::string_view in 1.81)
  void on_request_impl(boost::beast::http::verb, sv, sv, int, error_code&) override {}
  void on_response_impl(int code, sv reason, int version, error_code&) override;
  void on_field_impl(boost::beast::http::field name, sv name_string, sv value,
                     error_code&) override;
  void on_header_impl(error_code&) override;
  void on_body_init_impl(boost::optional<std::uint64_t> const&, error_code&) override {}
  std::size_t on_body_impl(sv body, error_code& ec) override { return put_body(body, ec); }
  void on_chunk_header_impl(std::uint64_t, sv, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, sv body, error_code& ec) override {
    return put_body(body, ec);
  }
  void on_finish_impl(error_code&) override {}
  std::size_t put_body(sv body, error_code& ec);

  ByteBuilder header_;
  std::string connection_;  // the values of the Connection fields, joined (usually empty)
  std::uint32_t content_type_at_ = 0, content_type_size_ = 0;
  char* body_ = nullptr;
  std::size_t room_ = 0;
  int status_ = 0;
  bool has_content_length_ = false;
  bool omit_queue_depth_ = false;
};

}  // namespace llmux::gateway
