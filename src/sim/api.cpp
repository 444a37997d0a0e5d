// SPDX-License-Identifier: Apache-2.0
#include "sim/api.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/openai_error.hpp"
#include "core/tokenizer.hpp"
#include "sim/input_items.hpp"
#include "sim/turn.hpp"

namespace llmux::sim {
namespace json = boost::json;

namespace {

// Special tokens of the ChatML template (one token each, with ids no text piece can hash to
// by accident in practice).
constexpr std::uint32_t kImStart = 151644;
constexpr std::uint32_t kImEnd = 151645;

ApiError bad(std::string message, std::optional<std::string> param = std::nullopt) {
  return bad_request(std::move(message), std::move(param));
}
// Errors raised by the serving layer (vLLM's create_error_response: type "BadRequestError").
ApiError serving_error(std::string message) {
  return ApiError{400, std::move(message), "BadRequestError", std::nullopt};
}
std::string_view kind_name(const json::value& v) {
  return json_kind_name(v);
}

// Typed field readers: absent or null → nullopt; wrong type → ApiError.
struct Fields {
  const json::object& o;
  std::optional<ApiError> err;

  const json::value* get(std::string_view k) const {
    auto it = o.find(k);
    if (it == o.end() || it->value().is_null()) return nullptr;
    return &it->value();
  }
  void type_error(std::string_view k, std::string_view want, const json::value& v) {
    if (!err)
      err = bad(fmt::format("'{}' must be {}, got {}", k, want, kind_name(v)), std::string(k));
  }
  std::optional<bool> boolean(std::string_view k) {
    auto* v = get(k);
    if (!v) return std::nullopt;
    if (!v->is_bool()) {
      type_error(k, "a boolean", *v);
      return std::nullopt;
    }
    return v->get_bool();
  }
  std::optional<std::int64_t> integer(std::string_view k) {
    auto* v = get(k);
    if (!v) return std::nullopt;
    if (v->is_int64()) return v->get_int64();
    if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
      return static_cast<std::int64_t>(v->get_uint64());
    if (v->is_double() && std::floor(v->get_double()) == v->get_double() &&
        std::abs(v->get_double()) < 9e15)
      return static_cast<std::int64_t>(v->get_double());
    type_error(k, "an integer", *v);
    return std::nullopt;
  }
  std::optional<double> number(std::string_view k) {
    auto* v = get(k);
    if (!v) return std::nullopt;
    if (v->is_number()) return v->to_number<double>();
    type_error(k, "a number", *v);
    return std::nullopt;
  }
  std::optional<std::string_view> string(std::string_view k) {
    auto* v = get(k);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
      type_error(k, "a string", *v);
      return std::nullopt;
    }
    return std::string_view(v->get_string());
  }
};

}  // namespace

std::vector<std::uint32_t> render_chat(const std::vector<Message>& messages) {
  std::vector<std::uint32_t> ids;
  for (const auto& m : messages) {
    ids.push_back(kImStart);
    Tokenizer::encode(m.role, ids);
    Tokenizer::encode("\n", ids);
    Tokenizer::encode(m.content, ids);
    ids.push_back(kImEnd);
    Tokenizer::encode("\n", ids);
  }
  ids.push_back(kImStart);
  Tokenizer::encode("assistant", ids);
  Tokenizer::encode("\n", ids);
  return ids;
}

