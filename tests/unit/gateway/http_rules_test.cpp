// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 intermediary rules and the request parser they read (no sockets).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include <boost/beast/http.hpp>

#include "gateway/http_rules.hpp"
#include "gateway/request.hpp"

namespace llmux::gateway {
namespace {

namespace bhttp = boost::beast::http;

/// `wire` parsed by the gateway's request parser (the header, and what `wire` holds of the body).
Request parse(const std::string& wire) {
  Request r;
  RequestParser p(r);
  boost::system::error_code ec;
  const std::size_t used = p.put(wire, ec);
  if (ec == bhttp::error::need_more) ec = {};  // a body that is not part of `wire`
  EXPECT_FALSE(ec) << ec.message() << "\n" << wire;
  EXPECT_TRUE(p.is_header_done()) << wire;
  EXPECT_LE(used, wire.size());
  return r;
}

/// These fields as a parsed request's would be (Beast's own parser refuses some of these
/// combinations before the gateway's check sees them; the check must stand on its own).
std::vector<HeaderField> with_fields(
    std::initializer_list<std::pair<const char*, const char*>> list) {
  std::vector<HeaderField> out;
  for (const auto& [k, v] : list) out.push_back({bhttp::string_to_field(k), k, v});
  return out;
}

int framing_status(std::initializer_list<std::pair<const char*, const char*>> list,
                   unsigned version = 11) {
  auto verdict = check_request_framing(with_fields(list), version);
  return verdict ? verdict->status : 0;
}

TEST(Framing, AcceptsWhatIsUnambiguous) {
  EXPECT_EQ(framing_status({}), 0);
  EXPECT_EQ(framing_status({{"Content-Length", "12"}}), 0);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "chunked"}}), 0);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "Chunked"}}), 0);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", " , chunked ,"}}), 0) << "empty list elements";
  EXPECT_EQ(framing_status({{"Content-Length", "7"}}, 10), 0);
}

TEST(Framing, TransferEncodingMustEndInOneChunked) {
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "gzip"}}), 400);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "chunked, identity"}}), 400);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "chunked, chunked"}}), 400);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}}),
            400);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", ""}}), 400);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "gzip"}}), 400);
}

TEST(Framing, OtherCodingsBeforeChunkedAreNotImplemented) {
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "gzip, chunked"}}), 501);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}}), 501);
  auto v = check_request_framing(with_fields({{"Transfer-Encoding", "br;q=1, chunked"}}), 11);
  ASSERT_TRUE(v);
  EXPECT_NE(v->message.find("'br'"), std::string::npos) << v->message;
}

TEST(Framing, TransferEncodingNeverWithHttp10OrContentLength) {
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "chunked"}}, 10), 400);
  EXPECT_EQ(framing_status({{"Transfer-Encoding", "chunked"}, {"Content-Length", "3"}}), 400);
}

TEST(Framing, ContentLengthOnceAndDecimal) {
  EXPECT_EQ(framing_status({{"Content-Length", "5"}, {"Content-Length", "5"}}), 400);
  EXPECT_EQ(framing_status({{"Content-Length", "5"}, {"Content-Length", "6"}}), 400);
  EXPECT_EQ(framing_status({{"Content-Length", "5, 5"}}), 400);
  EXPECT_EQ(framing_status({{"Content-Length", "-1"}}), 400);
  EXPECT_EQ(framing_status({{"Content-Length", "+5"}}), 400);
  EXPECT_EQ(framing_status({{"Content-Length", "0x10"}}), 400);
  EXPECT_EQ(framing_status({{"Content-Length", "99999999999999999999"}}), 400);
  EXPECT_EQ(framing_status({{"Content-Length", ""}}), 400);
}

TEST(HopByHop, EveryConnectionFieldNamesFieldsToDrop) {
  const Request r = parse(
      "GET / HTTP/1.1\r\nConnection: keep-alive, X-A\r\nX-A: 1\r\nConnection: x-b\r\n"
      "X-B: 2\r\nX-Kept: 3\r\n\r\n");
  EXPECT_TRUE(named_by_connection(r.fields(), "x-a"));
  EXPECT_TRUE(named_by_connection(r.fields(), "X-B"));
  EXPECT_FALSE(named_by_connection(r.fields(), "x-kept"));
}

