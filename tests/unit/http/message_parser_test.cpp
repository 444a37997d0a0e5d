// SPDX-License-Identifier: Apache-2.0
// llmux::http::MessageParser (src/http/message_parser.hpp): a test per RFC 9112 rule it enforces
// and per deliberate difference from Beast, each input also fed in 1-byte pieces, cut in two at
// every byte and cut at random (the same outcome as fed whole), and a differential test against
// Beast's basic_parser on a table of inputs (tests/fuzz/message_parser_diff.hpp). Built twice:
// message_parser_test (the SIMD scans where the build has them) and message_parser_scalar_test
// (-DLLMUX_NO_SIMD).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "http/message_parser.hpp"
#include "message_parser_diff.hpp"

namespace {

namespace bhttp = boost::beast::http;
using llmux::http::MessageKind;
using llmux::http::MessageParser;
using llmux::http::ParseEvent;
using llmux::http::ParseLimits;
using llmux::message_parser_diff::compare;
using llmux::message_parser_diff::compare_cuts;
using llmux::message_parser_diff::Cuts;
using llmux::message_parser_diff::Outcome;
using llmux::message_parser_diff::ParseSetup;
using llmux::message_parser_diff::run_beast;
using llmux::message_parser_diff::run_llmux;
using llmux::message_parser_diff::Verdict;

std::vector<Cuts> random_cuts(std::size_t size, int count) {
  std::vector<Cuts> out;
  std::uint32_t state = 2463534242u + static_cast<std::uint32_t>(size);
  for (int i = 0; i < count; ++i) {
    Cuts cuts;
    for (std::size_t at = 0; at < size;) {
      state ^= state << 13;
      state ^= state >> 17;
      state ^= state << 5;
      const std::size_t n = 1 + state % (i % 2 ? 7 : 61);
      cuts.push_back(n);
      at += n;
    }
    out.push_back(cuts);
  }
  return out;
}

/// llmux's outcome for `wire` fed whole, after checking that 1-byte pieces, every cut in two and
/// random cuts give the same.
Outcome parse_every_way(const ParseSetup& setup, std::string_view wire) {
  const Outcome whole = run_llmux(setup, wire, {});
  EXPECT_EQ(compare_cuts(whole, run_llmux(setup, wire, Cuts(wire.size(), 1))), "")
      << "1-byte pieces of [" << wire << "]";
  if (wire.size() <= 4096) {
    for (std::size_t at = 1; at < wire.size(); ++at)
      EXPECT_EQ(compare_cuts(whole, run_llmux(setup, wire, {at})), "")
          << "cut at " << at << " of [" << wire << "]";
  }
  for (const Cuts& cuts : random_cuts(wire.size(), 6))
    EXPECT_EQ(compare_cuts(whole, run_llmux(setup, wire, cuts)), "") << "random cuts";
  return whole;
}

Outcome request(std::string_view wire, ParseLimits limits = {}) {
  return parse_every_way({MessageKind::request, limits, false}, wire);
}
Outcome response(std::string_view wire, ParseLimits limits = {}, bool head = false) {
  return parse_every_way({MessageKind::response, limits, head}, wire);
}

// ---- The request line (RFC 9112 §3) and status line (§4).

TEST(MessageParser, RequestLineIsMethodTargetVersion) {
  const Outcome ok = request("GET /v1/models?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(ok.verdict(), Verdict::accepted) << ok.describe();
  EXPECT_EQ(ok.method, "GET");
  EXPECT_EQ(ok.verb, static_cast<int>(bhttp::verb::get));
  EXPECT_EQ(ok.target, "/v1/models?x=1");
  EXPECT_EQ(ok.version, 11u);
  EXPECT_EQ(request("get * HTTP/1.0\r\n\r\n").target, "*");
  EXPECT_EQ(request("get * HTTP/1.0\r\n\r\n").verb, static_cast<int>(bhttp::verb::unknown));
  EXPECT_EQ(request("BREW /\xc3\xa9 HTTP/1.1\r\n\r\n").target, "/\xc3\xa9");
}

TEST(MessageParser, RequestLineErrors) {
  EXPECT_EQ(request("G(T / HTTP/1.1\r\n\r\n").error, bhttp::error::bad_method);
  EXPECT_EQ(request(" GET / HTTP/1.1\r\n\r\n").error, bhttp::error::bad_method);
  EXPECT_EQ(request("\r\nGET / HTTP/1.1\r\n\r\n").error, bhttp::error::bad_method);
  EXPECT_EQ(request("GET  / HTTP/1.1\r\n\r\n").error, bhttp::error::bad_target);
  EXPECT_EQ(request("GET /\x7f HTTP/1.1\r\n\r\n").error, bhttp::error::bad_target);
  EXPECT_EQ(request("GET /  HTTP/1.1\r\n\r\n").error, bhttp::error::bad_version);
  for (const char* version : {"HTTP/1.2", "HTTP/2.0", "HTTP/0.9", "http/1.1", "HTTP/1.1 "})
    EXPECT_EQ(request(std::string("GET / ") + version + "\r\n\r\n").error,
              bhttp::error::bad_version)
        << version;
  // Found at the first wrong byte, before the line is complete.
  EXPECT_EQ(request("GET / HTTX").error, bhttp::error::bad_version);
  EXPECT_EQ(request("GET / HTT").error, bhttp::error::partial_message);
}

TEST(MessageParser, StatusLineIsVersionThreeDigitsReason) {
  const Outcome ok = response("HTTP/1.1 404 Not\tFound \xff\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(ok.verdict(), Verdict::accepted) << ok.describe();
  EXPECT_EQ(ok.status, 404u);
  EXPECT_EQ(ok.reason, "Not\tFound \xff");
  const Outcome empty = response("HTTP/1.0 200 \r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(empty.reason, "");
  EXPECT_EQ(empty.version, 10u);
  EXPECT_EQ(response("HTTP/1.1 200\r\n\r\n").error, bhttp::error::bad_status);
  EXPECT_EQ(response("HTTP/1.1 2x0 OK\r\n\r\n").error, bhttp::error::bad_status);
  EXPECT_EQ(response("HTTP/1.1 1000 OK\r\n\r\n").error, bhttp::error::bad_status);
  EXPECT_EQ(response("HTTP/1.1  200 OK\r\n\r\n").error, bhttp::error::bad_status);
  EXPECT_EQ(response("HTTP/1.1 200 O\x01K\r\n\r\n").error, bhttp::error::bad_reason);
  EXPECT_EQ(response("HTTP/1.1 200 OK\n\r\n").error, bhttp::error::bad_reason);
  EXPECT_EQ(response("HTTP/1.2 200 OK\r\n\r\n").error, bhttp::error::bad_version);
}

// ---- Field lines (RFC 9112 §5, RFC 9110 §5.5).

TEST(MessageParser, FieldNameIsATokenWithNoWhitespaceBeforeTheColon) {
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX Y: z\r\n\r\n").error, bhttp::error::bad_field);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX : z\r\n\r\n").error, bhttp::error::bad_field);
  EXPECT_EQ(request("GET / HTTP/1.1\r\n: z\r\n\r\n").error, bhttp::error::bad_field);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX\x80: z\r\n\r\n").error, bhttp::error::bad_field);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nNoColon\r\n\r\n").error, bhttp::error::bad_field);
  const Outcome ok = request("GET / HTTP/1.1\r\nx-A_b.c~!#$%&'*+^`|: v\r\nhOsT: h\r\n\r\n");
  ASSERT_EQ(ok.verdict(), Verdict::accepted) << ok.describe();
  EXPECT_EQ(ok.fields[0].name_string, "x-A_b.c~!#$%&'*+^`|");
  EXPECT_EQ(ok.fields[1].name, static_cast<int>(bhttp::field::host));
}

