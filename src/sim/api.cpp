// SPDX-License-Identifier: Apache-2.0
#include "sim/api.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/openai_error.hpp"
#include "core/tokenizer.hpp"
#include "sim/chat_template.hpp"
#include "sim/input_items.hpp"
#include "sim/turn.hpp"

namespace llmux::sim {
namespace json = boost::json;

namespace {

// Special tokens of the ChatML template (one token each, with ids no text piece can hash to
// by accident in practice).

ApiError bad(std::string message, std::optional<std::string> param = std::nullopt) {
  return bad_request(std::move(message), std::move(param));
}
// Errors raised by the serving layer (vLLM's create_error_response: type "BadRequestError").
ApiError serving_error(std::string message) {
  return ApiError{400, std::move(message), "BadRequestError", std::nullopt};
}
std::string_view kind_name(const json::value& value) {
  return json_kind_name(value);
}

// Typed field readers: absent or null → nullopt; wrong type → ApiError.
struct Fields {
  const json::object& object;
  std::optional<ApiError> err;

  const json::value* get(std::string_view key) const {
    auto it = object.find(key);
    if (it == object.end() || it->value().is_null()) return nullptr;
    return &it->value();
  }
  void type_error(std::string_view key, std::string_view want, const json::value& value) {
    if (!err)
      err = bad(fmt::format("'{}' must be {}, got {}", key, want, kind_name(value)),
                std::string(key));
  }
  std::optional<bool> boolean(std::string_view key) {
    auto* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_bool()) {
      type_error(key, "a boolean", *value);
      return std::nullopt;
    }
    return value->get_bool();
  }
  std::optional<std::int64_t> integer(std::string_view key) {
    auto* value = get(key);
    if (!value) return std::nullopt;
    if (value->is_int64()) return value->get_int64();
    if (value->is_uint64() && value->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
      return static_cast<std::int64_t>(value->get_uint64());
    if (value->is_double() && std::floor(value->get_double()) == value->get_double() &&
        std::abs(value->get_double()) < 9e15)
      return static_cast<std::int64_t>(value->get_double());
    type_error(key, "an integer", *value);
    return std::nullopt;
  }
  std::optional<double> number(std::string_view key) {
    auto* value = get(key);
    if (!value) return std::nullopt;
    if (value->is_number()) return value->to_number<double>();
    type_error(key, "a number", *value);
    return std::nullopt;
  }
  std::optional<std::string_view> string(std::string_view key) {
    auto* value = get(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) {
      type_error(key, "a string", *value);
      return std::nullopt;
    }
    return std::string_view(value->get_string());
  }
};

}  // namespace

std::variant<GenRequest, ApiError> parse_request(Endpoint endpoint, std::string_view body,
                                                 const ApiContext& ctx) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec) return bad(fmt::format("JSON decode error: {}", ec.message()));
  if (!doc.is_object()) return bad("the request body must be a JSON object");
  const json::object& object = doc.get_object();
  Fields fields{object, std::nullopt};
  GenRequest request;
  request.endpoint = endpoint;

  auto model = fields.string("model");
  request.stream = fields.boolean("stream").value_or(false);
  if (auto* stream_options = fields.get("stream_options")) {
    if (!stream_options->is_object()) {
      fields.type_error("stream_options", "an object", *stream_options);
    } else {
      const auto& option_fields = stream_options->get_object();
      auto include_usage = option_fields.find("include_usage");
      auto continuous_usage = option_fields.find("continuous_usage_stats");
      request.include_usage =
          include_usage == option_fields.end() || include_usage->value().is_null()
              ? true
              : (include_usage->value().is_bool() ? include_usage->value().get_bool() : true);
      request.continuous_usage = continuous_usage != option_fields.end() &&
                                 continuous_usage->value().is_bool() &&
                                 continuous_usage->value().get_bool();
      if (!request.stream && !fields.err)
        fields.err =
            bad("Stream options can only be defined when `stream=True`.", "stream_options");
    }
  }
  if (auto temperature = fields.number("temperature")) {
    if (*temperature < 0 && !fields.err)
      fields.err = bad(fmt::format("temperature must be non-negative, got {}.", *temperature),
                       "temperature");
    request.temperature = *temperature;
  }
  if (auto seed = fields.integer("seed")) request.seed = static_cast<std::uint64_t>(*seed);
  // vLLM refuses any priority but 0 unless it schedules by priority (vllm/v1/engine/processor.py).
  if (auto priority = fields.integer("priority")) request.priority = static_cast<int>(*priority);
  if (request.priority != 0 && !ctx.priority_scheduling && !fields.err)
    fields.err = bad(
        fmt::format("Got priority {} but Priority scheduling is not enabled.", request.priority));
  request.ignore_eos = fields.boolean("ignore_eos").value_or(false);
  if (auto choices = fields.integer("n"); choices && *choices != 1 && !fields.err)
    fields.err =
        serving_error(fmt::format("n={} is not supported by llmux sim (only n=1)", *choices));

  const char* max_field = "max_tokens";
  std::optional<std::int64_t> max_tokens;
  switch (endpoint) {
    case Endpoint::Completions: {
      max_tokens = fields.integer("max_tokens");
      const json::value* prompt = fields.get("prompt");
      if (!prompt) {
        if (!fields.err) fields.err = bad("'prompt' is a required field", "prompt");
        break;
      }
      auto take_text = [&](std::string_view text) { Tokenizer::encode(text, request.prompt_ids); };
      auto take_ids = [&](const json::array& ids) -> bool {
        for (const auto& id : ids) {
          if (!id.is_int64() && !id.is_uint64()) return false;
          auto token_id = id.to_number<std::int64_t>();
          if (token_id < 0 || token_id > std::numeric_limits<std::uint32_t>::max()) return false;
          request.prompt_ids.push_back(static_cast<std::uint32_t>(token_id));
        }
        return true;
      };
      if (prompt->is_string()) {
        take_text(prompt->get_string());
      } else if (prompt->is_array()) {
        const auto& prompt_list = prompt->get_array();
        if (!prompt_list.empty() && (prompt_list[0].is_int64() || prompt_list[0].is_uint64())) {
          if (!take_ids(prompt_list) && !fields.err)
            fields.err = bad("'prompt' token ids must be non-negative 32-bit integers", "prompt");
        } else if (prompt_list.size() == 1 && prompt_list[0].is_string()) {
          take_text(prompt_list[0].get_string());
        } else if (prompt_list.size() == 1 && prompt_list[0].is_array()) {
          if (!take_ids(prompt_list[0].get_array()) && !fields.err)
            fields.err = bad("'prompt' token ids must be non-negative 32-bit integers", "prompt");
        } else if (prompt_list.size() > 1) {
          if (!fields.err)
            fields.err =
                bad("batched prompts are not supported by llmux sim; send one prompt per request",
                    "prompt");
        } else if (!fields.err) {
          fields.err =
              bad("'prompt' must be a string, a list of token ids, or a list of one of those",
                  "prompt");
        }
      } else {
        fields.type_error("prompt", "a string or an array", *prompt);
      }
      if (!fields.err && request.prompt_ids.empty())
        fields.err = bad("The prompt cannot be empty.", "prompt");
      break;
    }
    case Endpoint::Chat: {
      max_tokens = fields.integer("max_completion_tokens");
      if (max_tokens) {
        max_field = "max_completion_tokens";
      } else {
        max_tokens = fields.integer("max_tokens");
      }
      const json::value* msgs = fields.get("messages");
      if (!msgs) {
        if (!fields.err) fields.err = bad("'messages' is a required field", "messages");
        break;
      }
      std::vector<Message> conv;
      if (auto error = parse_chat_messages(*msgs, conv); error && !fields.err) fields.err = error;
      if (!fields.err && conv.empty())
        fields.err = bad("'messages' must contain at least one message", "messages");
      std::string tools_text;
      if (auto error = parse_tools(endpoint, object, request, tools_text); error && !fields.err)
        fields.err = error;
      if (fields.err) break;
      // vLLM's ChatCompletionRequest validator, then the template's rendering of the end.
      const bool generation_prompt = fields.boolean("add_generation_prompt").value_or(true);
      request.continue_final_message = fields.boolean("continue_final_message").value_or(false);
      if (request.continue_final_message && generation_prompt) {
        fields.err =
            bad("Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
        break;
      }
      request.last_input = last_input_text(conv);
      if (request.continue_final_message) {
        request.continued_reasoning = conv.back().reasoning;
        request.continued_content = conv.back().content;
      }
      add_tools_to_prompt(conv, tools_text);
      request.prompt_ids =
          render_chat(conv,
                      request.continue_final_message ? ChatEnding::final_message_open
                      : generation_prompt            ? ChatEnding::generation_prompt
                                                     : ChatEnding::closed,
                      &request.continued_from);
      break;
    }
    case Endpoint::Responses: {
      max_tokens = fields.integer("max_output_tokens");
      max_field = "max_output_tokens";
      request.store = fields.boolean("store").value_or(true);
      request.background = fields.boolean("background").value_or(false);
      if (auto ins = fields.string("instructions")) request.instructions = std::string(*ins);
      if (auto prev = fields.string("previous_response_id"))
        request.previous_response_id = std::string(*prev);
      const json::value* input_value = fields.get("input");
      if (!input_value) {
        if (!fields.err) fields.err = bad("'input' is a required field", "input");
        break;
      }
      std::vector<Message> input;
      if (input_value->is_string()) {
        input.push_back(Message{"user", std::string(input_value->get_string())});
      } else if (auto error = parse_response_input(*input_value, input); error && !fields.err) {
        fields.err = error;
      }
      std::string tools_text;
      if (auto error = parse_tools(endpoint, object, request, tools_text); error && !fields.err)
        fields.err = error;
      if (fields.err) break;
      if (request.background && !request.store) {
        fields.err = bad("background can only be used when `store` is true", "background");
        break;
      }
      if (!request.previous_response_id.empty()) {
        auto prev = ctx.lookup_conversation ? ctx.lookup_conversation(request.previous_response_id)
                                            : std::nullopt;
        if (!prev) {
          // vLLM checks the model first, then the stored response.
          if (model && *model != ctx.served_model_name) break;
          return ApiError{
              404, fmt::format("Response with id '{}' not found.", request.previous_response_id),
              "invalid_request_error", std::nullopt};
        }
        request.conversation = std::move(*prev);
      }
      for (auto& message : input) request.conversation.push_back(std::move(message));
      std::vector<Message> full;
      if (!request.instructions.empty()) full.push_back(Message{"system", request.instructions});
      full.insert(full.end(), request.conversation.begin(), request.conversation.end());
      request.last_input = last_input_text(full);
      add_tools_to_prompt(full, tools_text);
      request.prompt_ids = render_chat(full);
      if (!fields.err && request.prompt_ids.empty())
        fields.err = bad("'input' cannot be empty", "input");
      break;
    }
  }
  if (max_tokens && *max_tokens < 1 && !fields.err)
    fields.err =
        bad(fmt::format("{} must be at least 1, got {}.", max_field, *max_tokens), max_field);
  if (fields.err) return *fields.err;
  if (model && *model != ctx.served_model_name) {
    return ApiError{404, fmt::format("The model `{}` does not exist.", *model), "NotFoundError",
                    std::string("model")};
  }
  request.model = ctx.served_model_name;
  request.max_tokens = max_tokens;
  return request;
}

