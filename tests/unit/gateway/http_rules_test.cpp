// The HTTP/1.1 intermediary rules, on Beast's header types (no sockets).
#include <gtest/gtest.h>

#include <boost/beast/http.hpp>

#include "gateway/http_rules.hpp"

namespace llmux::gateway {
namespace {

namespace http = boost::beast::http;

http::fields fields(std::initializer_list<std::pair<const char*, const char*>> list) {
  http::fields f;
  for (const auto& [k, v] : list) f.insert(k, v);
  return f;
}

int framing_status(std::initializer_list<std::pair<const char*, const char*>> list,
                   unsigned version = 11) {
  auto verdict = check_request_framing(fields(list), version);
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
  auto v = check_request_framing(fields({{"Transfer-Encoding", "br;q=1, chunked"}}), 11);
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
  auto f = fields({{"Connection", "keep-alive, X-A"},
                   {"X-A", "1"},
                   {"Connection", "x-b"},
                   {"X-B", "2"},
                   {"Keep-Alive", "timeout=5"},
                   {"Transfer-Encoding", "chunked"},
                   {"X-Kept", "3"},
                   {"Upgrade", "websocket"}});
  EXPECT_TRUE(named_by_connection(f, "x-a"));
  EXPECT_TRUE(named_by_connection(f, "X-B"));
  EXPECT_FALSE(named_by_connection(f, "x-kept"));
  strip_hop_by_hop(f);
  std::vector<std::string> left;
  for (const auto& fld : f) left.emplace_back(fld.name_string());
  EXPECT_EQ(left, std::vector<std::string>{"X-Kept"});
}

TEST(HopByHop, DropFieldsAfterRemovesTrailersOnly) {
  auto f = fields({{"A", "1"}, {"B", "2"}, {"X-Request-Id", "trailer"}, {"C", "3"}});
  drop_fields_after(f, 2);
  std::vector<std::string> left;
  for (const auto& fld : f) left.emplace_back(fld.name_string());
  EXPECT_EQ(left, (std::vector<std::string>{"A", "B"}));
}

http::request<http::string_body> client_request() {
  http::request<http::string_body> r{http::verb::post, "/v1/chat/completions", 11};
  r.set(http::field::host, "gateway:8080");
  r.set(http::field::authorization, "Bearer client");
  r.set(http::field::connection, "keep-alive, X-Hop");
  r.insert("X-Hop", "h");
  r.insert("X-Forwarded-For", "198.51.100.1");
  r.insert("X-Forwarded-For", "198.51.100.2");
  r.insert("X-Request-Id", "client-id");
  r.set(http::field::transfer_encoding, "chunked");
  r.set(http::field::expect, "100-continue");
  r.insert("X-End", "e");
  r.set(http::field::content_type, "application/json");
  return r;
}

// Parses a built head back with Beast, so the test checks what a backend would read.
http::request<http::string_body> parse_head(const std::string& head, const std::string& body) {
  http::request_parser<http::string_body> p;
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
  std::string head;
  build_upstream_head(head, client,
                      {"/base/v1/chat/completions", "203.0.113.1:30000", "Bearer backend-key",
                       "127.0.0.9", "rid-1", 11});
  auto up = parse_head(head, "hello world");
  EXPECT_EQ(up.method(), http::verb::post);
  EXPECT_EQ(up.target(), "/base/v1/chat/completions");
  EXPECT_EQ(up.version(), 11u);
  EXPECT_EQ(up[http::field::host], "203.0.113.1:30000");
  EXPECT_EQ(up[http::field::authorization], "Bearer backend-key");
  EXPECT_EQ(up.count(http::field::authorization), 1u);
  EXPECT_EQ(up["X-Forwarded-For"], "198.51.100.1, 198.51.100.2, 127.0.0.9");
  EXPECT_EQ(up.count("X-Forwarded-For"), 1u);
  EXPECT_EQ(up["X-Forwarded-Proto"], "http");
  EXPECT_EQ(up["X-Request-Id"], "rid-1");
  EXPECT_EQ(up.count("X-Request-Id"), 1u);
  EXPECT_EQ(up["X-End"], "e");
  EXPECT_EQ(up[http::field::content_type], "application/json");
  EXPECT_EQ(up[http::field::content_length], "11");
  for (auto f : {http::field::connection, http::field::transfer_encoding, http::field::expect})
    EXPECT_EQ(up.count(f), 0u) << http::to_string(f);
  EXPECT_EQ(up.count("X-Hop"), 0u);
  EXPECT_EQ(up.body(), "hello world");
}

TEST(UpstreamHead, ABackendWithoutAKeyGetsTheClientsAuthorization) {
  const auto client = client_request();
  std::string head;
  build_upstream_head(head, client, {"/v1/x", "h:1", "", "127.0.0.1", "rid", 0});
  auto up = parse_head(head, "");
  EXPECT_EQ(up[http::field::authorization], "Bearer client");
  EXPECT_EQ(up[http::field::content_length], "0") << "a POST always says its length";
  // The client's request is untouched.
  EXPECT_EQ(client[http::field::host], "gateway:8080");
  EXPECT_EQ(client.target(), "/v1/chat/completions");
  EXPECT_EQ(client["X-Request-Id"], "client-id");
}

TEST(UpstreamHead, BodylessGetHasNoContentLength) {
  http::request<http::string_body> get{http::verb::get, "/v1/models", 11};
  std::string head;
  build_upstream_head(head, get, {"/v1/models", "h:1", "", "127.0.0.1", "rid", 0});
  auto up = parse_head(head, "");
  EXPECT_EQ(up.count(http::field::content_length), 0u);
  EXPECT_EQ(up["X-Forwarded-For"], "127.0.0.1");
}

}  // namespace
}  // namespace llmux::gateway