TEST(MessageParser, FieldValueIsTrimmedAndTakesVisibleBytesObsTextAndInnerWhitespace) {
  const Outcome ok =
      request("GET / HTTP/1.1\r\nA:\t a \t b \t\r\nB:\r\nC:  \r\nD: \x80\xff\r\nE:x\r\n\r\n");
  ASSERT_EQ(ok.verdict(), Verdict::accepted) << ok.describe();
  std::vector<std::string> values;
  for (const auto& f : ok.fields) values.push_back(f.value);
  EXPECT_EQ(values, (std::vector<std::string>{"a \t b", "", "", "\x80\xff", "x"}));
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n").error, bhttp::error::bad_value);
  EXPECT_EQ(request(std::string("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26)).error,
            bhttp::error::bad_value);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX: a\x01\r\n\r\n").error, bhttp::error::bad_value);
}

TEST(MessageParser, BareCrIsRejected) {
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n").error, bhttp::error::bad_line_ending);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX: a\r\r\n\r\n").error, bhttp::error::bad_line_ending);
  EXPECT_EQ(request("GET / HTTP/1.1\r\n\rX").error, bhttp::error::bad_line_ending);
  EXPECT_EQ(request("GET / HTTP/1.1\rX\r\n\r\n").error, bhttp::error::bad_version);
  EXPECT_EQ(response("HTTP/1.1 200 OK\rX\r\n\r\n").error, bhttp::error::bad_line_ending);
}

TEST(MessageParser, BareLfIsRejectedAsBeastRejectsIt) {
  EXPECT_EQ(request("GET / HTTP/1.1\nHost: a\r\n\r\n").error, bhttp::error::bad_version);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nHost: a\nB: c\r\n\r\n").error, bhttp::error::bad_value);
  EXPECT_EQ(request("GET / HTTP/1.1\r\n\nX: a\r\n\r\n").error, bhttp::error::bad_field);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX: a\r\n\n").error, bhttp::error::bad_field);
}

