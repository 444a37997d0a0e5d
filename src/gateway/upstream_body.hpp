// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading a backend's response body without holding buffers while it waits (gateway/relay.cpp):
// the parser is given what its read buffer holds before anything is read; when it needs bytes it
// does not have, what is left is an incomplete piece (a chunk-size line, a chunk's closing CRLF),
// which a few bytes keep aside while the read buffer is freed for the wait.
//
// Plain functions on the response parser (gateway/upstream_response.hpp) and flat_buffer; no I/O.
// Tested with random bodies cut at random points (tests/unit/gateway/upstream_body_test.cpp).
#include <cstddef>
#include <cstdint>

#include <boost/beast/core/flat_buffer.hpp>

#include "gateway/upstream_response.hpp"

namespace llmux::gateway {

using UpstreamParser = UpstreamResponse;

/// How feed() ended: body bytes came out, more bytes are needed, the message is complete, the
/// body buffer is full, or the bytes are not HTTP (`ec` says how).
enum class Fed { body, need_more, done, full, error };

/// Gives the parser what `input` holds (the parser's header already read), until body bytes come
/// out into the body buffer it was given (`parser.body_buffer()`), it needs more bytes than there
/// are, the message is complete, the body buffer is full, or the bytes are not HTTP. When it needs
/// more, what is left in `input` is an incomplete piece, never one it could parse.
Fed feed(UpstreamParser& parser, boost::beast::flat_buffer& input, boost::system::error_code& ec);

/// A few bytes the parser left unread, kept while a stream waits without a read buffer.
struct Leftover {
  char bytes[32];
  std::uint8_t size = 0;
};

/// Before an idle wait: when what `buf` holds fits `keep`, it moves there and `buf` is empty
/// (true), its memory the caller's to free or lend to another wait (the relay gives it to its
/// worker: Worker::take_back_read_buf); else nothing changes (false).
bool park(boost::beast::flat_buffer& buf, Leftover& keep);

/// After it: the kept bytes go back in front of what the next read brings.
void unpark(boost::beast::flat_buffer& buf, const Leftover& keep);

}  // namespace llmux::gateway