std::variant<GenRequest, ApiError> parse_request(Endpoint ep, std::string_view body,
                                                 const ApiContext& ctx) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec) return bad(fmt::format("JSON decode error: {}", ec.message()));
  if (!doc.is_object()) return bad("the request body must be a JSON object");
  const json::object& o = doc.get_object();
  Fields f{o, std::nullopt};
  GenRequest r;
  r.endpoint = ep;

  auto model = f.string("model");
  r.stream = f.boolean("stream").value_or(false);
  if (auto* so = f.get("stream_options")) {
    if (!so->is_object()) {
      f.type_error("stream_options", "an object", *so);
    } else {
      const auto& soo = so->get_object();
      auto iu = soo.find("include_usage");
      auto cu = soo.find("continuous_usage_stats");
      r.include_usage = iu == soo.end() || iu->value().is_null()
                            ? true
                            : (iu->value().is_bool() ? iu->value().get_bool() : true);
      r.continuous_usage = cu != soo.end() && cu->value().is_bool() && cu->value().get_bool();
      if (!r.stream && !f.err)
        f.err = bad("Stream options can only be defined when `stream=True`.", "stream_options");
    }
  }
  if (auto t = f.number("temperature")) {
    if (*t < 0 && !f.err)
      f.err = bad(fmt::format("temperature must be non-negative, got {}.", *t), "temperature");
    r.temperature = *t;
  }
  if (auto s = f.integer("seed")) r.seed = static_cast<std::uint64_t>(*s);
  r.ignore_eos = f.boolean("ignore_eos").value_or(false);
  if (auto n = f.integer("n"); n && *n != 1 && !f.err)
    f.err = serving_error(fmt::format("n={} is not supported by llmux sim (only n=1)", *n));

  const char* max_field = "max_tokens";
  std::optional<std::int64_t> max_tokens;
  switch (ep) {
    case Endpoint::Completions: {
      max_tokens = f.integer("max_tokens");
      const json::value* p = f.get("prompt");
      if (!p) {
        if (!f.err) f.err = bad("'prompt' is a required field", "prompt");
        break;
      }
      auto take_text = [&](std::string_view s) { Tokenizer::encode(s, r.prompt_ids); };
      auto take_ids = [&](const json::array& a) -> bool {
        for (const auto& x : a) {
          if (!x.is_int64() && !x.is_uint64()) return false;
          auto v = x.to_number<std::int64_t>();
          if (v < 0 || v > std::numeric_limits<std::uint32_t>::max()) return false;
          r.prompt_ids.push_back(static_cast<std::uint32_t>(v));
        }
        return true;
      };
      if (p->is_string()) {
        take_text(p->get_string());
      } else if (p->is_array()) {
        const auto& a = p->get_array();
        if (!a.empty() && (a[0].is_int64() || a[0].is_uint64())) {
          if (!take_ids(a) && !f.err)
            f.err = bad("'prompt' token ids must be non-negative 32-bit integers", "prompt");
        } else if (a.size() == 1 && a[0].is_string()) {
          take_text(a[0].get_string());
        } else if (a.size() == 1 && a[0].is_array()) {
          if (!take_ids(a[0].get_array()) && !f.err)
            f.err = bad("'prompt' token ids must be non-negative 32-bit integers", "prompt");
        } else if (a.size() > 1) {
          if (!f.err)
            f.err =
                bad("batched prompts are not supported by llmux sim; send one prompt per request",
                    "prompt");
        } else if (!f.err) {
          f.err = bad("'prompt' must be a string, a list of token ids, or a list of one of those",
                      "prompt");
        }
      } else {
        f.type_error("prompt", "a string or an array", *p);
      }
      if (!f.err && r.prompt_ids.empty()) f.err = bad("The prompt cannot be empty.", "prompt");
      break;
    }
    case Endpoint::Chat: {
      max_tokens = f.integer("max_completion_tokens");
      if (max_tokens) {
        max_field = "max_completion_tokens";
      } else {
        max_tokens = f.integer("max_tokens");
      }
      const json::value* msgs = f.get("messages");
      if (!msgs) {
        if (!f.err) f.err = bad("'messages' is a required field", "messages");
        break;
      }
      std::vector<Message> conv;
      if (auto e = parse_chat_messages(*msgs, conv); e && !f.err) f.err = e;
      if (!f.err && conv.empty())
        f.err = bad("'messages' must contain at least one message", "messages");
      std::string tools_text;
      if (auto e = parse_tools(ep, o, r, tools_text); e && !f.err) f.err = e;
      if (f.err) break;
      r.last_input = last_input_text(conv);
      add_tools_to_prompt(conv, tools_text);
      r.prompt_ids = render_chat(conv);
      break;
    }
    case Endpoint::Responses: {
      max_tokens = f.integer("max_output_tokens");
      max_field = "max_output_tokens";
      r.store = f.boolean("store").value_or(true);
      r.background = f.boolean("background").value_or(false);
      if (auto ins = f.string("instructions")) r.instructions = std::string(*ins);
      if (auto prev = f.string("previous_response_id")) r.previous_response_id = std::string(*prev);
      const json::value* in = f.get("input");
      if (!in) {
        if (!f.err) f.err = bad("'input' is a required field", "input");
        break;
      }
      std::vector<Message> input;
      if (in->is_string()) {
        input.push_back(Message{"user", std::string(in->get_string())});
      } else if (auto e = parse_response_input(*in, input); e && !f.err) {
        f.err = e;
      }
      std::string tools_text;
      if (auto e = parse_tools(ep, o, r, tools_text); e && !f.err) f.err = e;
      if (f.err) break;
      if (r.background && !r.store) {
        f.err = bad("background can only be used when `store` is true", "background");
        break;
      }
      if (!r.previous_response_id.empty()) {
        auto prev = ctx.lookup_conversation ? ctx.lookup_conversation(r.previous_response_id)
                                            : std::nullopt;
        if (!prev) {
          // vLLM checks the model first, then the stored response.
          if (model && *model != ctx.served_model_name) break;
          return ApiError{404,
                          fmt::format("Response with id '{}' not found.", r.previous_response_id),
                          "invalid_request_error", std::nullopt};
        }
        r.conversation = std::move(*prev);
      }
      for (auto& m : input) r.conversation.push_back(std::move(m));
      std::vector<Message> full;
      if (!r.instructions.empty()) full.push_back(Message{"system", r.instructions});
      full.insert(full.end(), r.conversation.begin(), r.conversation.end());
      r.last_input = last_input_text(full);
      add_tools_to_prompt(full, tools_text);
      r.prompt_ids = render_chat(full);
      if (!f.err && r.prompt_ids.empty()) f.err = bad("'input' cannot be empty", "input");
      break;
    }
  }
  if (max_tokens && *max_tokens < 1 && !f.err)
    f.err = bad(fmt::format("{} must be at least 1, got {}.", max_field, *max_tokens), max_field);
  if (f.err) return *f.err;
  if (model && *model != ctx.served_model_name) {
    return ApiError{404, fmt::format("The model `{}` does not exist.", *model), "NotFoundError",
                    std::string("model")};
  }
  r.model = ctx.served_model_name;
  r.max_tokens = max_tokens;
  return r;
}