// Deliberate difference 1 (RFC 9112 §5.2), and whitespace before the first field line (§2.2).
TEST(MessageParser, ObsFoldIsRejected) {
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n").error, bhttp::error::bad_obs_fold);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX: a\r\n\t\r\n\r\n").error, bhttp::error::bad_obs_fold);
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n").error, bhttp::error::bad_obs_fold);
  EXPECT_EQ(request("GET / HTTP/1.1\r\n X: a\r\n\r\n").error, bhttp::error::bad_field);
}

// ---- Framing (RFC 9112 §6, RFC 9110 §8.6).

TEST(MessageParser, ContentLengthListOfEqualValuesIsOneValue) {
  for (const char* value : {"5", "5, 5", "5 , 5", "05, 5", "005"}) {
    const Outcome o =
        request(std::string("POST / HTTP/1.1\r\nContent-Length: ") + value + "\r\n\r\nabcde");
    ASSERT_EQ(o.verdict(), Verdict::accepted) << value << ": " << o.describe();
    EXPECT_EQ(o.content_length, 5u);
    EXPECT_EQ(o.body, "abcde");
  }
  EXPECT_EQ(request("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 05\r\n\r\nabcde")
                .content_length,
            5u);
}

TEST(MessageParser, ContentLengthErrors) {
  EXPECT_EQ(request("POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n").error,
            bhttp::error::multiple_content_length);
  EXPECT_EQ(request("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n").error,
            bhttp::error::multiple_content_length);
  for (const char* value : {"", "5,", ",5", "5,,5", "+5", "5x", "5 5", "0x5", "-1"})
    EXPECT_EQ(
        request(std::string("POST / HTTP/1.1\r\nContent-Length: ") + value + "\r\n\r\n").error,
        bhttp::error::bad_content_length)
        << value;
}

TEST(MessageParser, ContentLengthOverflowIsAnError) {
  EXPECT_EQ(request("POST / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n").error,
            bhttp::error::bad_content_length);
  EXPECT_EQ(request("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n").error,
            bhttp::error::bad_content_length);
  // The largest value is a length (and more than any body limit).
  MessageParser p(MessageKind::request, {});
  const auto step = p.parse("POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n");
  ASSERT_EQ(step.event, ParseEvent::header);
  EXPECT_EQ(p.content_length(), UINT64_MAX);
  ParseLimits limited;
  limited.body_bytes = 1u << 20;
  EXPECT_EQ(
      request("POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n", limited).error,
      bhttp::error::body_limit);
}

TEST(MessageParser, ChunkedResponseBodyAndTransferEncodingNotEndingInChunked) {
  const Outcome chunked = response(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  ASSERT_EQ(chunked.verdict(), Verdict::accepted) << chunked.describe();
  EXPECT_TRUE(chunked.chunked);
  EXPECT_EQ(chunked.body, "hello");
  // RFC 9112 §6.3 (4): in a response, the body then runs until the close.
  const Outcome until_close =
      response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nxyz");
  ASSERT_EQ(until_close.verdict(), Verdict::accepted) << until_close.describe();
  EXPECT_FALSE(until_close.chunked);
  EXPECT_TRUE(until_close.until_eof);
  EXPECT_FALSE(until_close.keep_alive);
  EXPECT_EQ(until_close.body, "xyz");
  // Beast's: another Transfer-Encoding after one that ended in chunked.
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip"
                     "\r\n\r\n")
                .error,
            bhttp::error::bad_transfer_encoding);
}

// Deliberate difference 2 (RFC 9112 §6.3 (4), §6.1).
TEST(MessageParser, RequestTransferEncodingMustEndInOneChunked) {
  const Outcome ok =
      request("POST / HTTP/1.1\r\nTransfer-Encoding: , Chunked ,\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  ASSERT_EQ(ok.verdict(), Verdict::accepted) << ok.describe();
  EXPECT_EQ(ok.body, "abc");
  // Codings before chunked frame the body as chunked; whether they are implemented is the
  // server's decision (the gateway answers 501).
  const Outcome coded = request(
      "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n0\r\n\r\n");
  ASSERT_EQ(coded.verdict(), Verdict::accepted) << coded.describe();
  EXPECT_EQ(coded.body, "abc");
  for (const char* value : {"gzip", "chunked, gzip", "chunked, chunked", "", "chunked;q=1",
                            "chunked x", "identity", "gzip;level=1, chunked"})
    EXPECT_EQ(
        request(std::string("POST / HTTP/1.1\r\nTransfer-Encoding: ") + value + "\r\n\r\n0\r\n\r\n")
            .error,
        bhttp::error::bad_transfer_encoding)
        << value;
  EXPECT_EQ(request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked"
                    "\r\n\r\n")
                .error,
            bhttp::error::bad_transfer_encoding);
}

// Deliberate difference 3 (RFC 9112 §6.1, §6.3, §11.2).
TEST(MessageParser, ResponseTransferEncodingWithParametersOrChunkedTwiceIsRejected) {
  for (const char* value :
       {"gzip;q=1, chunked", "chunked;q=1", "chunked, chunked", "a b", "\"chunked\""})
    EXPECT_EQ(response(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: ") + value +
                       "\r\n\r\n0\r\n\r\n")
                  .error,
              bhttp::error::bad_transfer_encoding)
        << value;
}

