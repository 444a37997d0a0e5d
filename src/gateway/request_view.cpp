// SPDX-License-Identifier: Apache-2.0
#include "gateway/request_view.hpp"

#include <simdjson.h>

#include "gateway/request.hpp"

namespace llmux::gateway {

namespace {

namespace od = simdjson::ondemand;

static_assert(simdjson::SIMDJSON_PADDING <= kBodyPadding);

bool pad(std::string& body) {
  if (body.empty()) return false;
  if (body.capacity() < body.size() + simdjson::SIMDJSON_PADDING)
    body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  return true;
}

/// A message's content: a string, or parts whose `text` (or `input_text`/`output_text` parts')
/// count; images and files add nothing.
void content_text(od::value v, std::string& out) {
  std::string_view s;
  if (!v.get_string().get(s)) {
    out.append(s);
    return;
  }
  od::array parts;
  if (v.get_array().get(parts)) return;
  for (auto part : parts) {
    od::object o;
    if (part.get_object().get(o)) continue;
    for (auto field : o) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return;
      if (key == "text" && !field.value().get_string().get(s)) out.append(s);
    }
  }
}

/// One message or Responses input item: "role: text" or the call/output it carries.
void item_text(od::value v, std::string& out) {
  od::object o;
  if (v.get_object().get(o)) {
    std::string_view s;
    if (!v.get_string().get(s)) out.append(s).push_back('\n');
    return;
  }
  for (auto field : o) {
    std::string_view key, s;
    od::value value;
    if (field.unescaped_key().get(key) || field.value().get(value)) return;
    if (key == "role" || key == "type" || key == "name") {
      if (!value.get_string().get(s)) out.append(s).append(": ");
    } else if (key == "content") {
      content_text(value, out);
    } else if (key == "arguments" || key == "output" || key == "input") {
      if (!value.get_string().get(s))
        out.append(s);
      else
        content_text(value, out);
    }
  }
  out.push_back('\n');
}

}  // namespace

void read_prompt_text(const std::string& body, std::string& out) {
  if (body.empty()) return;
  thread_local od::parser parser;
  simdjson::padded_string copy;
  simdjson::padded_string_view view(body.data(), body.size(), body.capacity());
  if (body.capacity() < body.size() + simdjson::SIMDJSON_PADDING) {
    copy = simdjson::padded_string(body);
    view = copy;
  }
  auto doc = parser.iterate(view);
  od::object obj;
  if (doc.error() || doc.get_object().get(obj)) return;
  // `instructions` come before `input` whatever the body's order: a second pass takes them.
  std::string_view s;
  if (!obj["instructions"].get_string().get(s)) out.append("instructions: ").append(s).append("\n");
  if (obj.reset().error()) return;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return;
    if (key != "messages" && key != "input" && key != "prompt") continue;
    auto value = field.value();
    if (!value.get_string().get(s)) {
      out.append(s).push_back('\n');
      continue;
    }
    od::array items;
    if (value.get_array().get(items)) continue;
    for (auto item : items) {
      od::value v;
      if (item.get(v)) return;
      item_text(v, out);
    }
  }
}

BodyFields read_body_fields(std::string& body) {
  BodyFields f;
  f.body_bytes = body.size();
  if (!pad(body)) return f;
  const std::size_t size = body.size();
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
    } else if (key == "prompt_cache_key") {
      if (!value.get_string().get(s)) f.prompt_cache_key = std::string(s);
    } else if (key == "store") {
      bool b = true;
      if (!value.get_bool().get(b)) f.store_false = !b;
    } else if (key == "stream_options") {
      f.include_usage = 0;
      simdjson::ondemand::object so;
      if (!value.get_object().get(so)) {
        bool b = false;
        if (!so["include_usage"].get_bool().get(b) && b) f.include_usage = 1;
      }
    } else if (key == "max_tokens" || key == "max_completion_tokens" ||
               key == "max_output_tokens") {
      std::int64_t n = 0;
      if (!value.get_int64().get(n) && n >= 0) f.max_tokens = n;
    }
  }
  return f;
}

}  // namespace llmux::gateway
