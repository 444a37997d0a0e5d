// SPDX-License-Identifier: Apache-2.0
#pragma once
// The differential check of llmux::http::MessageParser (src/http/message_parser.hpp) against
// Beast's basic_parser (its public interface only), shared by tests/unit/http/
// message_parser_test.cpp and the message_parser fuzz target.
//
// Beast is given the whole input at once (its verdict on a header that comes in pieces depends
// on where they are cut; in one piece it is its most careful), then put_eof() when the message is
// not done. llmux's parser is given the input cut into pieces (Cuts), as a connection's reader
// gives it: the unconsumed bytes kept, the next piece appended. Both give an Outcome: the verdict
// and, for a message both accept, what came out of it.
//
// compare() says whether two outcomes agree: the same verdict class (accepted, end_of_stream,
// header_limit, body_limit, malformed: a syntax error or partial_message, which the gateway
// answers alike), and for an accepted message the same start line, fields, trailers, body, bytes
// consumed and framing. The deliberate differences of message_parser.hpp are let through only
// where the input has what they need: llmux rejects, Beast may not (a fold for any error, a
// Transfer-Encoding field for bad_transfer_encoding / bad_content_length, a header or chunked
// section longer than the limit for header_limit / bad_chunk_extension, a control byte in the
// body for bad_chunk_extension), or llmux does not keep
// an HTTP/1.0 connection alive that Beast would. llmux accepting what Beast rejects never agrees.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/optional.hpp>

#include "http/message_parser.hpp"

namespace llmux::message_parser_diff {

namespace bhttp = boost::beast::http;
using boost::system::error_code;
using llmux::http::MessageKind;
using llmux::http::ParseLimits;

enum class Verdict { accepted, end_of_stream, header_limit, body_limit, malformed };

inline const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::accepted:
      return "accepted";
    case Verdict::end_of_stream:
      return "end_of_stream";
    case Verdict::header_limit:
      return "header_limit";
    case Verdict::body_limit:
      return "body_limit";
    case Verdict::malformed:
      break;
  }
  return "malformed";
}

inline Verdict verdict_of(const error_code& ec) {
  if (!ec) return Verdict::accepted;
  if (ec == bhttp::error::end_of_stream) return Verdict::end_of_stream;
  if (ec == bhttp::error::header_limit) return Verdict::header_limit;
  if (ec == bhttp::error::body_limit) return Verdict::body_limit;
  return Verdict::malformed;
}

struct Field {
  int name = 0;  // bhttp::field
  std::string name_string, value;
  bool operator==(const Field&) const = default;
};

/// What a parser made of an input.
struct Outcome {
  error_code error;  // none: the message was accepted (complete)
  std::string method, target, reason;
  int verb = 0;
  unsigned version = 0, status = 0;
  std::vector<Field> fields, trailers;
  std::string body;
  std::size_t consumed = 0;  // bytes of the message
  bool keep_alive = false, chunked = false, upgrade = false, until_eof = false;
  std::optional<std::uint64_t> content_length;

  Verdict verdict() const { return verdict_of(error); }
  std::string describe() const {
    std::string s = std::string(verdict_name(verdict())) + " (" + error.message() + ")";
    if (verdict() != Verdict::accepted) return s;
    s += " [" + method + "] [" + target + "] " + std::to_string(version) + " " +
         std::to_string(status) + " [" + reason + "]";
    for (const Field& f : fields) s += " {" + f.name_string + "=" + f.value + "}";
    for (const Field& f : trailers) s += " trailer{" + f.name_string + "=" + f.value + "}";
    s += " body[" + body + "] consumed=" + std::to_string(consumed) +
         " keep_alive=" + std::to_string(keep_alive) + " chunked=" + std::to_string(chunked) +
         " upgrade=" + std::to_string(upgrade) + " until_eof=" + std::to_string(until_eof) +
         " content_length=" + (content_length ? std::to_string(*content_length) : "none");
    return s;
  }
};

/// How an input is parsed: the limits, a response to HEAD (no body).
struct ParseSetup {
  MessageKind kind = MessageKind::request;
  ParseLimits limits;
  bool no_body = false;
};

/// Beast's parser, recording (public interface of basic_parser only).
template <bool isRequest>
class BeastRecorder final : public bhttp::basic_parser<isRequest> {
 public:
  explicit BeastRecorder(Outcome& out) : out_(out) {}

