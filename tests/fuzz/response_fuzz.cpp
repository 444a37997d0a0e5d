// SPDX-License-Identifier: Apache-2.0
// The gateway's reader of a backend's response (gateway/upstream_response.hpp, driven through
// gateway/upstream_body.hpp as the relay drives it): the input cut into pieces (the first byte
// picks their size and the body buffer's), the read buffer parked between pieces. Must never
// crash, and must agree with Beast's own response parser (response_parser<string_body>) on the
// same bytes: when both read the message, the status and the body are the same; the client's
// header it builds parses back (with a blank line added) as a response of that status without
// a single hop-by-hop field or a field the backend's Connection named.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http_rules.hpp"
#include "gateway/upstream_body.hpp"
#include "gateway/upstream_response.hpp"

namespace http = boost::beast::http;
using llmux::gateway::Fed;
using llmux::gateway::UpstreamResponse;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

/// Beast's reading of the whole input, or false.
bool reference(std::string_view wire, int& status, std::string& body,
               std::vector<std::string>& connection_tokens) {
  http::response_parser<http::string_body> p;
  p.header_limit(8 * 1024);
  p.body_limit(64 * 1024);
  boost::system::error_code ec;
  std::size_t used = p.put(boost::asio::buffer(wire.data(), wire.size()), ec);  // the header
  if (ec || !p.is_header_done()) return false;
  // The header's Connection tokens (a chunked body's trailers join p.get() later: not these).
  for (const auto& f : p.get()) {
    if (f.name() != http::field::connection) continue;
    std::string_view v = f.value();
    while (!v.empty()) {
      const auto comma = v.find(',');
      std::string_view t = v.substr(0, comma);
      while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
      while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
      if (!t.empty()) connection_tokens.emplace_back(t);
      if (comma == std::string_view::npos) break;
      v.remove_prefix(comma + 1);
    }
  }
  p.eager(true);
  while (!ec && !p.is_done() && used < wire.size())
    used += p.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
  if (ec == http::error::need_more) ec = {};
  if (!ec && !p.is_done()) p.put_eof(ec);
  if (ec || !p.is_done()) return false;
  status = static_cast<int>(p.get().result_int());
  body = p.get().body();
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t piece = 1 + data[0] % 64;
  const std::size_t buf_size = 1 + (data[0] >> 2) % 300;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string_view wire = bytes;

  llmux::ByteBuilder left_over;
  left_over.append("left over from an earlier response");
  UpstreamResponse p(std::move(left_over));
  p.header_limit(8 * 1024);
  p.body_limit(64 * 1024);
  boost::beast::flat_buffer in;
  auto read = [&] {
    const std::size_t take = std::min(piece, bytes.size());
    std::memcpy(in.prepare(take).data(), bytes.data(), take);
    in.commit(take);
    bytes.remove_prefix(take);
  };
  boost::system::error_code ec;
  bool ok = true;
  while (ok && !p.is_header_done()) {
    if (bytes.empty()) return 0;
    read();
    const std::size_t used =
        p.put(std::string_view(static_cast<const char*>(in.data().data()), in.size()), ec);
    in.consume(used);
    if (ec == http::error::need_more) ec = {};
    if (ec) ok = false;
  }
  std::string body;
  std::vector<char> buf(buf_size);
  llmux::gateway::Leftover keep;
  for (int guard = 0; ok && guard < 1000000 && !p.is_done(); ++guard) {
    p.body_buffer(buf.data(), buf.size());
    const Fed fed = llmux::gateway::feed(p, in, ec);
    body.append(buf.data(), buf.size() - p.body_room());
    if (fed == Fed::error) ok = false;
    if (fed != Fed::need_more) continue;
    if (bytes.empty()) {
      p.put_eof(ec);  // the backend closed
      if (ec) ok = false;
      break;
    }
    if (llmux::gateway::park(in, keep)) llmux::gateway::unpark(in, keep);
    read();
  }
  p.body_buffer(nullptr, 0);

  int status = 0;
  std::string ref_body;
  std::vector<std::string> tokens;
  const bool ref_ok = reference(wire, status, ref_body, tokens);
  if (!ok || !ref_ok || !p.is_done()) return 0;
  check(p.status() == status);
  check(body == ref_body);

  // The client's header parses back, with no hop-by-hop field and nothing Connection named.
  const std::string head = p.header().str() + "\r\n";  // read as a HEAD answer: no body
  http::response_parser<http::empty_body> back;
  back.header_limit(64 * 1024);
  back.skip(true);
  boost::system::error_code bec;
  back.put(boost::asio::buffer(head), bec);
  check(!bec);
  check(back.is_header_done());
  check(static_cast<int>(back.get().result_int()) == status);
  for (const auto& f : back.get()) {
    check(!llmux::gateway::is_hop_by_hop(f.name()));
    for (const auto& t : tokens)
      check(boost::beast::iequals(t, "close") || boost::beast::iequals(t, "keep-alive") ||
            !boost::beast::iequals(f.name_string(), t) || f.name() == http::field::content_length);
  }
  return 0;
}
