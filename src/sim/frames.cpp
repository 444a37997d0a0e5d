// SPDX-License-Identifier: Apache-2.0
#include "sim/frames.hpp"

#include <boost/json.hpp>

#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "sim/faults.hpp"
#include "sim/messages_frames.hpp"
#include "sim/turn_frames.hpp"

namespace llmux::sim {

namespace json = boost::json;

void append_opening_frames(Job& job) {
  // (A chat stream's role delta comes with its first token: append_token_frame.)
  if (job.req.endpoint == Endpoint::Responses) {
    json::object initial = response_object(job.meta, job.req, "in_progress", "", std::nullopt);
    job.out += responses_event("response.created", {{"response", initial}}, job.seq_number++);
    job.out += responses_event("response.in_progress", {{"response", initial}}, job.seq_number++);
  }
}

namespace {

/// A Responses message's output item and content part, opened with its first token as vLLM
/// does (serving_responses.py: the item is added when the first delta comes).
void append_message_opening(Job& job) {
  json::object item{{"id", job.meta.item_id},
                    {"content", json::array{}},
                    {"role", "assistant"},
                    {"status", "in_progress"},
                    {"type", "message"}};
  job.out += responses_event("response.output_item.added", {{"item", item}, {"output_index", 0}},
                             job.seq_number++);
  json::object part{{"annotations", json::array{}},
                    {"text", ""},
                    {"type", "output_text"},
                    {"logprobs", json::array{}}};
  job.out += responses_event(
      "response.content_part.added",
      {{"content_index", 0}, {"item_id", job.meta.item_id}, {"output_index", 0}, {"part", part}},
      job.seq_number++);
}

}  // namespace

void append_token_frame(Job& job, int index, bool last) {
  if (job.req.messages_api) return append_messages_token_events(job, index);
  if (index == 0 && job.req.endpoint == Endpoint::Responses && !job.turn_plan)
    append_message_opening(job);
  if (index == 0 && job.req.endpoint == Endpoint::Chat) {
    // vLLM sends a chat stream's role delta in its first iteration over the engine's outputs,
    // that is with the first token (serving_chat.py, chat_completion_stream_generator): a chat
    // stream's first body byte says that prefill is done. Its continuous usage counts no
    // completion token yet.
    std::optional<Usage> usage = continuous_usage(job);
    if (usage) usage->completion_tokens = 0;
    job.out += chat_role_frame(job.meta, usage);
  }
  const std::size_t start = job.out.size();
  if (job.turn_plan) {
    append_turn_token_frame(job, index, last);
    if (index == 0) malform_frame(job.out, start, job.faults.malformed);
    return;
  }
  const std::string_view piece = vocab_piece(job.words[index]);
  const std::string_view finish_reason = last ? job.meta.finish_reason : std::string_view();
  switch (job.req.endpoint) {
    case Endpoint::Completions:
      job.out += completion_token_frame(job.meta, piece, finish_reason, continuous_usage(job));
      break;
    case Endpoint::Chat:
      job.out += chat_token_frame(job.meta, piece, finish_reason, continuous_usage(job));
      break;
    case Endpoint::Responses:
      job.out += fmt::format(
          "event: response.output_text.delta\ndata: {{\"content_index\":0,\"delta\":{},"
          "\"item_id\":\"{}\",\"logprobs\":[],\"output_index\":0,\"sequence_number\":{},"
          "\"type\":\"response.output_text.delta\"}}\n\n",
          json_quote(piece), job.meta.item_id, job.seq_number++);
      break;
  }
  if (index == 0) malform_frame(job.out, start, job.faults.malformed);
}

void append_done_frames(Job& job) {
  if (job.req.messages_api) return append_messages_done_events(job);
  if (job.req.include_usage) job.out += usage_frame(job.meta, job.usage);
  job.out += done_frame();
}

void append_responses_done_events(Job& job, const std::string& text, const json::object& resp) {
  if (job.turn_plan) {  // the items were closed with the last token
    job.out += responses_event("response.completed", {{"response", resp}}, job.seq_number++);
    return;
  }
  if (job.emitted == 0) append_message_opening(job);  // no token opened the message
  json::object part{{"annotations", json::array{}}, {"text", text}, {"type", "output_text"}};
  part["logprobs"] = nullptr;
  job.out += responses_event("response.output_text.done",
                             {{"content_index", 0},
                              {"item_id", job.meta.item_id},
                              {"logprobs", json::array{}},
                              {"output_index", 0},
                              {"text", text}},
                             job.seq_number++);
  job.out += responses_event(
      "response.content_part.done",
      {{"content_index", 0}, {"item_id", job.meta.item_id}, {"output_index", 0}, {"part", part}},
      job.seq_number++);
  job.out += responses_event("response.output_item.done",
                             {{"item", resp.at("output").as_array().at(0)}, {"output_index", 0}},
                             job.seq_number++);
  job.out += responses_event("response.completed", {{"response", resp}}, job.seq_number++);
}

}  // namespace llmux::sim