std::variant<std::int64_t, ApiError> effective_max_tokens(const GenRequest& req,
                                                          std::int64_t max_model_len) {
  const auto prompt_tokens = static_cast<std::int64_t>(req.prompt_ids.size());
  // Chat appends the exception's cause (None) to the message: vLLM's own quirk.
  const std::string_view tail = req.endpoint == Endpoint::Chat ? " None" : "";
  if (prompt_tokens >= max_model_len) {
    if (req.endpoint == Endpoint::Responses) {
      return ApiError{400,
                      fmt::format("The engine prompt length {} exceeds the max_model_len {}. "
                                  "Please reduce prompt.",
                                  prompt_tokens, max_model_len),
                      "invalid_request_error", std::nullopt};
    }
    return serving_error(fmt::format(
        "This model's maximum context length is {} tokens. However, your request has {} input "
        "tokens. Please reduce the length of the input messages.{}",
        max_model_len, prompt_tokens, tail));
  }
  std::optional<std::int64_t> max_tokens = req.max_tokens;
  if (!max_tokens && req.endpoint == Endpoint::Completions)
    max_tokens = 16;  // vLLM's completions default
  if (!max_tokens) return max_model_len - prompt_tokens;
  if (prompt_tokens + *max_tokens > max_model_len) {
    // The Responses API clamps max_output_tokens instead of refusing.
    if (req.endpoint == Endpoint::Responses) return max_model_len - prompt_tokens;
    return serving_error(fmt::format(
        "'max_tokens' or 'max_completion_tokens' is too large: {}. This model's maximum context "
        "length is {} tokens and your request has {} input tokens ({} > {} - {}).{}",
        *max_tokens, max_model_len, prompt_tokens, *max_tokens, max_model_len, prompt_tokens,
        tail));
  }
  return *max_tokens;
}

