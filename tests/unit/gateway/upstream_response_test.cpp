// SPDX-License-Identifier: Apache-2.0
// gateway/upstream_response.hpp: the backend's header becomes the client's as it is parsed.
// Hop-by-hop fields (fixed ones and every token of every Connection field) and the fields the
// gateway sets itself never reach the client; everything else does, in order, byte for byte.
#include "gateway/upstream_response.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

namespace llmux::gateway {
namespace {

/// The header part of `wire` parsed, in pieces of `piece` bytes as reads would bring them.
std::string client_header(UpstreamResponse& p, const std::string& wire, std::size_t piece = 4096) {
  std::string pending;
  std::size_t at = 0;
  boost::system::error_code ec;
  while (!p.is_header_done()) {
    if (at >= wire.size()) {
      ADD_FAILURE() << "the header never completed";
      return {};
    }
    pending.append(wire, at, piece);
    at += piece;
    const std::size_t used = p.put(std::string_view(pending), ec);
    pending.erase(0, used);
    if (ec == boost::beast::http::error::need_more) ec = {};
    if (ec) {
      ADD_FAILURE() << ec.message();
      return {};
    }
  }
  return p.header().str();
}

TEST(UpstreamResponse, EndToEndFieldsPassInOrderAndHopByHopOnesNever) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\n"
      "Connection: keep-alive, X-A\r\n"
      "X-A: 1\r\n"
      "Content-Type: text/event-stream\r\n"
      "Connection: x-b\r\n"
      "X-B: 2\r\n"
      "Keep-Alive: timeout=5\r\n"
      "Transfer-Encoding: chunked\r\n"
      "X-Kept: 3\r\n"
      "Upgrade: websocket\r\n"
      "Proxy-Authenticate: Basic\r\n"
      "Trailer: X-T\r\n"
      "Set-Cookie: a=1\r\n"
      "Set-Cookie: b=2\r\n"
      "\r\n";
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, wire.size()}) {
    UpstreamResponse p;
    EXPECT_EQ(client_header(p, wire, piece),
              "HTTP/1.1 200 OK\r\n"
              "Content-Type: text/event-stream\r\n"
              "X-Kept: 3\r\n"
              "Set-Cookie: a=1\r\n"
              "Set-Cookie: b=2\r\n")
        << "pieces of " << piece;
    EXPECT_EQ(p.content_type(), "text/event-stream");
    EXPECT_EQ(p.status(), 200);
    EXPECT_TRUE(p.chunked());
    EXPECT_FALSE(p.has_content_length());
  }
}

TEST(UpstreamResponse, ARecycledParserStartsAsANewOneAndReadsOnlyItsOwnResponse) {
  // make() hands out a parser given back before (no allocation per response): nothing of the
  // response it read may show in the next one.
  UpstreamResponse* first = nullptr;
  {
    UpstreamResponse::Ptr p = UpstreamResponse::make({});
    first = p.get();
    p->omit_queue_depth(true);
    char buf[64];
    p->body_buffer(buf, sizeof buf);
    const std::string wire =
        "HTTP/1.1 502 Bad Gateway\r\nConnection: close, X-Gone\r\nContent-Type: a/b\r\n"
        "Content-Length: 3\r\n\r\nabc";
    boost::system::error_code ec;
    const std::size_t used = p->put(wire, ec);  // the header
    ASSERT_FALSE(ec) << ec.message();
    p->put(std::string_view(wire).substr(used), ec);  // the body
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(p->is_done());
  }
  llmux::ByteBuilder header;
  header.append("left over");
  UpstreamResponse::Ptr q = UpstreamResponse::make(std::move(header));
  EXPECT_EQ(q.get(), first) << "the parser given back is reused";
  EXPECT_FALSE(q->is_header_done());
  EXPECT_TRUE(q->header().empty());
  const std::string second =
      "HTTP/1.1 200 OK\r\nX-Gone: kept now\r\nx-llmux-queue-depth: 4\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(client_header(*q, second),
            "HTTP/1.1 200 OK\r\nX-Gone: kept now\r\nx-llmux-queue-depth: 4\r\n");
  EXPECT_EQ(q->status(), 200);
  EXPECT_FALSE(q->has_content_length());
  EXPECT_TRUE(q->content_type().empty());
  EXPECT_FALSE(q->is_done());
}