TEST(RequestParser, TrailersNeverBecomeHeaderFields) {
  const std::string wire =
      "POST /v1/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nB: 2\r\n\r\n"
      "5\r\nhello\r\n0\r\nX-Request-Id: trailer\r\nB: 3\r\n\r\n";
  Request r;
  RequestParser p(r);
  boost::system::error_code ec;
  EXPECT_EQ(p.put(wire, ec), wire.size());
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(p.is_done());
  std::vector<std::string> names;
  for (const auto& f : r) names.emplace_back(f.name_string);
  EXPECT_EQ(names, (std::vector<std::string>{"Host", "Transfer-Encoding", "B"}));
  EXPECT_EQ(r["b"], "2");
  EXPECT_EQ(r.count("x-request-id"), 0u);
  EXPECT_EQ(r.body(), "hello");
}

TEST(RequestParser, PiecesFromBuffersThatAreGoneByTheNextRead) {
  // Each read's bytes live in a buffer that is reused or freed before the next put() (as a
  // connection's buffer is): everything kept must be the request's own copy.
  const std::string wire =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nX-Spaced:   a b  \r\n"
      "Content-Length: 2\r\n\r\nhi";
  for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{17}}) {
    Request r;
    RequestParser p(r);
    std::string pending;
    boost::system::error_code ec;
    for (std::size_t at = 0; at < wire.size() && !p.is_done(); at += piece) {
      pending.append(wire, at, piece);
      auto buffer = std::make_unique<std::string>(pending);  // gone after this round
      const std::size_t used = p.put(*buffer, ec);
      if (ec == bhttp::error::need_more) ec = {};
      ASSERT_FALSE(ec) << ec.message();
      pending.erase(0, used);
      std::fill(buffer->begin(), buffer->end(), '#');
    }
    ASSERT_TRUE(p.is_done()) << "pieces of " << piece;
    EXPECT_EQ(r.method_string(), "POST");
    EXPECT_EQ(r.target(), "/v1/chat/completions");
    EXPECT_EQ(r["host"], "gw");
    EXPECT_EQ(r["x-spaced"], "a b");
    EXPECT_EQ(r.body(), "hi");
  }
}

TEST(RequestParser, EveryFieldIsKeptAsItsLineWhateverItsSpacing) {
  // build_upstream_head forwards HeaderField::line(): for every spacing it must be name ": "
  // value CRLF, with the value as parsed.
  const Request r =
      parse("GET / HTTP/1.1\r\nA: 1\r\nB:2\r\nC:  3  \r\nD:\r\nE:\tx y\t\r\nF: six words\r\n\r\n");
  std::vector<std::string> lines;
  for (const auto& f : r) lines.emplace_back(f.line());
  EXPECT_EQ(lines, (std::vector<std::string>{"A: 1\r\n", "B: 2\r\n", "C: 3\r\n", "D: \r\n",
                                             "E: x y\r\n", "F: six words\r\n"}));
  EXPECT_EQ(r["c"], "3");
  EXPECT_EQ(r["e"], "x y");
}

