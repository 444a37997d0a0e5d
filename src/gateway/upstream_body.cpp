// SPDX-License-Identifier: Apache-2.0
#include "gateway/upstream_body.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include <boost/beast/http/error.hpp>

namespace llmux::gateway {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

/// Gives the parser what its read buffer holds, until body bytes come out (into the body
/// buffer it was given), it needs more bytes than there are, the message is complete, the body
/// buffer is full, or the bytes are not HTTP (`ec`). When it needs more, what is left in `input` is
/// an incomplete piece (a chunk header or its closing CRLF), never one it could parse.
Fed feed(UpstreamParser& parser, beast::flat_buffer& input, boost::system::error_code& ec) {
  const std::size_t room = parser.body_room();
  while (input.size() > 0) {
    const std::size_t used = parser.put(
        std::string_view(static_cast<const char*>(input.data().data()), input.size()), ec);
    input.consume(used);
    if (ec == bhttp::error::need_more) {
      // Everything the bytes held went out: body bytes (the caller takes them before it reads),
      // or none.
      ec = {};
      return parser.body_room() != room ? Fed::body : Fed::need_more;
    }
    if (ec == bhttp::error::need_buffer) {
      ec = {};
      return Fed::full;
    }
    if (ec) return Fed::error;
    if (parser.is_done()) return Fed::done;
    if (parser.body_room() != room) return Fed::body;
    if (used == 0) break;
  }
  return Fed::need_more;
}

/// Before an idle wait: the parser's read buffer is emptied when what it holds fits `keep`.
bool park(beast::flat_buffer& buf, Leftover& keep) {
  if (buf.size() > sizeof keep.bytes) return false;
  keep.size = static_cast<std::uint8_t>(buf.size());
  if (keep.size > 0) std::memcpy(keep.bytes, buf.data().data(), keep.size);
  buf.consume(buf.size());
  return true;
}

/// After it: the bytes go back in front of what the next read brings.
void unpark(beast::flat_buffer& buf, const Leftover& keep) {
  if (keep.size == 0) return;
  // Room for the next read too: one allocation.
  std::memcpy(buf.prepare(std::max<std::size_t>(512, keep.size)).data(), keep.bytes, keep.size);
  buf.commit(keep.size);
}

}  // namespace llmux::gateway