TEST(UpstreamResponse, TheGatewaysOwnFieldsAreLeftOut) {
  const std::string wire =
      "HTTP/1.1 201 Created\r\nX-Request-Id: backend\r\nx-llmux-backend: inner\r\n"
      "X-Llmux-Queue-Depth: 4\r\nContent-Length: 0\r\n\r\n";
  UpstreamResponse kept;
  EXPECT_EQ(client_header(kept, wire),
            "HTTP/1.1 201 Created\r\nX-Llmux-Queue-Depth: 4\r\nContent-Length: 0\r\n")
      << "a chained gateway's queue depth passes when this one did not queue";
  EXPECT_TRUE(kept.has_content_length());
  UpstreamResponse queued;
  queued.omit_queue_depth(true);
  EXPECT_EQ(client_header(queued, wire), "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n");
}

TEST(UpstreamResponse, StatusLineIsTheGatewaysVersionWithTheBackendsReason) {
  UpstreamResponse old;
  EXPECT_EQ(client_header(old, "HTTP/1.0 404 Nope\r\nContent-Length: 3\r\n\r\n"),
            "HTTP/1.1 404 Nope\r\nContent-Length: 3\r\n");
  EXPECT_FALSE(old.keep_alive()) << "HTTP/1.0 without keep-alive";
  UpstreamResponse empty_reason;
  EXPECT_EQ(client_header(empty_reason, "HTTP/1.1 503 \r\nContent-Length: 0\r\n\r\n"),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n");
}

TEST(UpstreamResponse, ManyConnectionTokensStillNameTheirFields) {
  std::string wire = "HTTP/1.1 200 OK\r\nConnection: ";
  for (int i = 0; i < 40; ++i) wire += "x-" + std::to_string(i) + ", ";
  wire += "x-last\r\n";
  for (int i = 0; i < 40; ++i) wire += "X-" + std::to_string(i) + ": v\r\n";
  wire += "X-Last: v\r\nX-Kept: k\r\nContent-Length: 0\r\n\r\n";
  UpstreamResponse p;
  EXPECT_EQ(client_header(p, wire), "HTTP/1.1 200 OK\r\nX-Kept: k\r\nContent-Length: 0\r\n");
}

TEST(UpstreamResponse, BodyGoesIntoTheBufferGivenAndStopsWhenItIsFull) {
  const std::string wire = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
  UpstreamResponse p;
  boost::system::error_code ec;
  std::size_t used = p.put(std::string_view(wire), ec);
  ASSERT_FALSE(ec);
  ASSERT_TRUE(p.is_header_done());
  used += p.put(std::string_view(wire.data() + used, wire.size() - used), ec);
  EXPECT_EQ(ec, boost::beast::http::error::need_buffer) << "no buffer given yet";
  char buf[4];
  p.body_buffer(buf, sizeof buf);
  ec = {};
  used += p.put(std::string_view(wire.data() + used, wire.size() - used), ec);
  EXPECT_EQ(ec, boost::beast::http::error::need_buffer);
  EXPECT_EQ(std::string(buf, 4), "0123");
  EXPECT_EQ(p.body_room(), 0u);
  char rest[16];
  p.body_buffer(rest, sizeof rest);
  ec = {};
  used += p.put(std::string_view(wire.data() + used, wire.size() - used), ec);
  EXPECT_FALSE(ec);
  EXPECT_TRUE(p.is_done());
  EXPECT_EQ(std::string(rest, sizeof rest - p.body_room()), "456789");
  EXPECT_EQ(used, wire.size());
}

}  // namespace
}  // namespace llmux::gateway
