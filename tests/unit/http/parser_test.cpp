// SPDX-License-Identifier: Apache-2.0
// llmux::http::Parser (src/http/parser.hpp) against Beast's basic_parser on a table of inputs
// (tests/fuzz/parser_diff.hpp: the same bytes fed the same way must give the same callbacks,
// bytes consumed, errors and getters), a few cases with the expected values written out, and the
// scans against their one-byte-at-a-time definitions. Built twice: parser_test (the SIMD scans
// where the build has them) and parser_scalar_test (-DLLMUX_NO_SIMD, the portable fallback).
#include <gtest/gtest.h>

#include <boost/optional/optional_io.hpp>

#include <cctype>
#include <string>
#include <vector>

#include "http/parser.hpp"
#include "http/parser_impl.hpp"
#include "http/parser_scan.hpp"
#include "parser_diff.hpp"

namespace {

using llmux::parser_diff::Options;
using llmux::parser_diff::run_both;
namespace bhttp = boost::beast::http;

struct Case {
  const char* name;
  bool request;
  std::string wire;
};

std::string chunked_body(std::size_t total, std::size_t chunk) {
  std::string out;
  char size[32];
  for (std::size_t at = 0; at < total; at += chunk) {
    const std::size_t n = std::min(chunk, total - at);
    std::snprintf(size, sizeof size, "%zx", n);
    out += size;
    out += at == 0 ? ";first=\"yes\"\r\n" : "\r\n";
    for (std::size_t i = 0; i < n; ++i) out += static_cast<char>('a' + (at + i) % 26);
    out += "\r\n";
  }
  return out + "0\r\nX-Trailer: done\r\n\r\n";
}

std::vector<Case> cases() {
  std::vector<Case> c = {
      {"get", true, "GET /v1/models HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n"},
      {"post", true,
       "POST /v1/chat/completions HTTP/1.1\r\nHost: llmux:8080\r\nUser-Agent: curl/8.5.0\r\n"
       "Authorization: Bearer sk-1234567890abcdef\r\nContent-Type: application/json\r\n"
       "Content-Length: 16\r\nConnection: keep-alive\r\n\r\n{\"model\":\"abc\"}\n"},
      {"http10", true, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
      {"http10_close", true, "GET / HTTP/1.0\r\n\r\n"},
      {"connection_list", true, "GET / HTTP/1.1\r\nConnection: close, Upgrade ,x\r\n\r\n"},
      {"connection_bad", true, "GET / HTTP/1.1\r\nConnection: a b\r\n\r\n"},
      {"proxy_connection", true, "GET / HTTP/1.1\r\nProxy-Connection: CLOSE\r\n\r\n"},
      {"upgrade", true, "GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"},
      {"cl_list_equal", true, "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\nabcde"},
      {"cl_list_differ", true, "POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\nabcde"},
      {"cl_twice_differ", true,
       "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"},
      {"cl_empty_item", true, "POST / HTTP/1.1\r\nContent-Length: 5,,5\r\n\r\nabcde"},
      {"cl_bad", true, "POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\nabcde"},
      {"cl_plus", true, "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\nabcde"},
      {"cl_overflow", true, "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"},
      {"cl_then_te", true,
       "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"te_then_cl", true,
       "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"},
      {"te_not_last", true, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"},
      {"te_twice", true, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"},
      {"te_dup_field", true,
       "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"chunked_trailer", true,
       "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n5;a=b ; "
       "c=\"d\\\"e\"\r\nhello\r\n"
       "0;z\r\nX-Sum: 1\r\nX-Fold: a\r\n b\r\n\r\n"},
      {"chunk_bad_size", true, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"},
      {"chunk_bad_crlf", true, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"},
      {"chunk_bad_ext", true, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1 ;=\r\na\r\n"},
      {"obs_fold", true,
       "GET / HTTP/1.1\r\nX-A: one\r\n two \r\n\tthree\r\nX-B:\r\n  \r\n x\r\nX-C: \r\n\r\n"},
      {"obs_fold_too_long", true,
       "GET / HTTP/1.1\r\nX-A: " + std::string(3000, 'a') + "\r\n " + std::string(3000, 'b') +
           "\r\n\r\n"},
      {"bad_method", true, "G(T / HTTP/1.1\r\n\r\n"},
      {"bad_target", true, "GET /\x7f HTTP/1.1\r\n\r\n"},
      {"bad_version", true, "GET / HTTP/2.0\r\n\r\n"},
      {"bad_field_name", true, "GET / HTTP/1.1\r\nX Y: z\r\n\r\n"},
      {"empty_field_name", true, "GET / HTTP/1.1\r\n: z\r\n\r\n"},
      {"bad_value", true, "GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n"},
      {"bare_lf", true, "GET / HTTP/1.1\r\nX: a\nY: b\r\n\r\n"},
      {"bad_line_ending", true, "GET / HTTP/1.1\r\nX: a\rY\r\n\r\n"},
      {"end_bad", true, "GET / HTTP/1.1\r\nX: a\r\n\rZ"},
      {"ows", true, "GET / HTTP/1.1\r\nX-A:\t a \t\r\nX-B:  \t\r\nX-C:b\r\n\r\n"},
      {"high_bytes", true, "GET /\xc3\xa9 HTTP/1.1\r\nX: \xff\xfe\t\x80\r\n\r\n"},
      {"response_length", false,
       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
       "11\r\n\r\n{\"ok\":true}"},
      {"response_close", false, "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nuntil the close"},
      {"response_http10", false, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi"},
      {"response_100", false, "HTTP/1.1 100 Continue\r\n\r\n"},
      {"response_101", false, "HTTP/1.1 101 Switching\r\nConnection: Upgrade\r\n\r\n"},
      {"response_204", false, "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"},
      {"response_304", false, "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"response_te_gzip", false, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzzz"},
      {"response_empty_reason", false, "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n"},
      {"response_bad_status", false, "HTTP/1.1 2x0 OK\r\n\r\n"},
      {"response_bad_reason", false, "HTTP/1.1 200 O\x01K\r\n\r\n"},
      {"response_partial", false, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"},
      {"response_partial_header", false, "HTTP/1.1 200 OK\r\nContent-Le"},
      {"response_sse", false,
       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
       "1a\r\ndata: {\"delta\":\"hello\"}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"},
      {"response_big_chunked", false,
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked_body(100 * 1024, 8000)},
      {"response_big_length", false,
       "HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n" + std::string(70000, 'q')},
  };
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 300; ++i)
    many += "X-Field-" + std::to_string(i) + ": value " + std::to_string(i) + "\r\n";
  c.push_back({"long_header", true, many + "\r\n"});
  return c;
}

std::vector<Options> option_sets(bool request) {
  std::vector<Options> out;
  for (const bool eager : {false, true}) {
    for (const std::uint32_t piece : {0u, 1u, 3u, 17u, 4096u}) {
      Options o;
      o.request = request;
      o.eager = eager;
      o.piece = piece;
      o.seed = 7 + piece;
      out.push_back(o);
    }
  }
  Options o;
  o.request = request;
  o.eager = true;
  o.partial_take = true;
  o.piece = 5;
  out.push_back(o);
  o.two_buffers = true;
  o.piece = 50;
  out.push_back(o);
  o = Options{};
  o.request = request;
  o.skip = true;
  out.push_back(o);
  for (const std::uint32_t limit : {0u, 10u, 30u, 64u, 8192u}) {
    o = Options{};
    o.request = request;
    o.eager = true;
    o.header_limit = limit;
    o.body_limit = boost::optional<std::uint64_t>(limit);
    out.push_back(o);
  }
  o = Options{};
  o.request = request;
  o.eager = true;
  o.header_limit = 1024 * 1024;
  o.body_limit = boost::optional<std::uint64_t>{};
  o.piece = 4096;
  out.push_back(o);
  for (int fail = 0; fail < 6; ++fail) {
    o = Options{};
    o.request = request;
    o.eager = true;
    o.fail_at = fail;
    out.push_back(o);
  }
  return out;
}

TEST(Parser, SameAsBeastOnTheTable) {
  for (const Case& c : cases()) {
    int n = 0;
    for (const Options& o : option_sets(c.request)) {
      const auto logs = run_both(o, c.wire);
      ASSERT_EQ(logs.beast, logs.llmux) << c.name << " with option set " << n;
      ++n;
    }
  }
}

TEST(Parser, SameAsBeastWithTheHeaderSplitAtEveryByte) {
  for (const Case& c : cases()) {
    if (c.wire.size() > 600) continue;
    for (std::size_t at = 1; at < c.wire.size(); ++at) {
      for (const bool eager : {false, true}) {
        Options o;
        o.request = c.request;
        o.eager = eager;
        o.split_at = at;
        const auto logs = run_both(o, c.wire);
        ASSERT_EQ(logs.beast, logs.llmux) << c.name << " split at " << at;
      }
    }
  }
}

/// A parser that keeps what the hand-written expectations look at.
template <bool isRequest>
struct Kept final : llmux::http::Parser<isRequest> {
  using ec_t = boost::beast::error_code;
  using sv = boost::beast::string_view;
  std::vector<std::string> fields;
  std::vector<std::string> lines;  // field_line() of each field ("-" when it gave none)
  std::string body;
  int status = 0;
  bool finished = false;
  void on_request_impl(bhttp::verb, sv, sv, int, ec_t&) override {}
  void on_response_impl(int code, sv, int, ec_t&) override { status = code; }
  void on_field_impl(bhttp::field, sv name, sv value, ec_t&) override {
    fields.push_back(std::string(name) + "=" + std::string(value));
    const sv line = this->field_line(name, value);
    lines.push_back(line.empty() ? "-" : std::string(line));
  }
  void on_header_impl(ec_t&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, ec_t&) override {}
  std::size_t on_body_impl(sv b, ec_t&) override {
    body += b;
    return b.size();
  }
  void on_chunk_header_impl(std::uint64_t, sv, ec_t&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, sv b, ec_t&) override {
    body += b;
    return b.size();
  }
  void on_finish_impl(ec_t&) override { finished = true; }
};

template <bool isRequest>
boost::beast::error_code put_all(Kept<isRequest>& p, std::string_view wire) {
  p.eager(true);
  boost::beast::error_code ec;
  const std::size_t used = p.put(boost::asio::buffer(wire.data(), wire.size()), ec);
  EXPECT_TRUE(ec || used == wire.size()) << used;
  return ec;
}

TEST(Parser, FieldLineIsTheLineOnlyWhenItIsExactlyNameColonSpaceValueCrlf) {
  // A callback copies field_line() instead of name ": " value CRLF (the gateway's header
  // building): it must be given only where the two are the same bytes.
  Kept<false> p;
  ASSERT_FALSE(put_all(p,
                       "HTTP/1.1 200 OK\r\nA: 1\r\nB:2\r\nC:  3\r\nD: 4 \r\nE: \r\n"
                       "F: x\r\n y\r\nG:\t5\r\nH: six words here\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_TRUE(p.is_done());
  const std::vector<std::string> want = {"A: 1\r\n",
                                         "-",
                                         "-",
                                         "-",
                                         "E: \r\n",
                                         "-",
                                         "-",
                                         "H: six words here\r\n",
                                         "Content-Length: 0\r\n"};
  EXPECT_EQ(p.lines, want);
  for (std::size_t i = 0; i < p.lines.size(); ++i) {
    if (p.lines[i] == "-") continue;
    const auto eq = p.fields[i].find('=');  // the line is exactly the pieces joined
    EXPECT_EQ(p.lines[i], p.fields[i].substr(0, eq) + ": " + p.fields[i].substr(eq + 1) + "\r\n");
  }
}

TEST(Parser, ContentLengthListOfEqualValuesIsOneLength) {
  Kept<true> p;
  EXPECT_FALSE(put_all(p, "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\nabcde"));
  EXPECT_TRUE(p.is_done());
  EXPECT_EQ(p.content_length(), boost::optional<std::uint64_t>(5));
  EXPECT_EQ(p.body, "abcde");
}

TEST(Parser, DifferingContentLengthsAreMultipleContentLength) {
  Kept<true> p;
  EXPECT_EQ(put_all(p, "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
            bhttp::error::multiple_content_length);
  Kept<true> q;
  EXPECT_EQ(put_all(q, "POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n"),
            bhttp::error::multiple_content_length);
}

TEST(Parser, ContentLengthAndTransferEncodingConflict) {
  Kept<true> p;
  EXPECT_EQ(
      put_all(p, "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
      bhttp::error::bad_transfer_encoding);
  Kept<true> q;
  EXPECT_EQ(
      put_all(q, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"),
      bhttp::error::bad_content_length);
}

TEST(Parser, ChunkedNotLastMakesAResponseCloseDelimited) {
  Kept<false> p;
  EXPECT_FALSE(put_all(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nxyz"));
  EXPECT_TRUE(p.is_header_done());
  EXPECT_FALSE(p.chunked());
  EXPECT_TRUE(p.need_eof());
  EXPECT_FALSE(p.keep_alive());
  EXPECT_EQ(p.body, "xyz");
  boost::beast::error_code ec;
  p.put_eof(ec);
  EXPECT_FALSE(ec);
  EXPECT_TRUE(p.is_done());
  // Beast 1.81 reads a request whose Transfer-Encoding does not end in chunked as one without
  // a body (not as an error).
  Kept<true> q;
  EXPECT_FALSE(put_all(q, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"));
  EXPECT_TRUE(q.is_done());
}

TEST(Parser, NoBodyFor204And304AndSkip) {
  for (const char* wire : {"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
                           "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"}) {
    Kept<false> p;
    EXPECT_FALSE(put_all(p, wire));
    EXPECT_TRUE(p.is_done()) << wire;
    EXPECT_TRUE(p.finished);
  }
  Kept<false> head;
  head.skip(true);
  EXPECT_FALSE(put_all(head, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"));
  EXPECT_TRUE(head.is_done());
}

TEST(Parser, ObsFoldJoinsLinesWithOneSpace) {
  Kept<true> p;
  EXPECT_FALSE(put_all(p, "GET / HTTP/1.1\r\nX-A: one\r\n two \r\n\tthree\r\nX-B: b\r\n\r\n"));
  EXPECT_EQ(p.fields, (std::vector<std::string>{"X-A=one two three", "X-B=b"}));
}

TEST(Parser, AnIncompleteHeaderConsumesTheLinesParsed) {
  Kept<true> p;
  boost::beast::error_code ec;
  const std::string_view wire = "GET / HTTP/1.1\r\nHost: a\r\nX-Partial: b";
  EXPECT_EQ(p.put(boost::asio::buffer(wire.data(), wire.size()), ec), 25u);  // start line, Host
  EXPECT_EQ(ec, bhttp::error::need_more);
  EXPECT_EQ(p.fields, (std::vector<std::string>{"Host=a"}));
}

TEST(Parser, Http10KeepAliveRules) {
  Kept<true> a;
  EXPECT_FALSE(put_all(a, "GET / HTTP/1.0\r\n\r\n"));
  EXPECT_FALSE(a.keep_alive());
  Kept<true> b;
  EXPECT_FALSE(put_all(b, "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
  EXPECT_TRUE(b.keep_alive());
  Kept<true> c;
  EXPECT_FALSE(put_all(c, "GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n"));
  EXPECT_FALSE(c.keep_alive());
}

TEST(Parser, Limits) {
  Kept<true> p;
  p.header_limit(20);
  EXPECT_EQ(put_all(p, "GET / HTTP/1.1\r\nHost: a-long-host-name\r\n\r\n"),
            bhttp::error::header_limit);
  Kept<true> q;
  q.body_limit(4);
  EXPECT_EQ(put_all(q, "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde"),
            bhttp::error::body_limit);
  Kept<false> r;
  EXPECT_FALSE(put_all(r, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"));
  boost::beast::error_code ec;
  r.put_eof(ec);
  EXPECT_EQ(ec, bhttp::error::partial_message);
}

TEST(Parser, BuildUsesTheExpectedScans) {
#if defined(LLMUX_NO_SIMD) || !defined(__SSE2__)
  EXPECT_FALSE(llmux::http::parser_uses_simd());
#else
  EXPECT_TRUE(llmux::http::parser_uses_simd());
#endif
}

// Every byte value at every position of a buffer, with a tail shorter than 16 bytes after it.
TEST(ParserScan, EveryByteAtEveryPosition) {
  namespace d = llmux::http::parser_detail;
  for (int c = 0; c < 256; ++c) {
    for (std::size_t len : {1u, 15u, 16u, 17u, 40u}) {
      for (std::size_t at = 0; at < len; ++at) {
        std::string s(len, 'a');
        s[at] = static_cast<char>(c);
        const char* b = s.data();
        const char* e = b + s.size();
        const auto uc = static_cast<unsigned char>(c);
        const bool token = d::tables.token[uc];
        EXPECT_EQ(d::find_non_token(b, e), token ? e : b + at) << c << " " << at;
        EXPECT_EQ(d::find_non_path(b, e), d::tables.not_path[uc] ? b + at : e) << c;
        EXPECT_EQ(d::find_value_stop(b, e), d::tables.value_stop[uc] ? b + at : e) << c;
        EXPECT_EQ(d::find_cr(b, e), c == '\r' ? b + at : e) << c;
        EXPECT_EQ(token, boost::beast::http::detail::is_token_char(static_cast<char>(c)) != 0);
      }
    }
  }
}

// lookup_field is Beast's string_to_field: every name, in other cases, with every byte changed,
// shortened and lengthened.
TEST(ParserScan, FieldLookupIsBeasts) {
  namespace d = llmux::http::parser_detail;
  const auto same = [](const std::string& s) {
    EXPECT_EQ(d::lookup_field(s), bhttp::string_to_field(s)) << "[" << s << "]";
  };
  const unsigned count = static_cast<unsigned>(bhttp::field::xref) + 1;
  EXPECT_EQ(bhttp::to_string(bhttp::field::xref), "Xref");
  for (unsigned i = 1; i < count; ++i) {
    const std::string name(bhttp::to_string(static_cast<bhttp::field>(i)));
    ASSERT_EQ(d::lookup_field(name), static_cast<bhttp::field>(i)) << name;
    std::string lower = name, upper = name, mixed = name;
    for (std::size_t k = 0; k < name.size(); ++k) {
      lower[k] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[k])));
      upper[k] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[k])));
      mixed[k] = k % 2 ? lower[k] : upper[k];
    }
    for (const std::string& s : {name, lower, upper, mixed}) same(s);
    for (std::size_t k = 0; k < name.size(); ++k) {
      for (const char c : {'x', '-', 'A', '0', '_', '^', '~', '.', '\r',
                           static_cast<char>(name[k] ^ 0x20), static_cast<char>(name[k] ^ 0x40)}) {
        std::string s = name;
        s[k] = c;
        same(s);
      }
      same(name.substr(0, k));
      same(name.substr(k));
    }
    same(name + "x");
    same(name + "-");
    same("x" + name);
  }
  for (const char* s : {"", "a", "ab", "abc", "X-Unknown-Field", "content-typ", "hostt"}) same(s);
}

TEST(ParserScan, FindEomIsTheFirstBlankLine) {
  namespace d = llmux::http::parser_detail;
  const std::string s =
      std::string(20, 'x') + "a\r\n\r\r\n\n\r\n\r" + std::string(17, 'y') + "b\r\n\r\nc\r\n\r\n";
  for (std::size_t from = 0; from <= s.size(); ++from) {
    for (std::size_t to = from; to <= s.size(); ++to) {
      const std::size_t hit = s.find("\r\n\r\n", from);
      const char* want = hit == std::string::npos || hit + 4 > to ? nullptr : s.data() + hit + 4;
      EXPECT_EQ(d::find_eom(s.data() + from, s.data() + to), want) << from << " " << to;
    }
  }
}

}  // namespace
