// SPDX-License-Identifier: Apache-2.0
#include "gateway/stream_usage.hpp"

#include <cstring>

#include <boost/json.hpp>

#include "openai/sse.hpp"

namespace llmux::gateway {

namespace {

/// End of the event that starts at `from`: just past its blank line; 0 when it has none.
std::size_t event_end(const char* data, std::size_t size, std::size_t from) {
  for (std::size_t i = from; i + 1 < size; ++i) {
    if (data[i] != '\n') continue;
    if (data[i + 1] == '\n') return i + 2;
    if (data[i + 1] == '\r' && i + 2 < size && data[i + 2] == '\n') return i + 3;
  }
  return 0;
}

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

/// True when `json` is an object whose `choices` is an empty array and `usage` an object.
bool usage_only(std::string_view json) {
  boost::system::error_code ec;
  const boost::json::value parsed = boost::json::parse(json, ec);
  if (ec || !parsed.is_object()) return false;
  const auto& object = parsed.get_object();
  const auto* choices = object.if_contains("choices");
  const auto* usage = object.if_contains("usage");
  return choices && choices->is_array() && choices->get_array().empty() && usage &&
         usage->is_object();
}

}  // namespace

bool streams_usage_on_request(std::string_view path) {
  return path == "/v1/chat/completions" || path == "/v1/completions";
}

UsageRequest ask_for_usage(std::string_view method, std::string_view path, const std::string& body,
                           const BodyFields& fields) {
  UsageRequest usage_request;
  if (method != "POST" || !fields.parsed || !fields.stream || fields.include_usage == 1 ||
      !streams_usage_on_request(path))
    return usage_request;
  if (fields.include_usage == -1) {
    // No stream_options at all: the prefix goes where the opening brace was (a parsed object
    // starts with it after optional whitespace).
    const std::size_t brace = body.find_first_not_of(" \t\r\n");
    if (brace == std::string::npos || body[brace] != '{') return usage_request;
    usage_request.asked = true;
    usage_request.skip = brace + 1;
    return usage_request;
  }
  // stream_options is there (null, or an object without include_usage true): set it. A parse
  // failure (a body simdjson took but Boost.JSON does not) leaves the body as it was.
  boost::system::error_code ec;
  boost::json::value parsed = boost::json::parse(body, ec);
  if (ec || !parsed.is_object()) return usage_request;
  auto& options = parsed.get_object()["stream_options"];
  if (!options.is_object()) options = boost::json::object();
  options.get_object()["include_usage"] = true;
  usage_request.owned = boost::json::serialize(parsed);
  usage_request.asked = true;
  return usage_request;
}

ByteRange find_usage_only_event(const char* data, std::size_t size) {
  for (std::size_t start = 0; start < size;) {
    const std::size_t end = event_end(data, size, start);
    if (end == 0) break;
    const std::string_view event_text(data + start, end - start);
    // Cheap test first: most events name neither.
    if (contains(event_text, "\"usage\"") && contains(event_text, "\"choices\"")) {
      bool found = false;
      openai::SseParser parser;
      parser.feed(event_text,
                  [&](const openai::SseEvent& event) { found = found || usage_only(event.data); });
      if (found) return {start, end};
    }
    start = end;
  }
  return {size, size};
}

}  // namespace llmux::gateway