// Deliberate difference 4 (RFC 9112 §6.3 (3)): the second of the two is the error.
TEST(MessageParser, ContentLengthAndTransferEncodingTogetherAreAnError) {
  EXPECT_EQ(
      request("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n").error,
      bhttp::error::bad_transfer_encoding);
  EXPECT_EQ(
      request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n").error,
      bhttp::error::bad_content_length);
  EXPECT_EQ(
      response("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc").error,
      bhttp::error::bad_content_length);
}

// ---- Chunked bodies (RFC 9112 §7.1).

TEST(MessageParser, ChunkSizeIsHexWithOverflowDetection) {
  const std::string head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  const Outcome ok =
      request(head + "0000000000000000000005\r\nhello\r\nA\r\n0123456789\r\n00\r\n\r\n");
  ASSERT_EQ(ok.verdict(), Verdict::accepted) << ok.describe();
  EXPECT_EQ(ok.body, "hello0123456789");
  EXPECT_EQ(request(head + "10000000000000000\r\n").error, bhttp::error::bad_chunk);
  EXPECT_EQ(request(head + "\r\nhello\r\n").error, bhttp::error::bad_chunk);
  EXPECT_EQ(request(head + "zz\r\n").error, bhttp::error::bad_chunk);
  EXPECT_EQ(request(head + "5\r\nhelloX\r\n0\r\n\r\n").error, bhttp::error::bad_chunk);
  EXPECT_EQ(request(head + "5\rX").error, bhttp::error::bad_line_ending);
  // The largest size is a size: the data is then awaited.
  EXPECT_EQ(request(head + "ffffffffffffffff\r\nabc").error, bhttp::error::partial_message);
}

TEST(MessageParser, ChunkExtensionsAreCheckedAndSkipped) {
  const std::string head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const char* ext : {";a", ";a=b", " ; a = b", "\t;a", ";a=\"b\\\"c\";d", ";a=\"\x80\t\"",
                          ";a=b ;c", ";a;b;c=d"}) {
    const Outcome o = request(head + "5" + ext + "\r\nhello\r\n0" + ext + "\r\n\r\n");
    EXPECT_EQ(o.verdict(), Verdict::accepted) << ext << ": " << o.describe();
    EXPECT_EQ(o.body, "hello") << ext;
  }
  for (const char* ext :
       {" ", ";", ";a=", ";a;", ";a=b ", ";a=b c", " x", "x", ";a=\"b", ";a=\"\x01\"", ";=b", "\n"})
    EXPECT_EQ(request(head + "5" + ext + "\r\nhello\r\n0\r\n\r\n").error,
              bhttp::error::bad_chunk_extension)
        << "[" << ext << "]";
}

// Deliberate difference 7 (RFC 9112 §7.1.1, RFC 9110 §5.6.4).
TEST(MessageParser, ChunkExtensionQuotedStringTakesNoControlBytes) {
  const std::string head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const char* ext : {";a=\"\x01\"", ";a=\"\n\"", ";a=\"\x7f\"", ";a=\"\\\x01\""})
    EXPECT_EQ(request(head + "5" + ext + "\r\nhello\r\n0\r\n\r\n").error,
              bhttp::error::bad_chunk_extension)
        << ext;
  EXPECT_EQ(request(head + "5;a=\"\\\"\\\\\t \x80\"\r\nhello\r\n0\r\n\r\n").body, "hello");
}

TEST(MessageParser, TrailersAreCheckedAndAvailableAfterTheMessage) {
  const std::string head =
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n";
  const Outcome o = request(head + "X-Sum: 1 \r\nexpires:\t2\r\n\r\nGET / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(o.verdict(), Verdict::accepted) << o.describe();
  ASSERT_EQ(o.trailers.size(), 2u);
  EXPECT_EQ(o.trailers[0].value, "1");
  EXPECT_EQ(o.trailers[1].name, static_cast<int>(bhttp::field::expires));
  EXPECT_EQ(o.consumed, head.size() + 25);  // not the next request
  EXPECT_EQ(request(head + "X y\r\n\r\n").error, bhttp::error::bad_field);
  EXPECT_EQ(request(head + "X: \x01\r\n\r\n").error, bhttp::error::bad_value);
  EXPECT_EQ(request(head + "X: a\r\n b\r\n\r\n").error, bhttp::error::bad_obs_fold);
  EXPECT_EQ(request(head + "Content-Length: 5\r\n\r\n").error, bhttp::error::bad_content_length);
  EXPECT_EQ(request(head + "Transfer-Encoding: chunked\r\n\r\n").error,
            bhttp::error::bad_transfer_encoding);
  EXPECT_EQ(request(head + "\r\x01").error, bhttp::error::bad_line_ending);
  EXPECT_EQ(request(head).error, bhttp::error::partial_message);
}

// ---- Limits.

// Deliberate difference 6: the start line and the field lines count together.
TEST(MessageParser, HeaderLimitCountsStartLineAndFieldLinesButNotTheBlankLine) {
  const std::string wire = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";  // 25 bytes counted
  ParseLimits limits;
  limits.header_bytes = 25;
  EXPECT_EQ(request(wire, limits).verdict(), Verdict::accepted);
  limits.header_bytes = 24;
  EXPECT_EQ(request(wire, limits).error, bhttp::error::header_limit);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nHost: a-very-long-host-name", limits).error,
            bhttp::error::header_limit);
  limits.header_bytes = 16;
  EXPECT_EQ(request("GET / HTTP/1.1\r\n\r\n", limits).verdict(), Verdict::accepted);
  limits.header_bytes = 15;
  EXPECT_EQ(request("GET / HTTP/1.1\r\n\r\n", limits).error, bhttp::error::header_limit);
  // A wrong byte within the limit is a syntax error, past it the limit.
  limits.header_bytes = 20;
  EXPECT_EQ(request("GET / HTTP/1.1\r\nX\x01: a", limits).error, bhttp::error::bad_field);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nXYZWVU\x01", limits).error, bhttp::error::header_limit);
}

