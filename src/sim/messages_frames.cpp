// SPDX-License-Identifier: Apache-2.0
#include "sim/messages_frames.hpp"

#include <boost/json.hpp>

#include <fmt/format.h>

#include "core/ids.hpp"
#include "sim/faults.hpp"

namespace llmux::sim {
namespace json = boost::json;

namespace {

/// The kind of content block a token belongs to.
enum class BlockKind { thinking, text, tool_use };

BlockKind block_kind(Seg seg) {
  switch (seg) {
    case Seg::Reasoning:
      return BlockKind::thinking;
    case Seg::Text:
      return BlockKind::text;
    case Seg::CallHeader:
    case Seg::CallArgs:
      return BlockKind::tool_use;
  }
  return BlockKind::text;
}

void messages_event(Job& job, std::string_view type, std::string_view data) {
  job.out += fmt::format("event: {}\ndata: {}\n\n", type, data);
}

/// A thinking block's signature: vLLM draws uuid4().hex and sends it as the block ends.
std::string thinking_signature() {
  return random_id("", 32);
}

/// Stops the open block (Job::turn_output_index; -1: none), with a thinking block's
/// signature_delta first (serving.py stop_active_block).
void stop_open_block(Job& job, BlockKind kind) {
  if (job.turn_output_index < 0) return;
  if (kind == BlockKind::thinking)
    messages_event(
        job, "content_block_delta",
        fmt::format(
            R"({{"type":"content_block_delta","delta":{{"type":"signature_delta","signature":"{}"}},"index":{}}})",
            thinking_signature(), job.turn_output_index));
  messages_event(
      job, "content_block_stop",
      fmt::format(R"({{"type":"content_block_stop","index":{}}})", job.turn_output_index));
}

void start_block(Job& job, std::string_view content_block) {
  ++job.turn_output_index;
  messages_event(job, "content_block_start",
                 fmt::format(R"({{"type":"content_block_start","content_block":{},"index":{}}})",
                             content_block, job.turn_output_index));
}

void block_delta(Job& job, std::string_view delta_type, std::string_view field,
                 std::string_view text) {
  messages_event(
      job, "content_block_delta",
      fmt::format(R"({{"type":"content_block_delta","delta":{{"type":"{}","{}":{}}},"index":{}}})",
                  delta_type, field, json_quote(text), job.turn_output_index));
}

/// The kind of the block open after `emitted` tokens.
BlockKind open_kind(const Job& job, std::size_t emitted) {
  if (!job.turn_plan || emitted == 0) return BlockKind::text;
  return block_kind(job.turn_plan->pieces[emitted - 1].seg);
}

}  // namespace

void append_messages_token_events(Job& job, int index) {
  const auto position = static_cast<std::size_t>(index);
  if (index == 0) {
    // vLLM turns the chat stream's first chunk (the role chunk, whose continuous usage counts the
    // prompt) into message_start, built with exclude_unset.
    messages_event(
        job, "message_start",
        fmt::format(
            R"({{"type":"message_start","message":{{"id":"{}","content":[],"model":{},"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":{},"output_tokens":0}}}}}})",
            job.meta.id, json_quote(job.meta.model), job.usage.prompt_tokens));
  }
  if (!job.turn_plan) {  // generated words: one text block
    if (index == 0) start_block(job, R"({"type":"text","text":""})");
    const std::size_t start = job.out.size();
    block_delta(job, "text_delta", "text", vocab_piece(job.words[position]));
    if (index == 0) malform_frame(job.out, start, job.faults.malformed);
    return;
  }
  const TurnPlan& turn_plan = *job.turn_plan;
  const TurnPiece& piece = turn_plan.pieces[position];
  if (position == 0 || !turn_plan.same_item(position - 1, position)) {
    if (position > 0) stop_open_block(job, open_kind(job, position));
    switch (block_kind(piece.seg)) {
      case BlockKind::thinking:
        start_block(job, R"({"type":"thinking","thinking":""})");
        break;
      case BlockKind::text:
        start_block(job, R"({"type":"text","text":""})");
        break;
      case BlockKind::tool_use: {
        const OutputCall& call = turn_plan.full.calls[static_cast<std::size_t>(piece.call)];
        start_block(job, fmt::format(R"({{"type":"tool_use","id":"{}","name":{},"input":{{}}}})",
                                     call.call_id, json_quote(call.name)));
        break;
      }
    }
  }
  const std::size_t start = job.out.size();
  switch (piece.seg) {
    case Seg::Reasoning:
      block_delta(job, "thinking_delta", "thinking", piece.text);
      break;
    case Seg::Text:
      block_delta(job, "text_delta", "text", piece.text);
      break;
    case Seg::CallHeader:
      break;  // the header names the call (content_block_start); its arguments follow
    case Seg::CallArgs:
      block_delta(job, "input_json_delta", "partial_json", piece.text);
      break;
  }
  if (index == 0) malform_frame(job.out, start, job.faults.malformed);
}

std::string_view messages_stop_reason(std::string_view finish_reason) {
  if (finish_reason == "stop") return "end_turn";
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason == "tool_calls") return "tool_use";
  return {};
}

