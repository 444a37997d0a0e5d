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

/// Claude Code's system block that differs in every request (vLLM drops it for the same reason:
/// vllm/entrypoints/anthropic/serving.py, _convert_system_message).
constexpr std::string_view kBillingHeader = "x-anthropic-billing-header";

/// A message's content: a string, or parts whose `text` (or `input_text`/`output_text` parts')
/// count, and of Anthropic's blocks the `thinking`, a tool_use's `input` and a tool_result's
/// `content`; images and files add nothing.
void content_text(od::value content, std::string& out) {
  std::string_view text;
  if (!content.get_string().get(text)) {
    out.append(text);
    return;
  }
  od::array parts;
  if (content.get_array().get(parts)) return;
  for (auto part : parts) {
    od::object object;
    if (part.get_object().get(object)) continue;
    for (auto field : object) {
      std::string_view key;
      od::value value;
      if (field.unescaped_key().get(key) || field.value().get(value)) return;
      if (key == "text" || key == "thinking") {
        if (!value.get_string().get(text) && !text.starts_with(kBillingHeader)) out.append(text);
      } else if (key == "content") {
        content_text(value, out);
      } else if (key == "input") {
        od::object input;
        if (!value.get_object().get(input) && !input.raw_json().get(text)) out.append(text);
      }
    }
  }
}

/// One message or Responses input item that is an object: "role: text" or the call/output it
/// carries. `role`, when given, is set to the item's role.
void object_text(od::object& object, std::string& out, std::string_view* role = nullptr) {
  for (auto field : object) {
    std::string_view key, text;
    od::value value;
    if (field.unescaped_key().get(key) || field.value().get(value)) return;
    if (key == "role" || key == "type" || key == "name") {
      if (!value.get_string().get(text)) {
        out.append(text).append(": ");
        if (key == "role" && role) *role = text;
      }
    } else if (key == "content") {
      content_text(value, out);
    } else if (key == "arguments" || key == "output" || key == "input") {
      if (!value.get_string().get(text))
        out.append(text);
      else
        content_text(value, out);
    }
  }
  out.push_back('\n');
}

/// One message or Responses input item: an object (object_text()) or a string.
void item_text(od::value item, std::string& out) {
  od::object object;
  if (item.get_object().get(object)) {
    std::string_view text;
    if (!item.get_string().get(text)) out.append(text).push_back('\n');
    return;
  }
  object_text(object, out);
}

}  // namespace

void read_prompt_text(const std::string& body, std::string& out, PromptOrder order) {
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
  // One pass over the fields, in whatever order they come (a malformed body ends it where it
  // turns bad: nothing is read twice, so nothing is read past an error); the parts then go out in
  // the order the model reads them: the Responses API's `instructions`, the Messages API's
  // system prompt — its `system` field, then the system messages among `messages`, which vLLM
  // joins into it (vllm/entrypoints/anthropic/serving.py, _convert_system_message) —, then the
  // conversation.
  thread_local std::string instructions, system, conversation, message;
  instructions.clear();
  system.clear();
  conversation.clear();
  const bool messages_api = order == PromptOrder::messages_api;
  std::string_view text;
  for (auto field : obj) {
    std::string_view key;
    od::value value;
    if (field.unescaped_key().get(key) || field.value().get(value)) break;
    if (key == "instructions") {
      if (!value.get_string().get(text)) instructions.append("instructions: ").append(text) += '\n';
      continue;
    }
    if (key == "system") {
      system.append("system: ");
      content_text(value, system);
      system.push_back('\n');
      continue;
    }
    if (key != "messages" && key != "input" && key != "prompt") continue;
    if (!value.get_string().get(text)) {
      conversation.append(text).push_back('\n');
      continue;
    }
    od::array items;
    if (value.get_array().get(items)) continue;
    for (auto item : items) {
      od::value item_value;
      if (item.get(item_value)) break;
      od::object object;
      if (!messages_api || item_value.get_object().get(object)) {
        item_text(item_value, conversation);
        continue;
      }
      message.clear();
      std::string_view role;
      object_text(object, message, &role);
      (role == "system" ? system : conversation).append(message);
    }
  }
  out.append(instructions).append(system).append(conversation);
}

