// SPDX-License-Identifier: Apache-2.0
#pragma once
// The differential check of llmux::http::Parser against Beast's basic_parser (parser_fuzz.cpp,
// tests/unit/http/parser_test.cpp): the same bytes, fed the same way to a recording subclass of
// each, must give the same log: every callback with its arguments, every put()/put_eof() with
// the bytes it consumed and its error, and the getters after each call.
//
// Options (Options::decode reads them from the first 5 bytes of a fuzz input): request or
// response, eager, skip, header_limit, body_limit, how the input is cut into pieces, whether
// body callbacks take fewer bytes than offered (need_buffer, as buffer_body does) and whether a
// callback fails. A piece is fed as a real reader would: the unconsumed bytes are kept, the next
// piece appended, put() called again; put_eof() at the end of the input if the message is not
// done (when the parser got some bytes).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/optional.hpp>

#include "http/parser.hpp"

namespace llmux::parser_diff {

namespace bhttp = boost::beast::http;
using error_code = boost::beast::error_code;
using sv = boost::beast::string_view;

struct Options {
  bool request = true;
  bool eager = false;
  bool skip = false;
  std::optional<std::uint32_t> header_limit;                 // else the default
  std::optional<boost::optional<std::uint64_t>> body_limit;  // else the default; none: no limit
  std::uint32_t seed = 1;                                    // pieces and partial takes
  std::uint32_t piece = 0;    // 0: the whole input at once; else pieces of 1..piece bytes
  bool partial_take = false;  // body callbacks may take fewer bytes (need_buffer)
  int fail_at = -1;           // the callback (by number) that sets an error, -1: none
  bool two_buffers = false;   // put() given a sequence of two buffers (Beast flattens it)
  std::size_t split_at = 0;   // not 0: the first piece is this long, the second the rest

  /// Reads the options from the first bytes of `data` (consumed).
  static Options decode(const std::uint8_t*& data, std::size_t& size) {
    Options o;
    std::uint8_t b[5] = {};
    for (int i = 0; i < 5 && size > 0; ++i, ++data, --size) b[i] = *data;
    o.request = b[0] & 1;
    o.eager = b[0] & 2;
    o.skip = b[0] & 4;
    if (b[0] & 8) {
      static constexpr std::uint32_t limits[] = {0, 1, 4, 16, 20, 32, 48, 64, 100, 128, 200};
      o.header_limit = b[1] < 11 ? limits[b[1]] : b[1] * 8u;
    }
    if (b[0] & 16) {
      if (b[2] == 0)
        o.body_limit = boost::optional<std::uint64_t>{};
      else
        o.body_limit = boost::optional<std::uint64_t>{b[2] < 128 ? b[2] - 1u : (b[2] - 128u) * 97u};
    }
    o.partial_take = b[0] & 32;
    o.two_buffers = b[0] & 64;
    o.fail_at = (b[0] & 128) ? (b[4] & 31) : -1;
    o.piece = b[3] & 0x80 ? 0 : b[3];
    o.seed = 0x9e3779b9u ^ (b[3] * 2654435761u) ^ (b[4] << 8);
    return o;
  }
};

struct Rng {
  std::uint32_t s;
  std::uint32_t next() {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
  }
};

inline std::string show(const error_code& ec) {
  if (!ec) return "ok";
  return std::string(ec.category().name()) + ":" + std::to_string(ec.value());
}

inline std::string show_opt(const boost::optional<std::uint64_t>& v) {
  return v ? std::to_string(*v) : std::string("none");
}

/// A parser (Base: Parser<b> or basic_parser<b>) that logs every callback.
template <class Base>
class Recorder final : public Base {
 public:
  Recorder(std::string& log, const Options& o) : log_(log), o_(o), rng_{o.seed | 1} {}

  void on_request_impl(bhttp::verb method, sv method_str, sv target, int version,
                       error_code& ec) override {
    log_ += "request " + std::to_string(static_cast<int>(method)) + " [" + std::string(method_str) +
            "] [" + std::string(target) + "] " + std::to_string(version) + "\n";
    maybe_fail(ec);
  }
  void on_response_impl(int code, sv reason, int version, error_code& ec) override {
    log_ += "response " + std::to_string(code) + " [" + std::string(reason) + "] " +
            std::to_string(version) + "\n";
    maybe_fail(ec);
  }
  void on_field_impl(bhttp::field name, sv name_string, sv value, error_code& ec) override {
    log_ += "field " + std::to_string(static_cast<int>(name)) + " [" + std::string(name_string) +
            "] [" + std::string(value) + "]\n";
    maybe_fail(ec);
  }
  void on_header_impl(error_code& ec) override {
    log_ += "header\n";
    maybe_fail(ec);
  }
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         error_code& ec) override {
    log_ += "body_init " + show_opt(content_length) + "\n";
    maybe_fail(ec);
  }
  std::size_t on_body_impl(sv body, error_code& ec) override {
    const std::size_t n = take(body.size(), ec);
    log_ += "body [" + std::string(body) + "] took " + std::to_string(n) + "\n";
    maybe_fail(ec);
    return n;
  }
  void on_chunk_header_impl(std::uint64_t size, sv extensions, error_code& ec) override {
    log_ += "chunk_header " + std::to_string(size) + " [" + std::string(extensions) + "]\n";
    maybe_fail(ec);
  }
  std::size_t on_chunk_body_impl(std::uint64_t remain, sv body, error_code& ec) override {
    const std::size_t n = take(body.size(), ec);
    log_ += "chunk_body " + std::to_string(remain) + " [" + std::string(body) + "] took " +
            std::to_string(n) + "\n";
    maybe_fail(ec);
    return n;
  }
  void on_finish_impl(error_code& ec) override {
    log_ += "finish\n";
    maybe_fail(ec);
  }

