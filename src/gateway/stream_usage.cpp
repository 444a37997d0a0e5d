// SPDX-License-Identifier: Apache-2.0
#include "gateway/stream_usage.hpp"

#include <cstring>

#include <boost/json.hpp>

#include "openai/sse.hpp"

namespace llmux::gateway {

namespace {

/// End of the event that starts at `from`: just past its blank line; 0 when it has none.
std::size_t event_end(const char* data, std::size_t n, std::size_t from) {
  for (std::size_t i = from; i + 1 < n; ++i) {
    if (data[i] != '\n') continue;
    if (data[i + 1] == '\n') return i + 2;
    if (data[i + 1] == '\r' && i + 2 < n && data[i + 2] == '\n') return i + 3;
  }
  return 0;
}

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

/// True when `json` is an object whose `choices` is an empty array and `usage` an object.
bool usage_only(std::string_view json) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return false;
  const auto& o = v.get_object();
  const auto* choices = o.if_contains("choices");
  const auto* usage = o.if_contains("usage");
  return choices && choices->is_array() && choices->get_array().empty() && usage &&
         usage->is_object();
}

}  // namespace

bool streams_usage_on_request(std::string_view path) {
  return path == "/v1/chat/completions" || path == "/v1/completions";
}

UsageRequest ask_for_usage(std::string_view method, std::string_view path, const std::string& body,
                           const BodyFields& fields) {
  UsageRequest r;
  if (method != "POST" || !fields.parsed || !fields.stream || fields.include_usage == 1 ||
      !streams_usage_on_request(path))
    return r;
  if (fields.include_usage == -1) {
    // No stream_options at all: the prefix goes where the opening brace was (a parsed object
    // starts with it after optional whitespace).
    const std::size_t brace = body.find_first_not_of(" \t\r\n");
    if (brace == std::string::npos || body[brace] != '{') return r;
    r.asked = true;
    r.skip = brace + 1;
    return r;
  }
  // stream_options is there (null, or an object without include_usage true): set it. A parse
  // failure (a body simdjson took but Boost.JSON does not) leaves the body as it was.
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return r;
  auto& so = v.get_object()["stream_options"];
  if (!so.is_object()) so = boost::json::object();
  so.get_object()["include_usage"] = true;
  r.owned = boost::json::serialize(v);
  r.asked = true;
  return r;
}

ByteRange find_usage_only_event(const char* data, std::size_t n) {
  for (std::size_t start = 0; start < n;) {
    const std::size_t end = event_end(data, n, start);
    if (end == 0) break;
    const std::string_view ev(data + start, end - start);
    // Cheap test first: most events name neither.
    if (contains(ev, "\"usage\"") && contains(ev, "\"choices\"")) {
      bool found = false;
      openai::SseParser parser;
      parser.feed(ev,
                  [&](const openai::SseEvent& event) { found = found || usage_only(event.data); });
      if (found) return {start, end};
    }
    start = end;
  }
  return {n, n};
}

}  // namespace llmux::gateway