std::string json_quote(std::string_view text) {
  return json::serialize(json::string_view(text));
}

std::string usage_json(const Usage& usage, bool null_details) {
  std::string details;
  if (usage.prompt_tokens_details && usage.cached_tokens > 0)
    details =
        fmt::format(R"(,"prompt_tokens_details":{{"cached_tokens":{}}})", usage.cached_tokens);
  else if (null_details)
    details = R"(,"prompt_tokens_details":null)";
  return fmt::format(R"({{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{}{}}})",
                     usage.prompt_tokens, usage.prompt_tokens + usage.completion_tokens,
                     usage.completion_tokens, details);
}

namespace {
std::string finish_json(std::string_view finish_reason) {
  return finish_reason.empty() ? "null" : fmt::format("\"{}\"", finish_reason);
}
// A chat chunk's continuous usage: vLLM writes chat chunks with exclude_unset (no details).
std::string usage_tail(const std::optional<Usage>& usage) {
  return usage ? fmt::format(",\"usage\":{}", usage_json(*usage, false)) : std::string();
}
}  // namespace

std::string completion_body(const ResponseMeta& meta, std::string_view text, const Usage& usage) {
  return fmt::format(
      R"({{"id":"{}","object":"text_completion","created":{},"model":{},"choices":[{{"index":0,"text":{},"logprobs":null,"finish_reason":{},"stop_reason":null,"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null}}],"service_tier":null,"system_fingerprint":null,"usage":{},"kv_transfer_params":{}}})",
      meta.id, meta.created, json_quote(meta.model), json_quote(text),
      finish_json(meta.finish_reason), usage_json(usage), kv_transfer_params_json(meta));
}