  /// The getters (those Beast defines only once the header is done, only then).
  void log_state() {
    log_ += "state got_some=" + std::to_string(this->got_some()) +
            " header_done=" + std::to_string(this->is_header_done()) +
            " done=" + std::to_string(this->is_done()) + " eager=" + std::to_string(this->eager()) +
            " skip=" + std::to_string(this->skip());
    if (this->is_header_done()) {
      log_ += " keep_alive=" + std::to_string(this->keep_alive()) +
              " need_eof=" + std::to_string(this->need_eof()) +
              " chunked=" + std::to_string(this->chunked()) +
              " upgrade=" + std::to_string(this->upgrade()) +
              " content_length=" + show_opt(this->content_length()) +
              " remaining=" + show_opt(this->content_length_remaining());
    }
    log_ += "\n";
  }

 private:
  std::size_t take(std::size_t offered, error_code& ec) {
    if (!o_.partial_take || offered == 0 || rng_.next() % 3 != 0) return offered;
    ec = bhttp::error::need_buffer;
    return rng_.next() % offered;
  }
  void maybe_fail(error_code& ec) {
    if (events_++ == o_.fail_at && !ec) ec = boost::asio::error::operation_aborted;
  }

  std::string& log_;
  const Options& o_;
  Rng rng_;
  int events_ = 0;
};

/// Feeds `input` to a Recorder<Base> as `o` says; the log.
template <class Base>
std::string run(const Options& o, std::string_view input) {
  std::string log;
  Recorder<Base> p(log, o);
  p.eager(o.eager);
  p.skip(o.skip);
  if (o.header_limit) p.header_limit(*o.header_limit);
  if (o.body_limit) p.body_limit(*o.body_limit);
  Rng rng{o.seed | 1};
  std::string buf;
  std::size_t at = 0;  // input fed so far
  int calls = 0;
  for (;;) {
    if (at < input.size()) {
      std::size_t n = input.size() - at;
      if (o.split_at != 0 && at == 0)
        n = std::min(n, o.split_at);
      else if (o.piece != 0)
        n = std::min<std::size_t>(n, 1 + rng.next() % o.piece);
      buf.append(input.substr(at, n));
      at += n;
    } else {
      break;
    }
    // Parse what the buffer holds, as a reader does (need_buffer: the caller makes room).
    bool stop = false;
    while (!buf.empty()) {
      error_code ec;
      std::size_t used;
      if (o.two_buffers && buf.size() > 1) {
        const std::size_t half = buf.size() / 2;
        const std::array<boost::asio::const_buffer, 2> seq = {
            boost::asio::const_buffer{buf.data(), half},
            boost::asio::const_buffer{buf.data() + half, buf.size() - half}};
        used = p.put(seq, ec);
      } else {
        used = p.put(boost::asio::const_buffer(buf.data(), buf.size()), ec);
      }
      log += "put " + std::to_string(buf.size()) + " -> " + std::to_string(used) + " " + show(ec) +
             "\n";
      p.log_state();
      buf.erase(0, used);
      if (++calls > 100000) {
        log += "too many calls\n";
        return log;
      }
      if (ec == bhttp::error::need_more) break;
      if (ec == bhttp::error::need_buffer) continue;
      if (ec || p.is_done()) {
        stop = true;
        break;
      }
      if (used == 0) break;
    }
    if (stop) return log;
  }
  if (!p.is_done() && p.got_some()) {
    error_code ec;
    p.put_eof(ec);
    log += "eof " + show(ec) + "\n";
    p.log_state();
  }
  return log;
}

/// The logs of Beast's parser and of llmux's for the same input and options.
struct Both {
  std::string beast, llmux;
};

inline Both run_both(const Options& o, std::string_view input) {
  if (o.request)
    return {run<bhttp::basic_parser<true>>(o, input), run<llmux::http::Parser<true>>(o, input)};
  return {run<bhttp::basic_parser<false>>(o, input), run<llmux::http::Parser<false>>(o, input)};
}

}  // namespace llmux::parser_diff