  void on_request_impl(bhttp::verb method, boost::beast::string_view method_string,
                       boost::beast::string_view target, int version, error_code&) override {
    out_.verb = static_cast<int>(method);
    out_.method = std::string(method_string);
    out_.target = std::string(target);
    out_.version = static_cast<unsigned>(version);
  }
  void on_response_impl(int code, boost::beast::string_view reason, int version,
                        error_code&) override {
    out_.status = static_cast<unsigned>(code);
    out_.reason = std::string(reason);
    out_.version = static_cast<unsigned>(version);
  }
  void on_field_impl(bhttp::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, error_code&) override {
    (header_done_ ? out_.trailers : out_.fields)
        .push_back({static_cast<int>(name), std::string(name_string), std::string(value)});
  }
  void on_header_impl(error_code&) override { header_done_ = true; }
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(boost::beast::string_view body, error_code&) override {
    out_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                 error_code&) override {
    out_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

 private:
  Outcome& out_;
  bool header_done_ = false;
};

template <bool isRequest>
Outcome run_beast_as(const ParseSetup& setup, std::string_view input) {
  Outcome out;
  BeastRecorder<isRequest> p(out);
  p.eager(true);
  p.header_limit(setup.limits.header_bytes);
  if (setup.limits.body_bytes)
    p.body_limit(*setup.limits.body_bytes);
  else
    p.body_limit(boost::none);
  if (setup.no_body) p.skip(true);
  error_code ec;
  std::size_t at = 0;
  while (at < input.size() && !p.is_done()) {
    const std::size_t n =
        p.put(boost::asio::const_buffer(input.data() + at, input.size() - at), ec);
    at += n;
    if (ec || n == 0) break;
  }
  if (ec == bhttp::error::need_more || (!ec && !p.is_done())) {
    ec = {};
    if (p.got_some())
      p.put_eof(ec);
    else
      ec = bhttp::error::end_of_stream;
  }
  out.error = ec;
  out.consumed = at;
  if (!ec) {
    out.keep_alive = p.keep_alive();
    out.chunked = p.chunked();
    out.upgrade = p.upgrade();
    out.until_eof = p.need_eof();
    if (const auto cl = p.content_length()) out.content_length = *cl;
  }
  return out;
}

inline Outcome run_beast(const ParseSetup& setup, std::string_view input) {
  return setup.kind == MessageKind::request ? run_beast_as<true>(setup, input)
                                            : run_beast_as<false>(setup, input);
}

inline void copy_fields(std::span<const llmux::http::FieldView> from, std::vector<Field>& to) {
  to.clear();
  for (const auto& f : from)
    to.push_back({static_cast<int>(f.name), std::string(f.name_string), std::string(f.value)});
}

/// Where the input is cut: `cuts` are the lengths of the first pieces, the rest in one piece.
using Cuts = std::vector<std::size_t>;

/// llmux's parser given `input` in the pieces `cuts` says, then parse_eof() at its end.
inline Outcome run_llmux(const ParseSetup& setup, std::string_view input, const Cuts& cuts) {
  using llmux::http::ParseEvent;
  Outcome out;
  llmux::http::MessageParser p(setup.kind, setup.limits);
  if (setup.no_body) p.expect_no_body();
  std::string buffer;
  std::size_t fed = 0, piece = 0;
  int steps = 0;
  for (;;) {
    if (fed < input.size()) {
      std::size_t n = input.size() - fed;
      if (piece < cuts.size()) n = std::min(n, std::max<std::size_t>(cuts[piece++], 1));
      buffer.append(input.substr(fed, n));
      fed += n;
    }
    const bool last = fed == input.size();
    for (;;) {
      if (++steps > 1000000) {
        out.error = bhttp::error::bad_value;  // a parser that does not make progress
        return out;
      }
      llmux::http::ParseStep step = p.parse(buffer);
      if (step.event == ParseEvent::need_more && last) step = p.parse_eof();
      switch (step.event) {
        case ParseEvent::header:
          out.method = std::string(p.method());
          out.verb = static_cast<int>(p.verb());
          out.target = std::string(p.target());
          out.version = p.version();
          out.status = p.status();
          out.reason = std::string(p.reason());
          copy_fields(p.fields(), out.fields);
          break;
        case ParseEvent::body:
          out.body.append(step.body);
          break;
        case ParseEvent::message_end:
          copy_fields(p.trailer_fields(), out.trailers);
          break;
        default:
          break;
      }
      out.consumed += step.consumed;
      if (step.consumed > buffer.size()) {
        out.error = bhttp::error::bad_value;  // consumed more than it was given
        return out;
      }
      buffer.erase(0, step.consumed);
      if (step.event == ParseEvent::error) {
        out.error = step.error;
        return out;
      }
      if (step.event == ParseEvent::message_end) {
        out.keep_alive = p.keep_alive();
        out.chunked = p.chunked();
        out.upgrade = p.upgrade();
        out.until_eof = p.body_until_eof();
        out.content_length = p.content_length();
        return out;
      }
      if (step.event == ParseEvent::need_more) break;
    }
  }
}

inline bool contains_ignoring_case(std::string_view haystack, std::string_view lower) {
  if (lower.size() > haystack.size()) return false;
  for (std::size_t i = 0; i + lower.size() <= haystack.size(); ++i) {
    std::size_t k = 0;
    while (k < lower.size() && (haystack[i + k] | 0x20) == lower[k]) ++k;
    if (k == lower.size()) return true;
  }
  return false;
}

/// Bytes of the header as message_parser.hpp counts them (to the blank line, or all).
inline std::size_t header_size(std::string_view input) {
  const std::size_t blank = input.find("\r\n\r\n");
  return blank == std::string_view::npos ? input.size() : blank + 2;
}

/// The longest run of bytes without a CR after the header (a chunk line or a trailer bound).
inline std::size_t longest_body_line(std::string_view input) {
  std::size_t from = std::min(input.size(), header_size(input) + 2), longest = 0;
  while (from < input.size()) {
    std::size_t cr = input.find('\r', from);
    if (cr == std::string_view::npos) cr = input.size();
    longest = std::max(longest, cr - from);
    from = cr + 1;
  }
  return longest;
}

/// Whether a control byte (not HTAB, CR, or LF after CR) or DEL comes after the header: in a chunk
/// extension's quoted-string, Beast takes it, llmux does not (deliberate difference 7).
inline bool control_in_body(std::string_view input) {
  for (std::size_t i = std::min(input.size(), header_size(input)); i < input.size(); ++i) {
    const auto c = static_cast<unsigned char>(input[i]);
    if (c == '\n' ? input[i - 1] != '\r' : (c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
      return true;
  }
  return false;
}

/// Empty when llmux's outcome agrees with Beast's for this input, else why not.
inline std::string compare(const ParseSetup& setup, std::string_view input, const Outcome& beast,
                           const Outcome& ours) {
  const Verdict b = beast.verdict(), o = ours.verdict();
  const std::uint32_t limit = setup.limits.header_bytes;
  const auto why = [&](const std::string& what) {
    return what + "\n  beast: " + beast.describe() + "\n  llmux: " + ours.describe();
  };
  if (o == Verdict::accepted && b != Verdict::accepted)
    return why("llmux accepts what Beast rejects");
  if (o != Verdict::accepted) {
    if (b == o) return {};
    // The deliberate differences: llmux rejects where Beast may not.
    const error_code& e = ours.error;
    // llmux refuses every fold; a field line before it may be refused first (a Content-Length
    // "5, " that Beast would join with the next line).
    if (input.find("\r\n ") != std::string_view::npos ||
        input.find("\r\n\t") != std::string_view::npos)
      return {};
    if ((e == bhttp::error::bad_transfer_encoding || e == bhttp::error::bad_content_length) &&
        contains_ignoring_case(input, "transfer-encoding"))
      return {};
    const bool long_header = header_size(input) > limit;
    const bool long_body_line = longest_body_line(input) > limit;
    if (e == bhttp::error::header_limit &&
        (long_header || input.size() - std::min(input.size(), header_size(input)) > limit))
      return {};
    if (e == bhttp::error::bad_chunk_extension && (long_body_line || control_in_body(input)))
      return {};
    // Both reject an input of at least `limit` bytes: where each sees a wrong byte or the limit
    // first differs with Beast's way of counting (it refuses an unfinished start line or field
    // section as soon as it holds `limit` bytes of it, and checks some bytes, such as the
    // version, only once it has a few more).
    if (b != Verdict::accepted && input.size() >= limit &&
        (b == Verdict::header_limit || b == Verdict::malformed) &&
        (o == Verdict::header_limit || o == Verdict::malformed))
      return {};
    return why("different verdicts");
  }
  // Both accept: the same message.
  if (beast.method != ours.method || beast.verb != ours.verb || beast.target != ours.target ||
      beast.version != ours.version || beast.status != ours.status || beast.reason != ours.reason)
    return why("different start lines");
  if (beast.fields != ours.fields) return why("different fields");
  if (beast.trailers != ours.trailers) return why("different trailers");
  if (beast.body != ours.body) return why("different bodies");
  if (beast.consumed != ours.consumed) return why("different lengths");
  if (beast.chunked != ours.chunked || beast.upgrade != ours.upgrade ||
      beast.until_eof != ours.until_eof || beast.content_length != ours.content_length)
    return why("different framing");
  // Deliberate difference 5: an HTTP/1.0 connection Beast keeps and llmux closes.
  if (beast.keep_alive != ours.keep_alive && !(ours.version == 10 && !ours.keep_alive))
    return why("different keep_alive");
  return {};
}

/// Empty when llmux's outcomes for two ways of cutting the same input are the same.
inline std::string compare_cuts(const Outcome& whole, const Outcome& cut) {
  const bool same = whole.error == cut.error && (whole.error || whole.describe() == cut.describe());
  if (same) return {};
  return "cutting the input changes the outcome\n  whole: " + whole.describe() +
         "\n  cut:   " + cut.describe();
}

}  // namespace llmux::message_parser_diff