TEST(RequestParser, AReleasedBodysMemoryServesTheNextRequestsBody) {
  // release_body() (once a response began) keeps the memory for the thread's next request: the
  // body is empty and holds nothing, and the next body read on the thread uses that memory.
  Request a = parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
  ASSERT_EQ(a.body(), "hello");
  const char* memory = a.body().data();
  a.release_body();
  EXPECT_TRUE(a.body().empty());
  EXPECT_LE(a.body().capacity(), std::string().capacity()) << "a held-open stream keeps no body";
  Request b = parse("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(b.body(), "abc");
  EXPECT_EQ(b.body().data(), memory);
}

TEST(RequestParser, AConnectionsNextRequestForgetsTheLastOne) {
  Request r;
  {
    RequestParser p(r);
    boost::system::error_code ec;
    const std::string first = "POST /first HTTP/1.1\r\nX-Long: " + std::string(300, 'a') +
                              "\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc";
    p.put(first, ec);
    ASSERT_TRUE(p.is_done());
    EXPECT_FALSE(r.keep_alive());
  }
  RequestParser p(r);
  boost::system::error_code ec;
  p.put("GET /second HTTP/1.1\r\nA: b\r\n\r\n", ec);
  ASSERT_TRUE(p.is_done());
  EXPECT_EQ(r.method(), bhttp::verb::get);
  EXPECT_EQ(r.method_string(), "GET");
  EXPECT_EQ(r.target(), "/second");
  EXPECT_TRUE(r.keep_alive());
  EXPECT_EQ(r.fields().size(), 1u);
  EXPECT_EQ(r["X-Long"], "");
  EXPECT_EQ(r[bhttp::field::content_length], "");
  EXPECT_EQ(r["a"], "b");
  EXPECT_TRUE(r.body().empty());
  // Moved, its views still hold (they point into its own block).
  const Request moved = std::move(r);
  EXPECT_EQ(moved.target(), "/second");
  EXPECT_EQ(moved["A"], "b");
}

Request client_request() {
  return parse(
      "POST /v1/chat/completions HTTP/1.1\r\n"
      "Host: gateway:8080\r\n"
      "Authorization: Bearer client\r\n"
      "Connection: keep-alive, X-Hop\r\n"
      "X-Hop: h\r\n"
      "X-Forwarded-For: 198.51.100.1\r\n"
      "X-Forwarded-For: 198.51.100.2\r\n"
      "X-Request-Id: client-id\r\n"
      "Transfer-Encoding: chunked\r\n"
      "Expect: 100-continue\r\n"
      "X-End: e\r\n"
      "Content-Type: application/json\r\n"
      "\r\n");
}

// Parses a built head back with Beast, so the test checks what a backend would read.
bhttp::request<bhttp::string_body> parse_head(const llmux::ByteBuilder& built,
                                              const std::string& body) {
  const std::string head = built.str();
  bhttp::request_parser<bhttp::string_body> p;
  boost::system::error_code ec;
  const std::string wire = head + body;
  std::size_t used = p.put(boost::asio::buffer(wire), ec);
  if (!ec && !p.is_done() && used < wire.size())
    p.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
  EXPECT_FALSE(ec) << ec.message() << "\n" << head;
  EXPECT_TRUE(p.is_done()) << head;
  return p.release();
}

TEST(UpstreamHead, BuiltFromTheClientsRequestWithTheBackendsParts) {
  const auto client = client_request();
  llmux::ByteBuilder head;
  build_upstream_head(head, client,
                      {"/base/v1/chat/completions", "203.0.113.1:30000", "Bearer backend-key",
                       "127.0.0.9", "rid-1", 11});
  auto up = parse_head(head, "hello world");
  EXPECT_EQ(up.method(), bhttp::verb::post);
  EXPECT_EQ(up.target(), "/base/v1/chat/completions");
  EXPECT_EQ(up.version(), 11u);
  EXPECT_EQ(up[bhttp::field::host], "203.0.113.1:30000");
  EXPECT_EQ(up[bhttp::field::authorization], "Bearer backend-key");
  EXPECT_EQ(up.count(bhttp::field::authorization), 1u);
  EXPECT_EQ(up["X-Forwarded-For"], "198.51.100.1, 198.51.100.2, 127.0.0.9");
  EXPECT_EQ(up.count("X-Forwarded-For"), 1u);
  EXPECT_EQ(up["X-Forwarded-Proto"], "http");
  EXPECT_EQ(up["X-Request-Id"], "rid-1");
  EXPECT_EQ(up.count("X-Request-Id"), 1u);
  EXPECT_EQ(up["X-End"], "e");
  EXPECT_EQ(up[bhttp::field::content_type], "application/json");
  EXPECT_EQ(up[bhttp::field::content_length], "11");
  for (auto f : {bhttp::field::connection, bhttp::field::transfer_encoding, bhttp::field::expect})
    EXPECT_EQ(up.count(f), 0u) << bhttp::to_string(f);
  EXPECT_EQ(up.count("X-Hop"), 0u);
  EXPECT_EQ(up.body(), "hello world");
}

TEST(UpstreamHead, ABackendWithoutAKeyGetsTheClientsAuthorization) {
  const auto client = client_request();
  llmux::ByteBuilder head;
  build_upstream_head(head, client, {"/v1/x", "h:1", "", "127.0.0.1", "rid", 0});
  auto up = parse_head(head, "");
  EXPECT_EQ(up[bhttp::field::authorization], "Bearer client");
  EXPECT_EQ(up[bhttp::field::content_length], "0") << "a POST always says its length";
  // The client's request is untouched.
  EXPECT_EQ(client[bhttp::field::host], "gateway:8080");
  EXPECT_EQ(client.target(), "/v1/chat/completions");
  EXPECT_EQ(client["X-Request-Id"], "client-id");
}

TEST(UpstreamHead, AnthropicHeadersPassAndXApiKeyGoesWhereAuthorizationGoes) {
  const auto client = parse(
      "POST /v1/messages?beta=true HTTP/1.1\r\n"
      "Host: gateway:8080\r\n"
      "x-api-key: sk-client\r\n"
      "anthropic-version: 2023-06-01\r\n"
      "anthropic-beta: claude-code-20250219,interleaved-thinking-2025-05-14\r\n"
      "X-Claude-Code-Session-Id: 0c4f\r\n"
      "Content-Length: 0\r\n"
      "\r\n");
  llmux::ByteBuilder head;
  // No backend key and no client keys checked: the client's key goes on, like Authorization.
  build_upstream_head(head, client, {"/v1/messages?beta=true", "h:1", "", "127.0.0.1", "rid", 0});
  auto up = parse_head(head, "");
  EXPECT_EQ(up.target(), "/v1/messages?beta=true");
  EXPECT_EQ(up["x-api-key"], "sk-client");
  EXPECT_EQ(up["anthropic-version"], "2023-06-01");
  EXPECT_EQ(up["anthropic-beta"], "claude-code-20250219,interleaved-thinking-2025-05-14");
  EXPECT_EQ(up["X-Claude-Code-Session-Id"], "0c4f");
  // The gateway checks keys: the key it consumed is never passed on.
  UpstreamRequestParts checked{"/v1/messages", "h:1", "", "127.0.0.1", "rid", 0};
  checked.keep_client_authorization = false;
  build_upstream_head(head, client, checked);
  up = parse_head(head, "");
  EXPECT_EQ(up.count("x-api-key"), 0u);
  EXPECT_EQ(up["anthropic-version"], "2023-06-01");
  // The backend has a key of its own: it replaces the client's, whichever header that came in.
  build_upstream_head(head, client,
                      {"/v1/messages", "h:1", "Bearer backend", "127.0.0.1", "rid", 0});
  up = parse_head(head, "");
  EXPECT_EQ(up.count("x-api-key"), 0u);
  EXPECT_EQ(up[bhttp::field::authorization], "Bearer backend");
}

TEST(UpstreamHead, ForwardedProtoSaysHowTheClientCame) {
  const auto client = client_request();
  llmux::ByteBuilder head;
  build_upstream_head(head, client, {"/v1/x", "h:1", "", "127.0.0.1", "rid", 0});
  EXPECT_EQ(parse_head(head, "")["X-Forwarded-Proto"], "http");
  build_upstream_head(head, client,
                      {"/v1/x", "h:1", "", "127.0.0.1", "rid", 0, true, /*https=*/true});
  EXPECT_EQ(parse_head(head, "")["X-Forwarded-Proto"], "https");
}

TEST(UpstreamHead, BodylessGetHasNoContentLength) {
  const Request get = parse("GET /v1/models HTTP/1.1\r\nHost: gateway\r\n\r\n");
  llmux::ByteBuilder head;
  build_upstream_head(head, get, {"/v1/models", "h:1", "", "127.0.0.1", "rid", 0});
  auto up = parse_head(head, "");
  EXPECT_EQ(up.count(bhttp::field::content_length), 0u);
  EXPECT_EQ(up["X-Forwarded-For"], "127.0.0.1");
}

}  // namespace
}  // namespace llmux::gateway