std::string chat_body(const ResponseMeta& meta, std::string_view text, const Usage& usage) {
  return fmt::format(
      R"({{"id":"{}","object":"chat.completion","created":{},"model":{},"choices":[{{"index":0,"message":{{"role":"assistant","content":{},"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning_content":null}},"logprobs":null,"finish_reason":{},"stop_reason":null,"token_ids":null}}],"service_tier":null,"system_fingerprint":null,"usage":{},"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":{}}})",
      meta.id, meta.created, json_quote(meta.model), json_quote(text),
      finish_json(meta.finish_reason), usage_json(usage), kv_transfer_params_json(meta));
}

std::string chat_role_frame(const ResponseMeta& meta, const std::optional<Usage>& continuous) {
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":{},\"model\":{},"
      "\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},"
      "\"logprobs\":null,\"finish_reason\":null}}],\"prompt_token_ids\":null{}}}\n\n",
      meta.id, meta.created, json_quote(meta.model), usage_tail(continuous));
}

std::string completion_token_frame(const ResponseMeta& meta, std::string_view text,
                                   std::string_view finish_reason,
                                   const std::optional<Usage>& continuous) {
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"text_completion\",\"created\":{},\"model\":{},"
      "\"choices\":[{{\"index\":0,\"text\":{},\"logprobs\":null,\"finish_reason\":{},"
      "\"stop_reason\":null,\"prompt_token_ids\":null,\"token_ids\":null}}],\"usage\":{}}}\n\n",
      meta.id, meta.created, json_quote(meta.model), json_quote(text), finish_json(finish_reason),
      continuous ? usage_json(*continuous) : std::string("null"));
}

