#include "gateway/request.hpp"

#include <algorithm>
#include <cstring>

namespace llmux::gateway {

namespace {

/// What one put() saw of the header: views into the parser's input, valid until that put()
/// returns (Beast parses the request line, every field and calls on_header_impl in the one call
/// that finds the header's end). Per thread, reused: no allocation once it has grown.
struct HeaderScratch {
  std::string_view method, target;
  std::vector<HeaderField> fields;
};
thread_local HeaderScratch scratch;

/// A body's first reservation at most (a client's Content-Length is a claim, not memory).
constexpr std::uint64_t kMaxReserve = 1 << 20;

}  // namespace

std::string_view Request::operator[](bhttp::field name) const {
  for (const auto& f : fields_)
    if (f.name == name) return f.value;
  return {};
}

std::string_view Request::operator[](std::string_view name) const {
  for (const auto& f : fields_)
    if (boost::beast::iequals(f.name_string, name)) return f.value;
  return {};
}

std::size_t Request::count(bhttp::field name) const {
  return static_cast<std::size_t>(
      std::count_if(fields_.begin(), fields_.end(), [&](const auto& f) { return f.name == name; }));
}

std::size_t Request::count(std::string_view name) const {
  return static_cast<std::size_t>(std::count_if(fields_.begin(), fields_.end(), [&](const auto& f) {
    return boost::beast::iequals(f.name_string, name);
  }));
}

RequestParser::RequestParser(Request& into) : r_(into) {
  r_.fields_.clear();
  r_.body_.clear();
  r_.method_string_ = r_.target_ = {};
  r_.method_ = bhttp::verb::unknown;
  r_.version_ = 11;
  r_.keep_alive_ = true;
}

void RequestParser::on_request_impl(bhttp::verb method, sv method_string, sv target, int version,
                                    error_code&) {
  r_.method_ = method;
  r_.version_ = static_cast<unsigned>(version);
  scratch.method = method_string;
  scratch.target = target;
  scratch.fields.clear();
}

void RequestParser::on_field_impl(bhttp::field name, sv name_string, sv value, error_code&) {
  if (is_header_done()) return;  // a trailer field of a chunked body: never a header field
  scratch.fields.push_back({name, name_string, value});
}

void RequestParser::on_header_impl(error_code&) {
  std::size_t size = scratch.method.size() + scratch.target.size();
  for (const auto& f : scratch.fields) size += f.name_string.size() + f.value.size();
  r_.block_.resize(size);
  char* p = r_.block_.data();
  auto copy = [&p](std::string_view s) {
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    const std::string_view kept(p, s.size());
    p += s.size();
    return kept;
  };
  r_.method_string_ = copy(scratch.method);
  r_.target_ = copy(scratch.target);
  r_.fields_.resize(scratch.fields.size());
  for (std::size_t i = 0; i < scratch.fields.size(); ++i) {
    const HeaderField& in = scratch.fields[i];
    HeaderField& out = r_.fields_[i];
    out.name = in.name;
    out.name_string = copy(in.name_string);
    out.value = copy(in.value);
  }
  r_.keep_alive_ = keep_alive();
  scratch.fields.clear();
  scratch.method = scratch.target = {};
}

void RequestParser::on_body_init_impl(boost::optional<std::uint64_t> const& content_length,
                                      error_code&) {
  if (content_length)
    r_.body_.reserve(static_cast<std::size_t>(std::min(*content_length, kMaxReserve)));
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
