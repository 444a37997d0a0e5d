// SPDX-License-Identifier: Apache-2.0
#include "gateway/continuation.hpp"

#include <algorithm>

#include <boost/json.hpp>

namespace llmux::gateway {

namespace json = boost::json;

namespace {

/// What transformers searches for to cut a rendered chat after the final message (its content,
/// stripped); a content that also occurs in the end of turn that follows it (`<|im_end|>\n` in
/// Qwen's template) is cut in the wrong place.
bool cut_after_content_is_unambiguous(std::string_view content) {
  const auto first = content.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;  // nothing to cut after: no cut at all
  const auto last = content.find_last_not_of(" \t\r\n");
  const std::string_view stripped = content.substr(first, last - first + 1);
  return std::string_view("<|im_end|>\n").find(stripped) == std::string_view::npos;
}

/// `object[key]` as an integer, if it is one.
std::optional<std::int64_t> integer_field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  if (!value) return std::nullopt;
  if (value->is_int64()) return value->get_int64();
  if (value->is_uint64()) return static_cast<std::int64_t>(value->get_uint64());
  return std::nullopt;
}

/// Shrinks the output caps and floors by the tokens already generated.
void shrink_budget(json::object& body, std::uint64_t generated) {
  const auto done = static_cast<std::int64_t>(generated);
  for (std::string_view key : {"max_tokens", "max_completion_tokens"})
    if (auto cap = integer_field(body, key)) body[key] = std::max<std::int64_t>(*cap - done, 1);
  for (std::string_view key : {"min_tokens", "min_completion_tokens"}) {
    if (auto floor = integer_field(body, key)) {
      if (*floor - done > 0)
        body[key] = *floor - done;
      else
        body.erase(key);
    }
  }
}

/// The usage as the client sees it across legs, in place.
void rewrite_usage(json::object& usage, std::uint64_t carried) {
  const auto prompt = integer_field(usage, "prompt_tokens");
  const auto completion = integer_field(usage, "completion_tokens");
  if (!prompt || !completion) return;
  const auto moved = static_cast<std::int64_t>(carried);
  const std::int64_t client_prompt = std::max<std::int64_t>(*prompt - moved, 0);
  const std::int64_t client_completion = *completion + moved;
  usage["prompt_tokens"] = client_prompt;
  usage["completion_tokens"] = client_completion;
  if (usage.contains("total_tokens")) usage["total_tokens"] = client_prompt + client_completion;
}

}  // namespace

std::string_view to_string(CutReason reason) {
  switch (reason) {
    case CutReason::broken:
      return "broken";
    case CutReason::stalled:
      return "stalled";
    case CutReason::idle:
      return "idle";
    case CutReason::ejected:
      return "ejected";
  }
  return "broken";
}

StreamContinuation::StreamContinuation(openai::Dialect dialect, std::size_t max_kept_bytes)
    : dialect_(dialect) {
  generated_.limit = max_kept_bytes;
}

const char* StreamContinuation::why_not_continuable() const {
  if (dialect_ == openai::Dialect::responses && generated_.output_began)
    return "a Responses stream goes on elsewhere only before its output begins";
  if (generated_.tool_call) return "a tool call began";
  if (generated_.over_limit) return "more text than migration.max_kept_bytes";
  return nullptr;
}

void StreamContinuation::learn_identity() {
  // Once, from the first event the client had (none yet: the next leg's first is the stream's).
  if (identity_known_ || generated_.first_event.empty()) return;
  identity_known_ = true;
  boost::system::error_code error;
  json::value first = json::parse(generated_.first_event, error);
  if (error || !first.is_object()) return;
  const json::object& chunk = first.get_object();
  if (dialect_ == openai::Dialect::responses) {
    // `response.created`: the response object holds the identity.
    const json::value* response = chunk.if_contains("response");
    if (!response || !response->is_object()) return;
    if (const auto* value = response->get_object().if_contains("id")) id_ = *value;
    if (const auto* value = response->get_object().if_contains("created_at")) created_ = *value;
    return;
  }
  if (const auto* value = chunk.if_contains("id")) id_ = *value;
  if (const auto* value = chunk.if_contains("created")) created_ = *value;
  if (const auto* value = chunk.if_contains("model")) model_ = *value;
  if (const auto* value = chunk.if_contains("system_fingerprint")) system_fingerprint_ = *value;
}