std::variant<std::int64_t, ApiError> effective_max_tokens(const GenRequest& req,
                                                          std::int64_t max_model_len) {
  const auto p = static_cast<std::int64_t>(req.prompt_ids.size());
  // Chat appends the exception's cause (None) to the message: vLLM's own quirk.
  const std::string_view tail = req.endpoint == Endpoint::Chat ? " None" : "";
  if (p >= max_model_len) {
    if (req.endpoint == Endpoint::Responses) {
      return ApiError{400,
                      fmt::format("The engine prompt length {} exceeds the max_model_len {}. "
                                  "Please reduce prompt.",
                                  p, max_model_len),
                      "invalid_request_error", std::nullopt};
    }
    return serving_error(fmt::format(
        "This model's maximum context length is {} tokens. However, your request has {} input "
        "tokens. Please reduce the length of the input messages.{}",
        max_model_len, p, tail));
  }
  std::optional<std::int64_t> m = req.max_tokens;
  if (!m && req.endpoint == Endpoint::Completions) m = 16;  // vLLM's completions default
  if (!m) return max_model_len - p;
  if (p + *m > max_model_len) {
    // The Responses API clamps max_output_tokens instead of refusing.
    if (req.endpoint == Endpoint::Responses) return max_model_len - p;
    return serving_error(fmt::format(
        "'max_tokens' or 'max_completion_tokens' is too large: {}. This model's maximum context "
        "length is {} tokens and your request has {} input tokens ({} > {} - {}).{}",
        *m, max_model_len, p, *m, max_model_len, p, tail));
  }
  return *m;
}

