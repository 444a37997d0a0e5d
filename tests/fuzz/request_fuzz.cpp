// SPDX-License-Identifier: Apache-2.0
// The gateway's request reader: its request parser (gateway/request.hpp: Beast's basic_parser
// into one block of fields, trailers dropped) with the gateway's limits, fed the input in pieces
// (the first byte picks their size), then the gateway's own framing check and the upstream
// request built for one attempt. Must never crash, and the built request
// must parse back, whole, to the same method, target (with the base path), body and framing:
// exactly one Content-Length (or none for a bodiless GET), no hop-by-hop field, one Host, one
// X-Request-Id, and nothing the client's Connection fields named.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/http_rules.hpp"
#include "gateway/request.hpp"

namespace http = boost::beast::http;
using llmux::gateway::build_upstream_head;
using llmux::gateway::check_request_framing;
using llmux::gateway::is_hop_by_hop;
using llmux::gateway::named_by_connection;
using llmux::gateway::Request;
using llmux::gateway::RequestParser;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

// Feeds the parser from `pending`, topped up from `bytes` in pieces of at most `piece`, until the
// header (or the whole message) is done. False on a parse error or when the input runs out.
bool feed(RequestParser& p, std::string& pending, std::string_view& bytes, std::size_t piece,
          bool header_only) {
  auto done = [&] { return header_only ? p.is_header_done() : p.is_done(); };
  for (int guard = 0; guard < 1000000; ++guard) {
    if (done()) return true;
    boost::system::error_code ec;
    std::size_t used = 0;
    if (!pending.empty()) used = p.put(pending, ec);
    if (ec && ec != http::error::need_more) return false;
    pending.erase(0, used);
    if (done()) return true;
    if (used == 0 || ec == http::error::need_more) {
      if (bytes.empty()) return false;
      const std::size_t take = std::min(piece, bytes.size());
      pending.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  Request req;
  RequestParser p(req);
  p.header_limit(8 * 1024);
  p.body_limit(64 * 1024);
  std::string pending;
  if (!feed(p, pending, bytes, piece, /*header_only=*/true)) return 0;
  if (auto bad = check_request_framing(req.fields(), req.version())) {
    check(bad->status == 400 || bad->status == 501);
    check(!bad->message.empty());
    return 0;
  }
  const std::size_t header_fields = req.fields().size();
  for (const auto& f : req) {  // every field kept is a view into the request's own block
    check(!f.name_string.empty());
    check(f.name == http::field::unknown || http::string_to_field(f.name_string) == f.name);
  }
  if (!p.is_done() && !feed(p, pending, bytes, piece, /*header_only=*/false)) return 0;
  check(req.fields().size() == header_fields);  // trailers never became fields

  const std::string target = "/base" + std::string(req.target());
  llmux::ByteBuilder head;
  build_upstream_head(head, req,
                      {target, "backend:30000", (size & 1) ? "Bearer k" : "", "127.0.0.1", "rid",
                       req.body().size()});

  http::request_parser<http::string_body> up;
  up.header_limit(64 * 1024);
  up.body_limit(1 << 20);
  const std::string wire = head.str() + req.body();
  boost::system::error_code ec;
  std::size_t used = 0;
  while (!ec && !up.is_done() && used < wire.size())
    used += up.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
  if (!ec && !up.is_done()) up.put_eof(ec);
  check(!ec);
  check(up.is_done());
  check(used == wire.size());  // nothing smuggled after the request
  const auto& u = up.get();
  check(u.method_string() == req.method_string());
  check(u.target() == target);
  check(u.body() == req.body());
  check(u.version() == 11);
  check(u.count(http::field::host) == 1 && u[http::field::host] == "backend:30000");
  check(u.count("X-Request-Id") == 1);
  check(u.count(http::field::content_length) <= 1);
  if (!req.body().empty())
    check(u[http::field::content_length] == std::to_string(req.body().size()));
  for (const auto& f : u) {
    check(!is_hop_by_hop(f.name()));
    check(!named_by_connection(req.fields(), f.name_string()) || f.name() == http::field::host ||
          f.name() == http::field::content_length || f.name() == http::field::authorization ||
          boost::beast::iequals(f.name_string(), "x-forwarded-for") ||
          boost::beast::iequals(f.name_string(), "x-forwarded-proto") ||
          boost::beast::iequals(f.name_string(), "x-request-id"));
  }
  return 0;
}