void StreamContinuation::cut(std::uint64_t leg_tokens, CutReason reason) {
  learn_identity();
  last_cut_reason_ = reason;
  ++cuts_;
  ++earlier_legs_;
  earlier_carried_ += carried_;
  earlier_completion_ += leg_tokens;
  const std::uint64_t sent = carried_ + leg_tokens;  // what the client has now
  if (dialect_ == openai::Dialect::responses) {
    // Before the output: the request again. What the client had came from the first leg (a
    // later leg cut before its output gave it nothing).
    way_ = ContinuationWay::replay;
    if (cuts_ == 1) {
      client_sequence_ = generated_.last_sequence_number;
      client_events_ = client_sequence_ + 1;
    }
    return;
  }
  const bool content_to_continue = dialect_ == openai::Dialect::completions
                                       ? !generated_.content.empty()
                                       : cut_after_content_is_unambiguous(generated_.content);
  if (content_to_continue) {
    way_ = ContinuationWay::continue_output;
    carried_ = sent;
    replay_reasoning_.clear();
    replay_content_.clear();
  } else {
    // The new leg says it all again: what the client has is cut from its events, and kept anew
    // from them.
    way_ = ContinuationWay::replay;
    carried_ = 0;
    replay_reasoning_ = std::move(generated_.reasoning);
    replay_content_ = std::move(generated_.content);
    generated_.reasoning.clear();
    generated_.content.clear();
  }
}

std::optional<std::string> StreamContinuation::next_leg_body(std::string_view client_body) const {
  boost::system::error_code error;
  json::value parsed = json::parse(client_body, error);
  if (error || !parsed.is_object()) return std::nullopt;
  json::object& body = parsed.get_object();
  if (dialect_ == openai::Dialect::responses) return std::string(client_body);  // a replay
  body["stream"] = true;
  json::value& options = body["stream_options"];
  if (!options.is_object()) options = json::object{};
  options.get_object()["include_usage"] = true;
  if (way_ == ContinuationWay::continue_output) {
    shrink_budget(body, carried_);
    if (dialect_ == openai::Dialect::completions) {
      json::value* prompt = body.if_contains("prompt");
      if (!prompt || !prompt->is_string()) return std::nullopt;
      prompt->get_string().append(generated_.content);
    } else {
      json::value* messages = body.if_contains("messages");
      if (!messages || !messages->is_array()) return std::nullopt;
      json::object answer{{"role", "assistant"}, {"content", generated_.content}};
      if (!generated_.reasoning.empty()) {
        // vLLM reads `reasoning` (and renames the older `reasoning_content` to it); older
        // versions and Qwen3's template read `reasoning_content`.
        answer["reasoning"] = generated_.reasoning;
        answer["reasoning_content"] = generated_.reasoning;
      }
      messages->get_array().push_back(std::move(answer));
      body["continue_final_message"] = true;
      body["add_generation_prompt"] = false;
    }
  }
  return json::serialize(parsed);
}

LegTokens StreamContinuation::client_view(LegTokens leg) const {
  return LegTokens{leg.prompt > carried_ ? leg.prompt - carried_ : 0, leg.completion + carried_};
}

LegTokens StreamContinuation::computed(LegTokens leg) const {
  // Every leg's prompt was the first one's and the tokens it carried.
  const std::uint64_t first_prompt = client_view(leg).prompt;
  return LegTokens{leg.prompt + earlier_legs_ * first_prompt + earlier_carried_,
                   leg.completion + earlier_completion_};
}

bool StreamContinuation::trim_replayed(json::object& holder, std::string_view key,
                                       std::string& pending) {
  json::value* value = holder.if_contains(key);
  if (!value || !value->is_string() || pending.empty()) return true;
  const std::string_view piece = value->get_string();
  if (std::string_view(pending).starts_with(piece)) {
    pending.erase(0, piece.size());
    holder.erase(key);
    return true;
  }
  if (piece.starts_with(pending)) {
    *value = piece.substr(pending.size());
    pending.clear();
    return true;
  }
  return false;
}

