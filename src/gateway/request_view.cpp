#include "gateway/request_view.hpp"

#include <simdjson.h>

namespace llmux::gateway {

BodyFields read_body_fields(std::string& body) {
  BodyFields f;
  if (body.empty()) return f;
  const std::size_t size = body.size();
  if (body.capacity() < size + simdjson::SIMDJSON_PADDING)
    body.reserve(size + simdjson::SIMDJSON_PADDING);
  thread_local simdjson::ondemand::parser parser;
  simdjson::padded_string_view view(body.data(), size, body.capacity());
  auto doc = parser.iterate(view);
  if (doc.error()) return f;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return f;
  f.parsed = true;
  // One pass over the top-level fields, in whatever order they come.
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) {
      f.parsed = false;
      return f;
    }
    auto value = field.value();
    std::string_view s;
    if (key == "model") {
      if (!value.get_string().get(s)) f.model = std::string(s);
    } else if (key == "stream") {
      bool b = false;
      if (!value.get_bool().get(b)) f.stream = b;
    } else if (key == "previous_response_id") {
      if (!value.get_string().get(s)) f.previous_response_id = std::string(s);
    } else if (key == "user") {
      if (!value.get_string().get(s)) f.user = std::string(s);
    } else if (key == "max_tokens" || key == "max_completion_tokens" ||
               key == "max_output_tokens") {
      std::int64_t n = 0;
      if (!value.get_int64().get(n) && n >= 0) f.max_tokens = n;
    }
  }
  return f;
}

}  // namespace llmux::gateway