std::string chat_token_frame(const ResponseMeta& meta, std::string_view text,
                             std::string_view finish_reason,
                             const std::optional<Usage>& continuous) {
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":{},\"model\":{},"
      "\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"logprobs\":null,"
      "\"finish_reason\":{}{},\"token_ids\":null}}]{}}}\n\n",
      meta.id, meta.created, json_quote(meta.model), json_quote(text), finish_json(finish_reason),
      finish_reason.empty() ? "" : ",\"stop_reason\":null", usage_tail(continuous));
}

std::string usage_frame(const ResponseMeta& meta, const Usage& usage) {
  const char* object =
      meta.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[],"
      "\"usage\":{}}}\n\n",
      meta.id, object, meta.created, json_quote(meta.model), usage_json(usage, false));
}

std::string done_frame() {
  return "data: [DONE]\n\n";
}

std::string stream_error_frame(int status, std::string_view message) {
  return "data: " + openai_error_json(status, message) + "\n\n";
}

boost::json::object response_object(const ResponseMeta& meta, const GenRequest& req,
                                    std::string_view status, std::string_view text,
                                    const std::optional<Usage>& usage, const TurnOutput* turn) {
  json::object response;
  response["id"] = meta.id;
  response["object"] = "response";
  response["created_at"] = meta.created;
  response["status"] = status;
  response["background"] = req.background;
  response["error"] = nullptr;
  if (status == "incomplete") {
    response["incomplete_details"] = json::object{{"reason", "max_output_tokens"}};
  } else {
    response["incomplete_details"] = nullptr;
  }
  if (req.instructions.empty()) {
    response["instructions"] = nullptr;
  } else {
    response["instructions"] = req.instructions;
  }
  if (req.max_tokens) {
    response["max_output_tokens"] = *req.max_tokens;
  } else {
    response["max_output_tokens"] = nullptr;
  }
  response["model"] = meta.model;
  json::array output;
  if (turn && status != "queued" && status != "in_progress") {
    output = turn_output_items(*turn, meta.item_id);
  } else if (status != "queued" && status != "in_progress") {
    json::object item;
    item["id"] = meta.item_id;
    item["type"] = "message";
    item["role"] = "assistant";
    item["status"] = status == "cancelled" ? "incomplete" : status;
    json::object part{{"type", "output_text"}, {"text", text}, {"annotations", json::array{}}};
    part["logprobs"] = nullptr;
    item["content"] = json::array{part};
    output.push_back(std::move(item));
  }
  response["output"] = std::move(output);
  response["parallel_tool_calls"] = req.parallel_tool_calls;
  if (req.previous_response_id.empty()) {
    response["previous_response_id"] = nullptr;
  } else {
    response["previous_response_id"] = req.previous_response_id;
  }
  response["reasoning"] = req.reasoning;
  response["store"] = req.store;
  response["temperature"] = req.temperature;
  response["text"] = json::object{{"format", json::object{{"type", "text"}}}};
  response["tool_choice"] = req.tool_choice;
  response["tools"] = req.tools;
  response["top_p"] = 1.0;
  response["truncation"] = "disabled";
  if (usage) {
    response["usage"] = json::object{
        {"input_tokens", usage->prompt_tokens},
        {"input_tokens_details", json::object{{"cached_tokens", usage->cached_tokens}}},
        {"output_tokens", usage->completion_tokens},
        {"output_tokens_details",
         json::object{{"reasoning_tokens", turn ? turn->reasoning_tokens : 0}}},
        {"total_tokens", usage->prompt_tokens + usage->completion_tokens}};
  } else {
    response["usage"] = nullptr;
  }
  response["user"] = nullptr;
  return response;
}

std::string responses_event(std::string_view type, boost::json::object data, std::int64_t seq) {
  json::object event;
  event["type"] = type;
  event["sequence_number"] = seq;
  for (auto& member : data) event[member.key()] = std::move(member.value());
  return fmt::format("event: {}\ndata: {}\n\n", type, json::serialize(event));
}

}  // namespace llmux::sim