StreamContinuation::EventFate StreamContinuation::rewrite_chunk(json::object& chunk) {
  if (identity_known_) {
    if (chunk.contains("id") && !id_.is_null()) chunk["id"] = id_;
    if (chunk.contains("created") && !created_.is_null()) chunk["created"] = created_;
    if (chunk.contains("model") && !model_.is_null()) chunk["model"] = model_;
    if (chunk.contains("system_fingerprint")) chunk["system_fingerprint"] = system_fingerprint_;
  }
  bool carries_something = false;
  json::value* choices = chunk.if_contains("choices");
  if (choices && choices->is_array()) {
    for (json::value& choice_value : choices->get_array()) {
      if (!choice_value.is_object()) continue;
      json::object& choice = choice_value.get_object();
      if (dialect_ == openai::Dialect::completions) {
        if (!trim_replayed(choice, "text", replay_content_)) return EventFate::diverged;
        if (const auto* text = choice.if_contains("text");
            text && text->is_string() && !text->get_string().empty())
          carries_something = true;
        if (!choice.contains("text")) choice["text"] = "";
      } else if (json::value* delta_value = choice.if_contains("delta");
                 delta_value && delta_value->is_object()) {
        json::object& delta = delta_value->get_object();
        if (identity_known_) delta.erase("role");  // the client had it at the stream's start
        if (!trim_replayed(delta, "reasoning", replay_reasoning_) ||
            !trim_replayed(delta, "reasoning_content", replay_reasoning_))
          return EventFate::diverged;
        if (!replay_reasoning_.empty()) {
          // Nothing else may come before the replayed reasoning is all said again.
          if ((delta.contains("content") && delta.at("content").is_string() &&
               !delta.at("content").get_string().empty()) ||
              delta.contains("tool_calls"))
            return EventFate::diverged;
        }
        if (!trim_replayed(delta, "content", replay_content_)) return EventFate::diverged;
        if (!replay_content_.empty() && delta.contains("tool_calls")) return EventFate::diverged;
        for (const auto& field : delta) {
          const bool empty_text = field.value().is_string() && field.value().get_string().empty();
          if (!field.value().is_null() && !empty_text) carries_something = true;
        }
      }
      if (const auto* finish = choice.if_contains("finish_reason"); finish && !finish->is_null())
        carries_something = true;
    }
    if (choices->get_array().empty()) carries_something = true;  // a usage chunk
  } else {
    carries_something = true;  // not a chunk of choices: passed on as it is
  }
  if (json::value* usage = chunk.if_contains("usage"); usage && usage->is_object()) {
    rewrite_usage(usage->get_object(), carried_);
    carries_something = true;
  }
  return carries_something ? EventFate::keep : EventFate::drop;
}

StreamContinuation::EventFate StreamContinuation::rewrite_responses_event(json::object& event) {
  const json::value* type_value = event.if_contains("type");
  const std::string_view type =
      type_value && type_value->is_string() ? std::string_view(type_value->get_string()) : "";
  // The opening events the client has had from the first leg.
  if ((type == "response.created" && client_events_ >= 1) ||
      (type == "response.in_progress" && client_events_ >= 2))
    return EventFate::drop;
  if (json::value* response = event.if_contains("response");
      response && response->is_object() && identity_known_) {
    json::object& object = response->get_object();
    if (!id_.is_null()) object["id"] = id_;
    if (!created_.is_null() && object.contains("created_at")) object["created_at"] = created_;
  }
  if (event.contains("sequence_number")) event["sequence_number"] = ++client_sequence_;
  return EventFate::keep;
}

bool StreamContinuation::rewrite_events(std::string_view events) {
  std::string& out = rewritten_;
  out.clear();
  while (!events.empty()) {
    // One event: up to its blank line ("\n\n", or "\r\n\r\n" line ends).
    std::size_t end = events.find("\n\n");
    std::size_t crlf_end = events.find("\n\r\n");
    std::size_t length;
    if (crlf_end != std::string_view::npos && (end == std::string_view::npos || crlf_end < end))
      length = crlf_end + 3;
    else
      length = end == std::string_view::npos ? events.size() : end + 2;
    const std::string_view event = events.substr(0, length);
    events.remove_prefix(length);
    // Its data lines, joined.
    std::string data;
    bool has_data = false;
    std::size_t line_start = 0;
    while (line_start < event.size()) {
      std::size_t line_end = event.find('\n', line_start);
      if (line_end == std::string_view::npos) line_end = event.size();
      std::string_view line = event.substr(line_start, line_end - line_start);
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (line.starts_with("data:")) {
        line.remove_prefix(5);
        if (line.starts_with(' ')) line.remove_prefix(1);
        if (has_data) data += '\n';
        data.append(line);
        has_data = true;
      }
      line_start = line_end + 1;
    }
    boost::system::error_code error;
    json::value chunk = has_data && data != "[DONE]" ? json::parse(data, error) : json::value();
    if (!has_data || data == "[DONE]" || error || !chunk.is_object()) {
      out.append(event);
      continue;
    }
    const bool responses = dialect_ == openai::Dialect::responses;
    switch (responses ? rewrite_responses_event(chunk.get_object())
                      : rewrite_chunk(chunk.get_object())) {
      case EventFate::keep:
        if (const json::value* type = chunk.get_object().if_contains("type");
            responses && type && type->is_string())
          out.append("event: ").append(type->get_string()).append("\n");
        out.append("data: ").append(json::serialize(chunk)).append("\n\n");
        break;
      case EventFate::drop:
        break;
      case EventFate::diverged:
        return false;
    }
  }
  return true;
}

}  // namespace llmux::gateway
