// SPDX-License-Identifier: Apache-2.0
#include "gateway/request.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/ascii.hpp"

namespace llmux::gateway {

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

}  // namespace

/// The parsers' stages, reused: a parser takes one when it starts and gives it back when it
/// ends (several requests may be half read on one thread at once).
struct ParserStages {
  static std::vector<RequestParser::Stage>& spare() {
    thread_local std::vector<RequestParser::Stage> stages;
    return stages;
  }
};

std::string_view Request::operator[](bhttp::field name) const {
  for (const auto& f : fields_)
    if (f.name == name) return f.value;
  return {};
}

std::string_view Request::operator[](std::string_view name) const {
  for (const auto& f : fields_)
    if (iequals(f.name_string, name)) return f.value;
  return {};
}

std::size_t Request::count(bhttp::field name) const {
  return static_cast<std::size_t>(
      std::count_if(fields_.begin(), fields_.end(), [&](const auto& f) { return f.name == name; }));
}

std::size_t Request::count(std::string_view name) const {
  return static_cast<std::size_t>(std::count_if(
      fields_.begin(), fields_.end(), [&](const auto& f) { return iequals(f.name_string, name); }));
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

RequestParser::RequestParser(Request& into) : r_(into) {
  r_.fields_.clear();
  r_.body_.clear();
  r_.method_string_ = r_.target_ = {};
  r_.method_ = bhttp::verb::unknown;
  r_.version_ = 11;
  r_.keep_alive_ = true;
  auto& spare = ParserStages::spare();
  if (!spare.empty()) {
    stage_ = std::move(spare.back());
    spare.pop_back();
  }
}

RequestParser::~RequestParser() {
  stage_.bytes.clear();
  stage_.at.clear();
  auto& spare = ParserStages::spare();
  if (stage_.bytes.capacity() > 0 && stage_.bytes.capacity() <= (64u << 10) && spare.size() < 64)
    spare.push_back(std::move(stage_));
}

std::uint32_t RequestParser::keep(std::string_view s) {
  // Every view Beast gives is valid only during the call that gives it (the input buffer may
  // change between two put() calls, a folded value lives in Beast's own scratch): copied now.
  const auto at = static_cast<std::uint32_t>(stage_.bytes.size());
  stage_.bytes.append(s);
  return at;
}

void RequestParser::on_request_impl(bhttp::verb method, sv method_string, sv target, int version,
                                    error_code&) {
  r_.method_ = method;
  r_.version_ = static_cast<unsigned>(version);
  keep(method_string);
  keep(target);
  method_size_ = static_cast<std::uint32_t>(method_string.size());
  target_size_ = static_cast<std::uint32_t>(target.size());
}

void RequestParser::on_field_impl(bhttp::field name, sv name_string, sv value, error_code&) {
  if (is_header_done()) return;  // a trailer field of a chunked body: never a header field
  // Kept as a line, name ": " value CRLF (HeaderField::line()): the line as received when it is
  // exactly that (the usual case: one copy), else joined.
  using namespace std::string_view_literals;
  const auto at = static_cast<std::uint32_t>(stage_.bytes.size());
  if (const sv line = field_line(name_string, value); !line.empty())
    stage_.bytes.append(std::string_view(line));
  else
    stage_.bytes.append(name_string, ": "sv, value, "\r\n"sv);
  stage_.at.push_back({name, at, static_cast<std::uint32_t>(name_string.size()),
                       static_cast<std::uint32_t>(value.size())});
}

void RequestParser::on_header_impl(error_code&) {
  // The header is complete: the request takes its bytes, exactly sized (a connection's next
  // request reuses the memory when it fits), and the views are made once, into their place.
  const ByteBuilder& bytes = stage_.bytes;
  if (r_.block_.capacity() < bytes.size()) {
    std::vector<char>().swap(r_.block_);
    r_.block_.reserve(bytes.size());
  }
  r_.block_.assign(bytes.data(), bytes.data() + bytes.size());
  const char* base = r_.block_.data();
  r_.method_string_ = std::string_view(base, method_size_);
  r_.target_ = std::string_view(base + method_size_, target_size_);
  if (r_.fields_.capacity() < stage_.at.size()) {
    std::vector<HeaderField>().swap(r_.fields_);
    r_.fields_.reserve(stage_.at.size());
  }
  r_.fields_.resize(stage_.at.size());
  for (std::size_t i = 0; i < stage_.at.size(); ++i) {
    const FieldAt& f = stage_.at[i];
    r_.fields_[i] = {f.name, std::string_view(base + f.at, f.name_size),
                     std::string_view(base + f.at + f.name_size + 2, f.value_size)};
  }
  r_.keep_alive_ = keep_alive();
}

void RequestParser::on_body_init_impl(boost::optional<std::uint64_t> const& content_length,
                                      error_code&) {
  // With room for the padding the JSON parser reads past the end (gateway/request_view.cpp:
  // read_body_fields), which would otherwise reallocate and copy the body.
  if (!content_length) return;
  const auto want = static_cast<std::size_t>(std::min(*content_length, kMaxReserve) + kBodyPadding);
  if (auto& spare = spare_bodies(); r_.body_.capacity() <= kNoMemory && !spare.empty()) {
    r_.body_ = std::move(spare.back());  // (empty; reserve() below grows it when too small)
    spare.pop_back();
  }
  r_.body_.reserve(want);
}

std::size_t RequestParser::on_body_impl(sv body, error_code&) {
  r_.body_.append(body.data(), body.size());
  return body.size();
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, sv body, error_code&) {
  r_.body_.append(body.data(), body.size());
  return body.size();
}

}  // namespace llmux::gateway
