// SPDX-License-Identifier: Apache-2.0
#include "sim/turn_frames.hpp"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace llmux::sim {
namespace {

namespace json = boost::json;

// Chat: one delta per token. vLLM's qwen3_coder parser sends a call's header
// ({index, id, type, function: {name, arguments: ""}}) and then argument pieces
// ({index, function: {arguments}}); the qwen3 reasoning parser puts thinking in `reasoning`.
void chat_token(Job& job, int index, bool last) {
  const TurnPlan& turn_plan = *job.turn_plan;
  const TurnPiece& piece = turn_plan.pieces[static_cast<std::size_t>(index)];
  std::string delta;
  switch (piece.seg) {
    case Seg::Reasoning:
      delta = fmt::format(R"({{"reasoning":{}}})", json_quote(piece.text));
      break;
    case Seg::Text:
      delta = fmt::format(R"({{"content":{}}})", json_quote(piece.text));
      break;
    case Seg::CallHeader: {
      const OutputCall& call = turn_plan.full.calls[static_cast<std::size_t>(piece.call)];
      delta = fmt::format(
          R"({{"tool_calls":[{{"id":"{}","type":"function","index":{},"function":{{"name":{},"arguments":""}}}}]}})",
          call.call_id, piece.call, json_quote(call.name));
      break;
    }
    case Seg::CallArgs:
      delta = fmt::format(R"({{"tool_calls":[{{"index":{},"function":{{"arguments":{}}}}}]}})",
                          piece.call, json_quote(piece.text));
      break;
  }
  std::string_view finish_reason;
  if (last)
    finish_reason = chat_finish_reason(turn_plan.emitted(static_cast<std::size_t>(index) + 1),
                                       job.meta.finish_reason);
  job.out += chat_delta_frame(job.meta, delta, finish_reason, continuous_usage(job));
}

void event(Job& job, std::string_view type, json::object data) {
  job.out += responses_event(type, std::move(data), job.seq_number++);
}

json::object reasoning_item(const std::string& id, const std::string* text) {
  json::object item{{"id", id}, {"summary", json::array{}}, {"type", "reasoning"}};
  if (text) {
    item["content"] = json::array{json::object{{"text", *text}, {"type", "reasoning_text"}}};
  } else {
    item["content"] = nullptr;
  }
  item["encrypted_content"] = nullptr;
  item["status"] = text ? "completed" : "in_progress";
  return item;
}

json::object call_item(const OutputCall& call, std::string_view status) {
  return json::object{{"arguments", call.arguments}, {"call_id", call.call_id}, {"name", call.name},
                      {"type", "function_call"},     {"id", call.item_id},      {"status", status}};
}

// Responses (vLLM's simple_streaming_events.py): output_item.added when an item starts, its
// deltas, and its done events when the next item starts or the turn ends.
void open_item(Job& job, const TurnPiece& piece) {
  const TurnPlan& turn_plan = *job.turn_plan;
  const int output_index = ++job.turn_output_index;
  switch (piece.seg) {
    case Seg::Reasoning:
      event(job, "response.output_item.added",
            {{"item", reasoning_item(turn_plan.full.reasoning_id, nullptr)},
             {"output_index", output_index}});
      event(job, "response.content_part.added",
            {{"content_index", 0},
             {"item_id", turn_plan.full.reasoning_id},
             {"output_index", output_index},
             {"part", json::object{{"text", ""}, {"type", "reasoning_text"}}}});
      break;
    case Seg::Text: {
      json::object item{{"id", job.meta.item_id},
                        {"content", json::array{}},
                        {"role", "assistant"},
                        {"status", "in_progress"},
                        {"type", "message"}};
      event(job, "response.output_item.added", {{"item", item}, {"output_index", output_index}});
      json::object part{{"annotations", json::array{}},
                        {"text", ""},
                        {"type", "output_text"},
                        {"logprobs", json::array{}}};
      event(job, "response.content_part.added",
            {{"content_index", 0},
             {"item_id", job.meta.item_id},
             {"output_index", output_index},
             {"part", part}});
      break;
    }
    case Seg::CallHeader:
    case Seg::CallArgs: {
      OutputCall call = turn_plan.full.calls[static_cast<std::size_t>(piece.call)];
      call.arguments.clear();
      event(job, "response.output_item.added",
            {{"item", call_item(call, "in_progress")}, {"output_index", output_index}});
      break;
    }
  }
}

void close_item(Job& job, std::size_t emitted, const TurnPiece& piece) {
  const TurnPlan& turn_plan = *job.turn_plan;
  const TurnOutput out = turn_plan.emitted(emitted);
  const int output_index = job.turn_output_index;
  switch (piece.seg) {
    case Seg::Reasoning: {
      const std::string& id = turn_plan.full.reasoning_id;
      event(job, "response.reasoning_text.done",
            {{"content_index", 0},
             {"item_id", id},
             {"output_index", output_index},
             {"text", out.reasoning}});
      event(job, "response.content_part.done",
            {{"content_index", 0},
             {"item_id", id},
             {"output_index", output_index},
             {"part", json::object{{"text", out.reasoning}, {"type", "reasoning_text"}}}});
      event(job, "response.output_item.done",
            {{"item", reasoning_item(id, &out.reasoning)}, {"output_index", output_index}});
      break;
    }
    case Seg::Text: {
      const std::string& id = job.meta.item_id;
      json::object part{
          {"annotations", json::array{}}, {"text", out.text}, {"type", "output_text"}};
      part["logprobs"] = nullptr;
      event(job, "response.output_text.done",
            {{"content_index", 0},
             {"item_id", id},
             {"logprobs", json::array{}},
             {"output_index", output_index},
             {"text", out.text}});
      event(
          job, "response.content_part.done",
          {{"content_index", 0}, {"item_id", id}, {"output_index", output_index}, {"part", part}});
      json::object item{{"id", id},
                        {"content", json::array{part}},
                        {"role", "assistant"},
                        {"status", "completed"},
                        {"type", "message"}};
      event(job, "response.output_item.done", {{"item", item}, {"output_index", output_index}});
      break;
    }
    case Seg::CallHeader:
    case Seg::CallArgs: {
      const OutputCall& call = out.calls.back();
      event(job, "response.function_call_arguments.done",
            {{"arguments", call.arguments},
             {"item_id", call.item_id},
             {"name", call.name},
             {"output_index", output_index}});
      event(job, "response.output_item.done",
            {{"item", call_item(call, "completed")}, {"output_index", output_index}});
      break;
    }
  }
}

void responses_token(Job& job, int index, bool last) {
  const TurnPlan& turn_plan = *job.turn_plan;
  const auto position = static_cast<std::size_t>(index);
  const TurnPiece& piece = turn_plan.pieces[position];
  if (position > 0 && !turn_plan.same_item(position - 1, position))
    close_item(job, position, turn_plan.pieces[position - 1]);
  if (position == 0 || !turn_plan.same_item(position - 1, position)) open_item(job, piece);
  const int output_index = job.turn_output_index;
  switch (piece.seg) {
    case Seg::Reasoning:
      event(job, "response.reasoning_text.delta",
            {{"content_index", 0},
             {"delta", piece.text},
             {"item_id", turn_plan.full.reasoning_id},
             {"output_index", output_index}});
      break;
    case Seg::Text:
      event(job, "response.output_text.delta",
            {{"content_index", 0},
             {"delta", piece.text},
             {"item_id", job.meta.item_id},
             {"logprobs", json::array{}},
             {"output_index", output_index}});
      break;
    case Seg::CallHeader:
      break;  // the header names the call (output_item.added); its arguments follow
    case Seg::CallArgs:
      event(job, "response.function_call_arguments.delta",
            {{"delta", piece.text},
             {"item_id", turn_plan.full.calls[static_cast<std::size_t>(piece.call)].item_id},
             {"output_index", output_index}});
      break;
  }
  if (last) close_item(job, position + 1, piece);
}

}  // namespace

std::string chat_delta_frame(const ResponseMeta& meta, std::string_view delta,
                             std::string_view finish_reason,
                             const std::optional<Usage>& continuous) {
  return fmt::format(
      "data: {{\"id\":\"{}\",\"object\":\"chat.completion.chunk\",\"created\":{},\"model\":{},"
      "\"choices\":[{{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":{}{},"
      "\"token_ids\":null}}]{}}}\n\n",
      meta.id, meta.created, json_quote(meta.model), delta,
      finish_reason.empty() ? std::string("null") : fmt::format("\"{}\"", finish_reason),
      finish_reason.empty() ? "" : ",\"stop_reason\":null",
      continuous ? fmt::format(",\"usage\":{}", usage_json(*continuous, false)) : std::string());
}

void append_turn_token_frame(Job& job, int index, bool last) {
  if (job.req.endpoint == Endpoint::Chat) {
    chat_token(job, index, last);
  } else if (job.req.endpoint == Endpoint::Responses) {
    responses_token(job, index, last);
  }
}

std::optional<Usage> continuous_usage(const Job& job) {
  if (!job.req.continuous_usage) return std::nullopt;
  Usage usage = job.usage;
  usage.prompt_tokens_details = false;
  return usage;
}

}  // namespace llmux::sim