// Deliberate difference 6: trailers and chunk lines are bounded too.
TEST(MessageParser, HeaderLimitBoundsTrailersAndChunkLines) {
  ParseLimits limits;
  limits.header_bytes = 60;
  const std::string head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(
      request(head + "5;a=" + std::string(56, 'b') + "\r\nhello\r\n0\r\n\r\n", limits).verdict(),
      Verdict::accepted);
  EXPECT_EQ(request(head + "5;a=" + std::string(57, 'b') + "\r\nhello\r\n0\r\n\r\n", limits).error,
            bhttp::error::bad_chunk_extension);
  EXPECT_EQ(request(head + "0\r\nX: " + std::string(55, 'b') + "\r\n\r\n", limits).verdict(),
            Verdict::accepted);
  EXPECT_EQ(request(head + "0\r\nX: " + std::string(56, 'b') + "\r\n\r\n", limits).error,
            bhttp::error::header_limit);
}

TEST(MessageParser, BodyLimit) {
  ParseLimits limits;
  limits.body_bytes = 4;
  // A length over the limit is refused at the header, before any body byte.
  MessageParser p(MessageKind::request, limits);
  const auto step = p.parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde");
  EXPECT_EQ(step.event, ParseEvent::error);
  EXPECT_EQ(step.error, bhttp::error::body_limit);
  EXPECT_EQ(request("POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd", limits).body, "abcd");
  const std::string chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n";
  EXPECT_EQ(request(chunked + "2\r\ncd\r\n0\r\n\r\n", limits).body, "abcd");
  EXPECT_EQ(request(chunked + "3\r\ncde\r\n0\r\n\r\n", limits).error, bhttp::error::body_limit);
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\n\r\nabcd", limits).body, "abcd");
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\n\r\nabcde", limits).error, bhttp::error::body_limit);
}

// ---- Connection (RFC 9112 §9.3, RFC 9110 §7.6.1).