namespace {

bool null_value(simdjson::ondemand::value& value) {
  bool is_null = false;
  return !value.is_null().get(is_null) && is_null;
}

/// Whether a field's value is unset: null, false, 0 or an empty string.
bool unset(simdjson::ondemand::value& value) {
  if (null_value(value)) return true;
  bool flag = false;
  if (!value.get_bool().get(flag)) return !flag;
  double number = 0;
  if (!value.get_double().get(number)) return number == 0;
  std::string_view text;
  if (!value.get_string().get(text)) return text.empty();
  return false;
}

/// Why a top-level field keeps a request's output from being continued elsewhere, or null.
const char* stands_in_the_way_of_continuing(std::string_view key,
                                            simdjson::ondemand::value& value) {
  if (key == "n" || key == "best_of") {
    std::int64_t count = 1;
    if (null_value(value) || (!value.get_int64().get(count) && count == 1)) return nullptr;
    return key == "n" ? "n > 1" : "best_of";
  }
  if (key == "echo") return unset(value) ? nullptr : "echo";
  if (key == "logprobs" || key == "top_logprobs" || key == "prompt_logprobs")
    return unset(value) ? nullptr : "logprobs";
  if (key == "presence_penalty" || key == "frequency_penalty")
    return unset(value) ? nullptr : "a penalty on output tokens";
  if (key == "response_format") {
    simdjson::ondemand::object format;
    std::string_view type;
    if (null_value(value) || (!value.get_object().get(format) &&
                              !format["type"].get_string().get(type) && type == "text"))
      return nullptr;
    return "structured output";
  }
  if (key == "structured_outputs" || key == "guided_json" || key == "guided_regex" ||
      key == "guided_choice" || key == "guided_grammar")
    return unset(value) ? nullptr : "structured output";
  if (key == "continue_final_message") return unset(value) ? nullptr : "continue_final_message";
  if (key == "prompt") {
    std::string_view text;
    return value.get_string().get(text) ? "a prompt that is not one text" : nullptr;
  }
  return nullptr;
}

}  // namespace

BodyFields read_body_fields(std::string& body) {
  BodyFields fields;
  fields.body_bytes = body.size();
  if (!pad(body)) return fields;
  const std::size_t size = body.size();
  thread_local simdjson::ondemand::parser parser;
  simdjson::padded_string_view view(body.data(), size, body.capacity());
  auto doc = parser.iterate(view);
  if (doc.error()) return fields;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return fields;
  fields.parsed = true;
  // One pass over the top-level fields, in whatever order they come.
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) {
      fields.parsed = false;
      return fields;
    }
    auto value = field.value();
    std::string_view text;
    if (key == "model") {
      if (!value.get_string().get(text)) fields.model = std::string(text);
    } else if (key == "stream") {
      bool stream = false;
      if (!value.get_bool().get(stream)) fields.stream = stream;
    } else if (key == "previous_response_id") {
      if (!value.get_string().get(text)) fields.previous_response_id = std::string(text);
    } else if (key == "user") {
      if (!value.get_string().get(text)) fields.user = std::string(text);
    } else if (key == "metadata") {
      // The Messages API's end user (Claude Code: one per session), where `user` is not given.
      simdjson::ondemand::object metadata;
      if (fields.user.empty() && !value.get_object().get(metadata) &&
          !metadata["user_id"].get_string().get(text))
        fields.user = std::string(text);
    } else if (key == "prompt_cache_key") {
      if (!value.get_string().get(text)) fields.prompt_cache_key = std::string(text);
    } else if (key == "priority") {
      fields.names_priority = true;
    } else if (key == "store") {
      bool store = true;
      if (!value.get_bool().get(store)) fields.store_false = !store;
    } else if (key == "stream_options") {
      fields.include_usage = 0;
      simdjson::ondemand::object options;
      if (!value.get_object().get(options)) {
        bool include_usage = false;
        if (!options["include_usage"].get_bool().get(include_usage) && include_usage)
          fields.include_usage = 1;
      }
    } else if (key == "max_tokens" || key == "max_completion_tokens" ||
               key == "max_output_tokens") {
      std::int64_t max_tokens = 0;
      if (!value.get_int64().get(max_tokens) && max_tokens >= 0) fields.max_tokens = max_tokens;
    } else if (simdjson::ondemand::value other; !fields.not_continuable && !value.get(other)) {
      fields.not_continuable = stands_in_the_way_of_continuing(key, other);
    }
  }
  return fields;
}

}  // namespace llmux::gateway
