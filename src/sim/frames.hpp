// SPDX-License-Identifier: Apache-2.0
#pragma once
// The SSE bytes of a streaming Job, appended to `job.out` for its writer: the opening frames,
// one frame per token, and the closing frames (vLLM's shapes, from sim/api). No I/O.
#include <boost/json/object.hpp>

#include <string>

#include "sim/job.hpp"

namespace llmux::sim {

/// Before the first token: the Responses API's created / in_progress events. Nothing for
/// completions and chat: a chat stream's role chunk and a Responses message's output_item.added
/// and content_part.added come with the first token, as vLLM's do.
void append_opening_frames(Job& job);

/// The frame of output token `index` (`last`: it carries the finish reason); /v1/messages: its
/// events (sim/messages_frames). The first token's
/// frame is broken as `job.faults.malformed` says.
void append_token_frame(Job& job, int index, bool last);

/// After the last token, completions and chat: the usage chunk (when asked for) and `[DONE]`;
/// /v1/messages: the last block's stop, message_delta and message_stop (sim/messages_frames).
void append_done_frames(Job& job);

/// After the last token, Responses API: output_text.done, content_part.done, output_item.done
/// and response.completed with the final response object `resp`.
void append_responses_done_events(Job& job, const std::string& text,
                                  const boost::json::object& resp);

}  // namespace llmux::sim