std::string json_quote(std::string_view s) {
  return json::serialize(json::string_view(s));
}

std::string usage_json(const Usage& u, bool null_details) {
  std::string details;
  if (u.prompt_tokens_details && u.cached_tokens > 0)
    details = fmt::format(R"(,"prompt_tokens_details":{{"cached_tokens":{}}})", u.cached_tokens);
  else if (null_details)
    details = R"(,"prompt_tokens_details":null)";
  return fmt::format(R"({{"prompt_tokens":{},"total_tokens":{},"completion_tokens":{}{}}})",
                     u.prompt_tokens, u.prompt_tokens + u.completion_tokens, u.completion_tokens,
                     details);
}

namespace {
std::string finish_json(std::string_view fr) {
  return fr.empty() ? "null" : fmt::format("\"{}\"", fr);
}
// A chat chunk's continuous usage: vLLM writes chat chunks with exclude_unset (no details).
std::string usage_tail(const std::optional<Usage>& u) {
  return u ? fmt::format(",\"usage\":{}", usage_json(*u, false)) : std::string();
}
}  // namespace

std::string completion_body(const ResponseMeta& m, std::string_view text, const Usage& u) {
  return fmt::format(
      R"({{"id":"{}","object":"text_completion","created":{},"model":{},"choices":[{{"index":0,"text":{},"logprobs":null,"finish_reason":{},"stop_reason":null,"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null}}],"service_tier":null,"system_fingerprint":null,"usage":{},"kv_transfer_params":null}})",
      m.id, m.created, json_quote(m.model), json_quote(text), finish_json(m.finish_reason),
      usage_json(u));
}

std::string chat_body(const ResponseMeta& m, std::string_view text, const Usage& u) {
  return fmt::format(
      R"({{"id":"{}","object":"chat.completion","created":{},"model":{},"choices":[{{"index":0,"message":{{"role":"assistant","content":{},"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning_content":null}},"logprobs":null,"finish_reason":{},"stop_reason":null,"token_ids":null}}],"service_tier":null,"system_fingerprint":null,"usage":{},"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}})",
      m.id, m.created, json_quote(m.model), json_quote(text), finish_json(m.finish_reason),
      usage_json(u));
}

std::string chat_role_frame(const ResponseMeta& m, const std::optional<Usage>& continuous) {
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":{},\"model\":{},"
      "\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},"
      "\"logprobs\":null,\"finish_reason\":null}}],\"prompt_token_ids\":null{}}}\n\n",
      m.id, m.created, json_quote(m.model), usage_tail(continuous));
}

std::string completion_token_frame(const ResponseMeta& m, std::string_view text,
                                   std::string_view finish_reason,
                                   const std::optional<Usage>& continuous) {
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"text_completion\",\"created\":{},\"model\":{},"
      "\"choices\":[{{\"index\":0,\"text\":{},\"logprobs\":null,\"finish_reason\":{},"
      "\"stop_reason\":null,\"prompt_token_ids\":null,\"token_ids\":null}}],\"usage\":{}}}\n\n",
      m.id, m.created, json_quote(m.model), json_quote(text), finish_json(finish_reason),
      continuous ? usage_json(*continuous) : std::string("null"));
}

