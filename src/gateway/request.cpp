// SPDX-License-Identifier: Apache-2.0
#include "gateway/request.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include <boost/beast/http/error.hpp>

#include "core/ascii.hpp"

namespace llmux::gateway {

namespace bhttp = boost::beast::http;

namespace {

/// A body's first reservation at most (a client's Content-Length is a claim, not memory).
constexpr std::uint64_t kMaxReserve = 1 << 20;

/// Spare bodies kept per thread (Request::release_body): at most this many, each at most this
/// large (a thread's spares hold at most 1 MiB).
constexpr std::size_t kSpareBodies = 64;
constexpr std::size_t kSpareBodySize = 16 * 1024;
/// The capacity of a string that holds no memory of its own (its bytes inside the object).
const std::size_t kNoMemory = std::string().capacity();

std::vector<std::string>& spare_bodies() {
  thread_local std::vector<std::string> bodies;
  return bodies;
}

/// Parsers given back when a request has been read (their field tables keep their memory), at
/// most kSpareParsers per thread: several requests may be half read on one thread at once.
constexpr std::size_t kSpareParsers = 64;
std::vector<std::unique_ptr<http::MessageParser>>& spare_parsers() {
  thread_local std::vector<std::unique_ptr<http::MessageParser>> parsers;
  return parsers;
}

std::unique_ptr<http::MessageParser> take_parser() {
  auto& spare = spare_parsers();
  if (spare.empty()) return std::make_unique<http::MessageParser>(http::MessageKind::request);
  std::unique_ptr<http::MessageParser> parser = std::move(spare.back());
  spare.pop_back();
  return parser;
}

}  // namespace

std::string_view Request::operator[](bhttp::field name) const {
  for (const auto& field : fields_)
    if (field.name == name) return field.value;
  return {};
}

std::string_view Request::operator[](std::string_view name) const {
  for (const auto& field : fields_)
    if (iequals(field.name_string, name)) return field.value;
  return {};
}

std::size_t Request::count(bhttp::field name) const {
  return static_cast<std::size_t>(std::count_if(
      fields_.begin(), fields_.end(), [&](const auto& field) { return field.name == name; }));
}

std::size_t Request::count(std::string_view name) const {
  return static_cast<std::size_t>(
      std::count_if(fields_.begin(), fields_.end(),
                    [&](const auto& field) { return iequals(field.name_string, name); }));
}

void Request::release_body() {
  auto& spare = spare_bodies();
  if (body_.capacity() > kNoMemory && body_.capacity() <= kSpareBodySize &&
      spare.size() < kSpareBodies) {
    body_.clear();
    spare.push_back(std::move(body_));
  }
  std::string().swap(body_);
}

RequestParser::RequestParser(Request& into) : request_(into), parser_(take_parser()) {
  request_.fields_.clear();
  request_.body_.clear();
  request_.method_string_ = request_.target_ = {};
  request_.method_ = bhttp::verb::unknown;
  request_.version_ = 11;
  request_.keep_alive_ = true;
}

RequestParser::~RequestParser() {
  if (auto& spare = spare_parsers(); spare.size() < kSpareParsers) {
    parser_->reset();
    parser_->set_limits({});
    spare.push_back(std::move(parser_));
  }
}

void RequestParser::header_limit(std::uint32_t bytes) {
  http::ParseLimits limits = parser_->limits();
  limits.header_bytes = bytes;
  parser_->set_limits(limits);
}

void RequestParser::body_limit(std::optional<std::uint64_t> bytes) {
  http::ParseLimits limits = parser_->limits();
  limits.body_bytes = bytes;
  parser_->set_limits(limits);
}

std::size_t RequestParser::put(std::string_view input, boost::system::error_code& error) {
  error = {};
  std::size_t consumed = 0;
  for (;;) {
    const http::ParseStep step = parser_->parse(input.substr(consumed));
    switch (step.event) {
      case http::ParseEvent::need_more:
        consumed += step.consumed;
        error = bhttp::error::need_more;
        return consumed;
      case http::ParseEvent::header:
        take_header(input.substr(consumed, step.consumed));
        break;
      case http::ParseEvent::body:
        request_.body_.append(step.body);
        break;
      case http::ParseEvent::message_end:
        return consumed + step.consumed;  // the trailer fields (if any) are dropped
      case http::ParseEvent::error:
        error = step.error;
        return consumed + step.consumed;
    }
    consumed += step.consumed;
  }
}

void RequestParser::put_eof(boost::system::error_code& error) {
  const http::ParseStep step = parser_->parse_eof();
  error = step.event == http::ParseEvent::error ? step.error : boost::system::error_code{};
}

void RequestParser::take_header(std::string_view header) {
  // The request line and the field lines are copied as they came, in one piece; a field line
  // in another form than name ": " value CRLF gets that form added after them (rare: other
  // spacing around the value), so that every field has its line().
  using namespace std::string_view_literals;
  const auto fields = parser_->fields();
  auto is_plain_line = [](const http::FieldView& field) {
    const char* name_end = field.name_string.data() + field.name_string.size();
    const char* value_end = field.value.data() + field.value.size();
    return field.value.data() == name_end + 2 && name_end[0] == ':' && name_end[1] == ' ' &&
           value_end[0] == '\r';
  };
  std::size_t size = header.size();
  for (const http::FieldView& field : fields)
    if (!is_plain_line(field)) size += field.name_string.size() + field.value.size() + 4;
  std::vector<char>& block = request_.block_;
  if (block.capacity() < size) {
    std::vector<char>().swap(block);
    block.reserve(size);
  }
  block.assign(header.begin(), header.end());
  const char* const base = block.data();
  auto moved = [&](std::string_view view) {
    return std::string_view(base + (view.data() - header.data()), view.size());
  };
  request_.method_ = parser_->verb();
  request_.method_string_ = moved(parser_->method());
  request_.target_ = moved(parser_->target());
  request_.version_ = parser_->version();
  request_.keep_alive_ = parser_->keep_alive();
  std::vector<HeaderField>& kept = request_.fields_;
  if (kept.capacity() < fields.size()) {
    std::vector<HeaderField>().swap(kept);
    kept.reserve(fields.size());
  }
  kept.clear();
  for (const http::FieldView& field : fields) {
    if (is_plain_line(field)) {
      kept.push_back({field.name, moved(field.name_string), moved(field.value)});
      continue;
    }
    const std::size_t offset = block.size();
    block.insert(block.end(), field.name_string.begin(), field.name_string.end());
    block.insert(block.end(), {':', ' '});
    block.insert(block.end(), field.value.begin(), field.value.end());
    block.insert(block.end(), {'\r', '\n'});
    kept.push_back(
        {field.name, std::string_view(base + offset, field.name_string.size()),
         std::string_view(base + offset + field.name_string.size() + 2, field.value.size())});
  }
  if (const auto length = parser_->content_length(); length && *length > 0) reserve_body(*length);
}

void RequestParser::reserve_body(std::uint64_t content_length) {
  // With room for the padding the JSON parser reads past the end (gateway/request_view.cpp:
  // read_body_fields), which would otherwise reallocate and copy the body.
  const auto want = static_cast<std::size_t>(std::min(content_length, kMaxReserve) + kBodyPadding);
  if (auto& spare = spare_bodies(); request_.body_.capacity() <= kNoMemory && !spare.empty()) {
    request_.body_ = std::move(spare.back());  // (empty; reserve() below grows it when too small)
    spare.pop_back();
  }
  request_.body_.reserve(want);
}

}  // namespace llmux::gateway