TEST(MessageParser, KeepAliveDefaultsByVersionAndFollowsConnectionOptions) {
  EXPECT_TRUE(request("GET / HTTP/1.1\r\n\r\n").keep_alive);
  EXPECT_FALSE(request("GET / HTTP/1.0\r\n\r\n").keep_alive);
  EXPECT_TRUE(request("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
  EXPECT_FALSE(request("GET / HTTP/1.1\r\nConnection: foo, CLOSE\r\n\r\n").keep_alive);
  EXPECT_FALSE(request("GET / HTTP/1.1\r\nConnection: ,close,\r\n\r\n").keep_alive);
  EXPECT_FALSE(
      request("GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(request("GET / HTTP/1.1\r\nProxy-Connection: close\r\n\r\n").keep_alive);
  EXPECT_TRUE(request("GET / HTTP/1.1\r\nConnection: closed\r\n\r\n").keep_alive);
  const Outcome upgrade = request("GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n");
  EXPECT_TRUE(upgrade.upgrade);
  EXPECT_TRUE(upgrade.keep_alive);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nConnection: a b\r\n\r\n").error, bhttp::error::bad_value);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nConnection: close;x\r\n\r\n").error,
            bhttp::error::bad_value);
}

// Deliberate difference 5 (RFC 9112 §9.3, §6.1).
TEST(MessageParser, Http10KeepAliveLosesToCloseAndToTransferEncoding) {
  EXPECT_FALSE(request("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n").keep_alive);
  const Outcome chunked = request(
      "POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  ASSERT_EQ(chunked.verdict(), Verdict::accepted) << chunked.describe();
  EXPECT_FALSE(chunked.keep_alive);
}

// ---- Which messages have a body (RFC 9112 §6.3).

TEST(MessageParser, NoBodyFor1xx204304AndHead) {
  for (const char* wire :
       {"HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 101 Switching\r\nConnection: upgrade\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"}) {
    const Outcome o = response(std::string(wire) + "NEXT");
    ASSERT_EQ(o.verdict(), Verdict::accepted) << wire;
    EXPECT_EQ(o.body, "");
    EXPECT_EQ(o.consumed, std::string_view(wire).size());
  }
  const Outcome head = response("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", {}, true);
  ASSERT_EQ(head.verdict(), Verdict::accepted);
  EXPECT_EQ(head.content_length, 10u);
  // Also when said right after the header event.
  MessageParser p(MessageKind::response, {});
  ASSERT_EQ(p.parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n").event, ParseEvent::header);
  p.expect_no_body();
  EXPECT_EQ(p.parse("").event, ParseEvent::message_end);
}

TEST(MessageParser, ResponseWithoutLengthRunsUntilTheClose) {
  const Outcome o = response("HTTP/1.1 200 OK\r\nServer: x\r\n\r\nuntil the close");
  ASSERT_EQ(o.verdict(), Verdict::accepted);
  EXPECT_TRUE(o.until_eof);
  EXPECT_FALSE(o.keep_alive);
  EXPECT_EQ(o.body, "until the close");
}

TEST(MessageParser, RequestWithoutLengthHasNoBody) {
  const Outcome o = request("POST / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(o.verdict(), Verdict::accepted);
  EXPECT_EQ(o.body, "");
  EXPECT_EQ(o.consumed, 28u);
}

TEST(MessageParser, EndOfStreamAndPartialMessage) {
  EXPECT_EQ(request("").error, bhttp::error::end_of_stream);
  EXPECT_EQ(request("GET / HTTP/1.1\r\nHost: a\r\n").error, bhttp::error::partial_message);
  EXPECT_EQ(response("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort").error,
            bhttp::error::partial_message);
}

// ---- The interface: events, bytes consumed, views, reuse.

TEST(MessageParser, HeaderIsConsumedOnlyWhenCompleteAndViewsPointIntoTheInput) {
  MessageParser p(MessageKind::request, {});
  const std::string wire = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc";
  for (std::size_t n = 0; n < 48; ++n) {
    const auto step = p.parse(std::string_view(wire).substr(0, n));
    ASSERT_EQ(step.event, ParseEvent::need_more) << n;
    ASSERT_EQ(step.consumed, 0u) << n;
  }
  const auto header = p.parse(wire);
  ASSERT_EQ(header.event, ParseEvent::header);
  EXPECT_EQ(header.consumed, 48u);
  EXPECT_EQ(p.method().data(), wire.data());
  EXPECT_EQ(p.target().data(), wire.data() + 5);
  ASSERT_EQ(p.fields().size(), 2u);
  EXPECT_EQ(p.fields()[0].value.data(), wire.data() + 24);
  const auto body = p.parse(std::string_view(wire).substr(48));
  EXPECT_EQ(body.event, ParseEvent::body);
  EXPECT_EQ(body.body, "abc");
  EXPECT_EQ(body.body.data(), wire.data() + 48);
  EXPECT_EQ(p.parse("").event, ParseEvent::message_end);
  EXPECT_TRUE(p.message_done());
}

TEST(MessageParser, ResetReadsTheNextMessageReusingTheFieldTable) {
  MessageParser p(MessageKind::request, {});
  std::string wire;
  for (int i = 0; i < 3; ++i)
    wire += "GET /" + std::to_string(i) + " HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n";
  std::string_view rest = wire;
  const llmux::http::FieldView* table = nullptr;
  for (int i = 0; i < 3; ++i) {
    const auto step = p.parse(rest);
    ASSERT_EQ(step.event, ParseEvent::header) << i;
    EXPECT_EQ(p.target(), "/" + std::to_string(i));
    if (i == 0)
      table = p.fields().data();
    else
      EXPECT_EQ(p.fields().data(), table) << "a new field table for message " << i;
    rest.remove_prefix(step.consumed);
    EXPECT_EQ(p.parse(rest).event, ParseEvent::message_end);
    p.reset();
  }
  EXPECT_TRUE(rest.empty());
}

TEST(MessageParser, ReleasedFieldTablesGoToTheNextMessageOnTheThread) {
  // A parser that keeps streaming a body gives its tables back after the header; another
  // parser's next message on the thread takes them (no allocation), and the body still parses.
  MessageParser streaming(MessageKind::response, {});
  const std::string head = "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nContent-Length: 3\r\n\r\n";
  std::string_view rest = head;
  const auto step = streaming.parse(rest);
  ASSERT_EQ(step.event, ParseEvent::header);
  ASSERT_EQ(streaming.fields().size(), 3u);
  const llmux::http::FieldView* table = streaming.fields().data();
  streaming.release_field_tables();
  EXPECT_TRUE(streaming.fields().empty()) << "the views end with the tables";
  const auto body = streaming.parse("abc");
  EXPECT_EQ(body.event, ParseEvent::body);
  EXPECT_EQ(body.body, "abc");
  EXPECT_EQ(streaming.parse("").event, ParseEvent::message_end);

  MessageParser next(MessageKind::request, {});
  ASSERT_EQ(next.parse("GET / HTTP/1.1\r\nX: y\r\n\r\n").event, ParseEvent::header);
  EXPECT_EQ(next.fields().data(), table) << "the tables given back serve the next message";
  EXPECT_EQ(next.fields()[0].value, "y");
}

TEST(MessageParser, ErrorsStay) {
  MessageParser p(MessageKind::request, {});
  EXPECT_EQ(p.parse("G(T").error, bhttp::error::bad_method);
  EXPECT_EQ(p.parse("GET / HTTP/1.1\r\n\r\n").error, bhttp::error::bad_method);
  EXPECT_EQ(p.parse_eof().error, bhttp::error::bad_method);
  p.reset();
  EXPECT_EQ(p.parse("GET / HTTP/1.1\r\n\r\n").event, ParseEvent::header);
}

// ---- Against Beast's parser.

struct Case {
  const char* name;
  MessageKind kind;
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
  const MessageKind rq = MessageKind::request, rs = MessageKind::response;
  std::vector<Case> c = {
      {"get", rq, "GET /v1/models HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n"},
      {"post", rq,
       "POST /v1/chat/completions HTTP/1.1\r\nHost: llmux:8080\r\nUser-Agent: curl/8.5.0\r\n"
       "Authorization: Bearer sk-1234567890abcdef\r\nContent-Type: application/json\r\n"
       "Content-Length: 16\r\nConnection: keep-alive\r\n\r\n{\"model\":\"abc\"}\n"},
      {"pipelined", rq, "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n"},
      {"http10", rq, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
      {"http10_close", rq, "GET / HTTP/1.0\r\n\r\n"},
      {"connection_list", rq, "GET / HTTP/1.1\r\nConnection: close, Upgrade ,x\r\n\r\n"},
      {"connection_bad", rq, "GET / HTTP/1.1\r\nConnection: a b\r\n\r\n"},
      {"proxy_connection", rq, "GET / HTTP/1.1\r\nProxy-Connection: CLOSE\r\n\r\n"},
      {"upgrade", rq, "GET / HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"},
      {"cl_list_equal", rq, "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\nabcde"},
      {"cl_list_differ", rq, "POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\nabcde"},
      {"cl_twice_differ", rq, "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"},
      {"cl_empty_item", rq, "POST / HTTP/1.1\r\nContent-Length: 5,,5\r\n\r\nabcde"},
      {"cl_bad", rq, "POST / HTTP/1.1\r\nContent-Length: 5x\r\n\r\nabcde"},
      {"cl_plus", rq, "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\nabcde"},
      {"cl_overflow", rq, "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"},
      {"cl_then_te", rq,
       "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"te_then_cl", rq,
       "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"},
      {"te_not_last", rq, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"},
      {"te_twice", rq, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"},
      {"te_dup_field", rq,
       "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"chunked_trailer", rq,
       "POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n5;a=b ; c=\"d\\\"e\"\r\nhello\r\n"
       "0;z\r\nX-Sum: 1\r\nX-Other: a b\r\n\r\n"},
      {"chunked_gzip", rq,
       "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
      {"chunk_bad_size", rq, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"},
      {"chunk_bad_crlf", rq, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"},
      {"chunk_bad_ext", rq, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1 ;=\r\na\r\n"},
      {"chunk_lf", rq,
       "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n"},
      {"trailer_connection", rq,
       "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nConnection: close\r\n\r\n"},
      {"obs_fold", rq, "GET / HTTP/1.1\r\nX-A: one\r\n two \r\n\tthree\r\nX-C: \r\n\r\n"},
      {"bad_method", rq, "G(T / HTTP/1.1\r\n\r\n"},
      {"bad_target", rq, "GET /\x7f HTTP/1.1\r\n\r\n"},
      {"bad_version", rq, "GET / HTTP/2.0\r\n\r\n"},
      {"bad_field_name", rq, "GET / HTTP/1.1\r\nX Y: z\r\n\r\n"},
      {"empty_field_name", rq, "GET / HTTP/1.1\r\n: z\r\n\r\n"},
      {"bad_value", rq, "GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n"},
      {"bare_lf", rq, "GET / HTTP/1.1\r\nX: a\nY: b\r\n\r\n"},
      {"bad_line_ending", rq, "GET / HTTP/1.1\r\nX: a\rY\r\n\r\n"},
      {"end_bad", rq, "GET / HTTP/1.1\r\nX: a\r\n\rZ"},
      {"ows", rq, "GET / HTTP/1.1\r\nX-A:\t a \t\r\nX-B:  \t\r\nX-C:b\r\n\r\n"},
      {"high_bytes", rq, "GET /\xc3\xa9 HTTP/1.1\r\nX: \xff\xfe\t\x80\r\n\r\n"},
      {"leading_crlf", rq, "\r\nGET / HTTP/1.1\r\n\r\n"},
      {"partial", rq, "GET / HTTP/1.1\r\nHost: a"},
      {"response_length", rs,
       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
       "11\r\n\r\n{\"ok\":true}"},
      {"response_close", rs, "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nuntil the close"},
      {"response_http10", rs, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi"},
      {"response_http10_close", rs, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nhi"},
      {"response_100", rs, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"},
      {"response_101", rs, "HTTP/1.1 101 Switching\r\nConnection: Upgrade\r\n\r\n"},
      {"response_204", rs, "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"},
      {"response_304", rs, "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n"},
      {"response_te_gzip", rs, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzzz"},
      {"response_te_params", rs,
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip;q=1, chunked\r\n\r\n0\r\n\r\n"},
      {"response_te_empty", rs, "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\nzzz"},
      {"response_te_then_cl", rs,
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc"},
      {"response_empty_reason", rs, "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n"},
      {"response_status_000", rs, "HTTP/1.1 000 X\r\nContent-Length: 0\r\n\r\n"},
      {"response_bad_status", rs, "HTTP/1.1 2x0 OK\r\n\r\n"},
      {"response_no_reason_sp", rs, "HTTP/1.1 200\r\n\r\n"},
      {"response_bad_reason", rs, "HTTP/1.1 200 O\x01K\r\n\r\n"},
      {"response_partial", rs, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"},
      {"response_partial_header", rs, "HTTP/1.1 200 OK\r\nContent-Le"},
      {"response_sse", rs,
       "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
       "1a\r\ndata: {\"delta\":\"hello\"}\n\n\r\ne\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"},
      {"response_big_chunked", rs,
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked_body(100 * 1024, 8000)},
      {"response_big_length", rs,
       "HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n" + std::string(70000, 'q')},
      {"empty", rq, ""},
  };
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 300; ++i)
    many += "X-Field-" + std::to_string(i) + ": value " + std::to_string(i) + "\r\n";
  c.push_back({"long_header", rq, many + "\r\n"});
  return c;
}

std::vector<ParseSetup> setups(MessageKind kind) {
  std::vector<ParseSetup> out;
  out.push_back({kind, {}, false});
  for (const std::uint32_t header : {0u, 10u, 16u, 24u, 30u, 64u, 8192u}) {
    for (const std::optional<std::uint64_t> body :
         {std::optional<std::uint64_t>{}, std::optional<std::uint64_t>{0},
          std::optional<std::uint64_t>{4}, std::optional<std::uint64_t>{1 << 20}}) {
      ParseLimits limits;
      limits.header_bytes = header;
      limits.body_bytes = body;
      out.push_back({kind, limits, false});
    }
  }
  if (kind == MessageKind::response) out.push_back({kind, {}, true});
  return out;
}

TEST(MessageParserDiff, SameAsBeastOnTheTable) {
  int compared = 0;
  for (const Case& c : cases()) {
    for (const ParseSetup& setup : setups(c.kind)) {
      const Outcome beast = run_beast(setup, c.wire);
      const Outcome whole = run_llmux(setup, c.wire, {});
      ASSERT_EQ(compare(setup, c.wire, beast, whole), "")
          << c.name << " header_bytes=" << setup.limits.header_bytes;
      for (const Cuts& cuts : random_cuts(c.wire.size(), 3))
        ASSERT_EQ(compare_cuts(whole, run_llmux(setup, c.wire, cuts)), "") << c.name;
      ASSERT_EQ(compare_cuts(whole, run_llmux(setup, c.wire,
                                              Cuts(std::min<std::size_t>(c.wire.size(), 4096), 1))),
                "")
          << c.name << " in 1-byte pieces";
      ++compared;
    }
  }
  EXPECT_GT(compared, 1000);
}

// The comparison itself must be able to fail.
TEST(MessageParserDiff, CompareFindsDifferences) {
  const ParseSetup setup{MessageKind::request, {}, false};
  const std::string wire = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  const Outcome beast = run_beast(setup, wire);
  Outcome ours = run_llmux(setup, wire, {});
  ASSERT_EQ(compare(setup, wire, beast, ours), "");
  ours.fields[0].value = "b";
  EXPECT_NE(compare(setup, wire, beast, ours), "");
  Outcome rejected = beast;
  rejected.error = bhttp::error::bad_value;
  EXPECT_NE(compare(setup, wire, rejected, run_llmux(setup, wire, {})), "");
  EXPECT_NE(compare(setup, wire, beast, rejected), "");
}

TEST(MessageParser, BuildUsesTheExpectedScans) {
  // The scalar build compiles everything with LLMUX_NO_SIMD: its parser lives in its own inline
  // namespace, so both builds test what they claim to.
#if defined(LLMUX_NO_SIMD)
  EXPECT_NE(std::string(typeid(MessageParser).name()).find("parser_scalar"), std::string::npos);
#else
  EXPECT_NE(std::string(typeid(MessageParser).name()).find("parser_simd"), std::string::npos);
#endif
}

}  // namespace