std::string chat_token_frame(const ResponseMeta& m, std::string_view text,
                             std::string_view finish_reason,
                             const std::optional<Usage>& continuous) {
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":{},\"model\":{},"
      "\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"logprobs\":null,"
      "\"finish_reason\":{}{},\"token_ids\":null}}]{}}}\n\n",
      m.id, m.created, json_quote(m.model), json_quote(text), finish_json(finish_reason),
      finish_reason.empty() ? "" : ",\"stop_reason\":null", usage_tail(continuous));
}

std::string usage_frame(const ResponseMeta& m, const Usage& u) {
  const char* object = m.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[],"
      "\"usage\":{}}}\n\n",
      m.id, object, m.created, json_quote(m.model), usage_json(u, false));
}

std::string done_frame() {
  return "data: [DONE]\n\n";
}

std::string stream_error_frame(int status, std::string_view message) {
  return "data: " + openai_error_json(status, message) + "\n\n";
}

boost::json::object response_object(const ResponseMeta& m, const GenRequest& req,
                                    std::string_view status, std::string_view text,
                                    const std::optional<Usage>& u, const TurnOutput* turn) {
  json::object r;
  r["id"] = m.id;
  r["object"] = "response";
  r["created_at"] = m.created;
  r["status"] = status;
  r["background"] = req.background;
  r["error"] = nullptr;
  if (status == "incomplete") {
    r["incomplete_details"] = json::object{{"reason", "max_output_tokens"}};
  } else {
    r["incomplete_details"] = nullptr;
  }
  if (req.instructions.empty()) {
    r["instructions"] = nullptr;
  } else {
    r["instructions"] = req.instructions;
  }
  if (req.max_tokens) {
    r["max_output_tokens"] = *req.max_tokens;
  } else {
    r["max_output_tokens"] = nullptr;
  }
  r["model"] = m.model;
  json::array output;
  if (turn && status != "queued" && status != "in_progress") {
    output = turn_output_items(*turn, m.item_id);
  } else if (status != "queued" && status != "in_progress") {
    json::object item;
    item["id"] = m.item_id;
    item["type"] = "message";
    item["role"] = "assistant";
    item["status"] = status == "cancelled" ? "incomplete" : status;
    json::object part{{"type", "output_text"}, {"text", text}, {"annotations", json::array{}}};
    part["logprobs"] = nullptr;
    item["content"] = json::array{part};
    output.push_back(std::move(item));
  }
  r["output"] = std::move(output);
  r["parallel_tool_calls"] = req.parallel_tool_calls;
  if (req.previous_response_id.empty()) {
    r["previous_response_id"] = nullptr;
  } else {
    r["previous_response_id"] = req.previous_response_id;
  }
  r["reasoning"] = req.reasoning;
  r["store"] = req.store;
  r["temperature"] = req.temperature;
  r["text"] = json::object{{"format", json::object{{"type", "text"}}}};
  r["tool_choice"] = req.tool_choice;
  r["tools"] = req.tools;
  r["top_p"] = 1.0;
  r["truncation"] = "disabled";
  if (u) {
    r["usage"] =
        json::object{{"input_tokens", u->prompt_tokens},
                     {"input_tokens_details", json::object{{"cached_tokens", u->cached_tokens}}},
                     {"output_tokens", u->completion_tokens},
                     {"output_tokens_details",
                      json::object{{"reasoning_tokens", turn ? turn->reasoning_tokens : 0}}},
                     {"total_tokens", u->prompt_tokens + u->completion_tokens}};
  } else {
    r["usage"] = nullptr;
  }
  r["user"] = nullptr;
  return r;
}

std::string responses_event(std::string_view type, boost::json::object data, std::int64_t seq) {
  json::object ev;
  ev["type"] = type;
  ev["sequence_number"] = seq;
  for (auto& kv : data) ev[kv.key()] = std::move(kv.value());
  return fmt::format("event: {}\ndata: {}\n\n", type, json::serialize(ev));
}

}  // namespace llmux::sim
