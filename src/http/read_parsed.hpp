// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading an HTTP message with one of the gateway's message readers (gateway/request.hpp's
// RequestParser, gateway/upstream_response.hpp's UpstreamResponse: each puts llmux's
// http::MessageParser to its use) without Beast's composed read operations: what the connection's
// buffer holds is parsed at once, and the socket is read only when the parser needs more. Beast's
// async_read_header/async_read_some complete a read that needed no I/O through the scheduler (a
// post, so that the handler never runs inside the initiating call), which costs a scheduler hop, a
// handler allocation and the composed operation's machinery per call: for a small request, whose
// header and body came in one read, two hops per request. Awaited from a coroutine, a completion in
// place is safe, so none is needed here.
//
// Same results as Beast's: need_more never escapes; an EOF after some bytes of the message is
// given to the parser (put_eof: the end of a body delimited by the close, else partial_message),
// an EOF before any is http::error::end_of_stream.
//
// Thread safety and ownership: the caller's socket, buffer and parser, on the socket's thread;
// they must outlive the call.
#include <cstddef>
#include <tuple>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>

#include <concepts>
#include <string_view>

namespace llmux::http {

/// What the functions below need of a reader: put() parses the unconsumed bytes it is given and
/// says how many it consumed (error::need_more when the message goes on past them), put_eof()
/// is told the peer closed, and the reader says how far it got.
template <typename Reader>
concept MessageReader = requires(Reader& reader, const Reader& seen, std::string_view input,
                                 boost::system::error_code& error) {
  { reader.put(input, error) } -> std::same_as<std::size_t>;
  reader.put_eof(error);
  { seen.got_some() } -> std::same_as<bool>;
  { seen.is_header_done() } -> std::same_as<bool>;
  { seen.is_done() } -> std::same_as<bool>;
};

/// The readable bytes of `buffer`, as a view.
inline std::string_view unconsumed(const boost::beast::flat_buffer& buffer) {
  return {static_cast<const char*>(buffer.data().data()), buffer.size()};
}

/// What a read waits for: the header, or the whole message.
enum class Until { header, message };

/// Gives `reader` what `buf` holds (consumed as parsed) until `until` is reached (true), the parser
/// needs more bytes than there are (false, `ec` clear), or the bytes are not HTTP (true, `ec`).
template <MessageReader Reader>
bool parse_buffered(Reader& reader, boost::beast::flat_buffer& buf, Until until,
                    boost::system::error_code& ec) {
  auto reached = [&] {
    return until == Until::header ? reader.is_header_done() : reader.is_done();
  };
  if (reached()) return true;
  while (buf.size() > 0) {
    const std::size_t used = reader.put(unconsumed(buf), ec);
    buf.consume(used);
    if (ec == boost::beast::http::error::need_more) {
      ec = {};
      return reached();  // a reader may have parsed past the header before it ran out
    }
    if (ec || reached()) return true;
    if (used == 0) return false;
  }
  return false;
}

/// The end of a read of `bytes_read` bytes into `buf`'s prepared room that ended with `ec`: the
/// bytes are committed, and an EOF is given to `reader` as Beast does (put_eof when it got some
/// bytes, else http::error::end_of_stream). The result is the read's.
template <MessageReader Reader>
boost::system::error_code read_ended(boost::beast::flat_buffer& buf, Reader& reader,
                                     std::size_t bytes_read, boost::system::error_code ec) {
  buf.commit(bytes_read);
  if (ec == boost::asio::error::eof && bytes_read == 0) {
    if (!reader.got_some()) return boost::beast::http::error::end_of_stream;
    ec = {};
    reader.put_eof(ec);  // the end of a body delimited by the close, else partial_message
  }
  return ec;
}

/// The room for one read into `buf`: `max_read` bytes when `exactly`, else beast::read_size.
inline boost::asio::mutable_buffer read_room(boost::beast::flat_buffer& buf, std::size_t max_read,
                                             bool exactly) {
  return buf.prepare(exactly ? max_read : boost::beast::read_size(buf, max_read));
}

/// read_more() without waiting, on an http::Stream: reads what has arrived (Stream::read_now).
/// True when the read ended (`ec` its result, as read_more's); false when nothing has arrived
/// (then read_more() waits for it). A message that is there already costs no coroutine frame.
template <typename ReadStream, MessageReader Reader>
bool try_read_more(ReadStream& sock, boost::beast::flat_buffer& buf, Reader& reader,
                   std::size_t max_read, bool exactly, boost::system::error_code& ec) {
  ec = {};
  if (!sock.may_read_now()) return false;
  const std::size_t bytes_read = sock.read_now(read_room(buf, max_read, exactly), ec);
  if (bytes_read == 0 && !ec) return false;
  ec = read_ended(buf, reader, bytes_read, ec);
  return true;
}

/// One read from `sock` (a tcp::socket or an http::Stream) into `buf` (up to `max_read` bytes,
/// beast::read_size; `exactly`: room for `max_read` bytes), for a parser that needs more: an EOF is
/// given to `reader` as Beast does (put_eof when it got some bytes, else
/// http::error::end_of_stream). The bytes read are left in `buf` for parse_buffered().
template <typename ReadStream, MessageReader Reader>
boost::asio::awaitable<boost::system::error_code> read_more(ReadStream& sock,
                                                            boost::beast::flat_buffer& buf,
                                                            Reader& reader,
                                                            std::size_t max_read = 64 * 1024,
                                                            bool exactly = false) {
  boost::system::error_code ec;
  std::size_t bytes_read = 0;
  if constexpr (requires { sock.read_now(buf.prepare(0), ec); }) {
    // An http::Stream: what has arrived is read at once; else (or when the socket is known to be
    // drained) the read waits for epoll's next event without a system call first.
    if (try_read_more(sock, buf, reader, max_read, exactly, ec)) co_return ec;
    const auto room = read_room(buf, max_read, exactly);
    std::tie(ec, bytes_read) =
        co_await sock.async_read_some(room, boost::asio::as_tuple(boost::asio::use_awaitable));
    co_return read_ended(buf, reader, bytes_read, ec);
  } else {
    std::tie(ec, bytes_read) = co_await sock.async_read_some(
        read_room(buf, max_read, exactly), boost::asio::as_tuple(boost::asio::use_awaitable));
  }
  co_return read_ended(buf, reader, bytes_read, ec);
}

/// read_parsed() without waiting, on an http::Stream: parses what `buf` holds and reads what has
/// arrived until `until` is reached or an error (true, `ec` the result, as read_parsed's), or until
/// a read would wait (false: then co_await read_parsed(), which goes on from there).
template <typename ReadStream, MessageReader Reader>
bool try_read_parsed(ReadStream& sock, boost::beast::flat_buffer& buf, Reader& reader, Until until,
                     boost::system::error_code& ec, std::size_t max_read = 64 * 1024) {
  while (!parse_buffered(reader, buf, until, ec)) {
    if (!try_read_more(sock, buf, reader, max_read, false, ec)) return false;
    if (ec || reader.is_done()) return true;
  }
  return true;
}

/// Reads and parses with `reader` until `until` is reached or an error (the result).
template <typename ReadStream, MessageReader Reader>
boost::asio::awaitable<boost::system::error_code> read_parsed(ReadStream& sock,
                                                              boost::beast::flat_buffer& buf,
                                                              Reader& reader, Until until,
                                                              std::size_t max_read = 64 * 1024) {
  boost::system::error_code ec;
  while (!parse_buffered(reader, buf, until, ec)) {
    ec = co_await read_more(sock, buf, reader, max_read);
    if (ec || reader.is_done()) co_return ec;
  }
  co_return ec;
}

}  // namespace llmux::http