void append_messages_done_events(Job& job) {
  const auto emitted = static_cast<std::size_t>(job.emitted);
  stop_open_block(job, open_kind(job, emitted));
  // The chat stream's last chunk carries the finish reason; vLLM maps it (a missing one reads
  // as "stop").
  std::string_view finish = job.meta.finish_reason;
  if (job.turn_plan) finish = chat_finish_reason(job.turn_plan->emitted(emitted), finish);
  const std::string_view stop_reason = messages_stop_reason(finish.empty() ? "stop" : finish);
  messages_event(
      job, "message_delta",
      fmt::format(
          R"({{"type":"message_delta","delta":{{"stop_reason":{}}},"usage":{{"input_tokens":{},"output_tokens":{}}}}})",
          stop_reason.empty() ? std::string("null") : json_quote(stop_reason),
          job.usage.prompt_tokens, job.usage.completion_tokens));
  messages_event(job, "message_stop", R"({"type":"message_stop"})");
}

std::variant<std::string, ApiError> messages_body(const ResponseMeta& meta, const TurnOutput& turn,
                                                  const Usage& usage) {
  json::array content;
  if (!turn.reasoning.empty())
    content.push_back(json::object{
        {"type", "thinking"}, {"thinking", turn.reasoning}, {"signature", thinking_signature()}});
  if (!turn.text.empty()) content.push_back(json::object{{"type", "text"}, {"text", turn.text}});
  for (const auto& call : turn.calls) {
    boost::system::error_code parse_error;
    json::value input = json::parse(call.arguments, parse_error);
    if (parse_error || !input.is_object()) {
      // serving.py messages_full_converter's json.loads raises; api_router answers 500.
      ApiError error{500,
                     fmt::format("tool call arguments are not a JSON object: {}",
                                 parse_error ? parse_error.message() : "not an object"),
                     "internal_error", std::nullopt};
      error.anthropic = true;
      return error;
    }
    content.push_back(json::object{
        {"type", "tool_use"}, {"id", call.call_id}, {"name", call.name}, {"input", input}});
  }
  const std::string_view stop_reason =
      messages_stop_reason(chat_finish_reason(turn, meta.finish_reason));
  return fmt::format(
      R"({{"id":"{}","type":"message","role":"assistant","content":{},"model":{}{},"usage":{{"input_tokens":{},"output_tokens":{}}}}})",
      meta.id, json::serialize(content), json_quote(meta.model),
      stop_reason.empty() ? std::string() : fmt::format(R"(,"stop_reason":"{}")", stop_reason),
      usage.prompt_tokens, usage.completion_tokens);
}

std::string anthropic_error_json(std::string_view type, std::string_view message) {
  return fmt::format(R"({{"type":"error","error":{{"type":{},"message":{}}}}})", json_quote(type),
                     json_quote(message));
}

}  // namespace llmux::sim
